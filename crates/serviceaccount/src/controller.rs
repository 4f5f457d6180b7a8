//! Wiring (the Namespace and ServiceAccount informers and their handlers, the work queue of
//! namespace names, the worker) and the steps of a sync: decide on the caches, create what is
//! missing (upstream `ServiceAccountsController.syncNamespace`).

use std::{sync::Arc, time::Duration};

use controller::{
    Build, Comparison, Context, ControlError, Controller, Decided, Steps, Wiring, shadow::ShadowState, writes,
};
use informer::{DeletedObject, EventHandler, InformerOptions, Lister, ObjectKey, WorkQueue};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::{Client, api::ObjectMeta};

use crate::{ensure::missing, error::SyncError};

/// KCM's name for the controller (`names.ServiceAccountController`).
pub const COMPONENT: &str = "serviceaccount-controller";
/// Its client's name and bootstrap role (`system:controller:service-account-controller`).
pub const ROLE: &str = "service-account-controller";
/// The work queue's name (upstream: `serviceaccount`).
pub const QUEUE_NAME: &str = "serviceaccount";
/// KCM runs it with one worker, and no flag changes that (`newServiceAccountController`).
pub const WORKERS: usize = 1;

/// The ServiceAccount controller.
pub struct ServiceAccountController {
    wiring: Wiring,
    namespaces: Lister<Namespace>,
    accounts: Lister<ServiceAccount>,
    client: Client,
    /// Set in shadow mode: an account kcm-rs would create is reported instead.
    shadow: Option<Arc<ShadowState>>,
}

impl std::fmt::Debug for ServiceAccountController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountController").finish_non_exhaustive()
    }
}

impl Build for ServiceAccountController {
    type Options = ();
    type Shadow = Self;

    fn build(cx: Context<'_>, (): ()) -> Self {
        Self::with_shadow(cx, None)
    }

    /// An account missing until upstream's controller creates it is a disagreement; nothing is
    /// created.
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, (): ()) -> Self {
        Self::with_shadow(cx, Some(state))
    }
}

impl ServiceAccountController {
    fn with_shadow(cx: Context<'_>, shadow: Option<Arc<ShadowState>>) -> Self {
        let namespaces = cx.factory.cluster::<Namespace>(InformerOptions::default());
        let accounts = cx.informer::<ServiceAccount>();
        let (queue, wiring) = cx.wiring(QUEUE_NAME);
        // Upstream registers both handlers without a resync period.
        let mut wiring = wiring.with_resync(None);
        wiring.watch(&namespaces, NamespaceHandler(queue.clone()));
        wiring.watch(
            &accounts,
            AccountHandler {
                queue,
                // Shadow mode looks again once an account appears, so that what it reported
                // missing is cleared when upstream creates it.
                on_add: shadow.is_some(),
            },
        );
        Self {
            wiring,
            namespaces: namespaces.lister(),
            accounts: accounts.lister(),
            client: cx.client,
            shadow,
        }
    }
}

impl Steps for ServiceAccountController {
    const NAME: &'static str = COMPONENT;
    type Object = Namespace;
    /// The namespace and the accounts to create in it.
    type Plan = (Arc<Namespace>, Vec<&'static str>);
    type Error = SyncError;

    fn get(&self, key: &ObjectKey) -> Option<Arc<Namespace>> {
        self.namespaces.get(None, key.name())
    }

    fn shadow(&self) -> Option<&ShadowState> {
        self.shadow.as_deref()
    }

    fn client(&self) -> &Client {
        &self.client
    }

    fn decide(&self, key: &ObjectKey, ns: Arc<Namespace>) -> Result<Decided<Self::Plan>, SyncError> {
        let create = missing(&ns, |name| self.accounts.get(Some(key.name()), name).is_some());
        if create.is_empty() && self.shadow.is_none() {
            return Ok(Decided::Nothing(None));
        }
        Ok(Decided::Plan((ns, create)))
    }

    fn compare(&self, _: &ObjectKey, (ns, create): Self::Plan) -> Comparison {
        Comparison {
            fingerprint: controller::shadow::fingerprint::<Namespace, Namespace>(&ns, &[]),
            differences: create
                .iter()
                .map(|name| format!("serviceaccount: kcm-rs would create ServiceAccount {name}"))
                .collect(),
            again: None,
        }
    }

    async fn execute(&self, key: &ObjectKey, (_, create): Self::Plan) -> Result<Option<Duration>, SyncError> {
        create_missing(&self.client, key.name(), &create)
            .await
            .map(|()| None)
    }
}

/// Creates each account of `names` in `namespace`, with its name alone, as upstream copies its
/// template; one that appeared meanwhile, or a namespace that began terminating, is not an error
/// (upstream ignores AlreadyExists and the NamespaceTerminating cause). The others are, together.
pub async fn create_missing(client: &Client, namespace: &str, names: &[&str]) -> Result<(), SyncError> {
    let mut errors = Vec::new();
    for name in names {
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some((*name).to_owned()),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        if let Err(e) = writes::create(client, namespace, &account).await {
            let e = ControlError::api("create serviceaccount", format!("{namespace}/{name}"), e);
            if !e.is_already_exists() && !e.is_namespace_terminating() {
                errors.push(e);
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SyncError::Create {
            namespace: namespace.to_owned(),
            errors,
        })
    }
}

/// Enqueues a namespace on every add and update (upstream `namespaceAdded`, `namespaceUpdated`).
#[derive(Debug, Clone)]
struct NamespaceHandler(WorkQueue<ObjectKey>);

impl EventHandler<Namespace> for NamespaceHandler {
    fn on_add(&self, ns: &Arc<Namespace>, _: bool) {
        self.0.add(ObjectKey::of(&**ns));
    }

    fn on_update(&self, _: &Arc<Namespace>, ns: &Arc<Namespace>) {
        self.0.add(ObjectKey::of(&**ns));
    }

    fn on_delete(&self, _: &DeletedObject<Namespace>) {}
}

/// Enqueues the namespace of a deleted account (upstream `serviceAccountDeleted`), and in shadow
/// mode of an added one.
#[derive(Debug, Clone)]
struct AccountHandler {
    queue: WorkQueue<ObjectKey>,
    on_add: bool,
}

impl AccountHandler {
    fn enqueue(&self, account: &ServiceAccount) {
        if let Some(ns) = account.metadata.namespace.as_deref() {
            self.queue.add(ObjectKey::new(None, ns));
        }
    }
}

impl EventHandler<ServiceAccount> for AccountHandler {
    fn on_add(&self, account: &Arc<ServiceAccount>, _: bool) {
        if self.on_add {
            self.enqueue(account);
        }
    }

    fn on_update(&self, _: &Arc<ServiceAccount>, _: &Arc<ServiceAccount>) {}

    fn on_delete(&self, deleted: &DeletedObject<ServiceAccount>) {
        self.enqueue(deleted.object());
    }
}

impl Controller for ServiceAccountController {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;

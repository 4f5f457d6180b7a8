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
        let namespaces = cx.factory.cluster::<Namespace>(InformerOptions::default());
        let accounts = cx.informer::<ServiceAccount>();
        let (queue, mut wiring) = cx.wiring(QUEUE_NAME);
        wiring.watch(&namespaces, NamespaceHandler(queue.clone()));
        wiring.watch(&accounts, AccountHandler(queue));
        Self {
            wiring,
            namespaces: namespaces.lister(),
            accounts: accounts.lister(),
            client: cx.client,
            shadow: None,
        }
    }

    /// An account missing until upstream's controller creates it is a disagreement; nothing is
    /// created.
    fn shadow(cx: Context<'_>, state: Arc<ShadowState>, (): ()) -> Self {
        let mut c = Self::build(cx, ());
        c.shadow = Some(state);
        c
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

    /// Creates each missing account; one that appeared meanwhile, or a namespace that began
    /// terminating, is not an error (upstream ignores AlreadyExists and the NamespaceTerminating
    /// cause).
    async fn execute(&self, key: &ObjectKey, (_, create): Self::Plan) -> Result<Option<Duration>, SyncError> {
        let namespace = key.name();
        let mut errors = Vec::new();
        for name in create {
            let account = ServiceAccount {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    namespace: Some(namespace.to_owned()),
                    ..ObjectMeta::default()
                },
                ..ServiceAccount::default()
            };
            if let Err(e) = writes::create(&self.client, namespace, &account).await {
                let e = ControlError::api("create serviceaccount", format!("{namespace}/{name}"), e);
                if !e.is_already_exists() && !e.is_namespace_terminating() {
                    errors.push(e);
                }
            }
        }
        if errors.is_empty() {
            Ok(None)
        } else {
            Err(SyncError::Create {
                namespace: namespace.to_owned(),
                errors,
            })
        }
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

/// Enqueues the namespace of a deleted account (upstream `serviceAccountDeleted`).
#[derive(Debug, Clone)]
struct AccountHandler(WorkQueue<ObjectKey>);

impl EventHandler<ServiceAccount> for AccountHandler {
    fn on_add(&self, _: &Arc<ServiceAccount>, _: bool) {}

    fn on_update(&self, _: &Arc<ServiceAccount>, _: &Arc<ServiceAccount>) {}

    fn on_delete(&self, deleted: &DeletedObject<ServiceAccount>) {
        if let Some(ns) = deleted.object().metadata.namespace.as_deref() {
            self.0.add(ObjectKey::new(None, ns));
        }
    }
}

impl Controller for ServiceAccountController {
    const NAME: &'static str = COMPONENT;

    fn wiring(&self) -> &Wiring {
        &self.wiring
    }
}

//! Creating and deleting pods for a controller, with the events upstream's `RealPodControl` records.

use std::future::Future;

use k8s_openapi::{
    api::core::v1::{ObjectReference, Pod, PodTemplateSpec},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Client,
    api::{DeleteParams, Patch, PatchParams},
};

use crate::{
    CompactPod,
    errors::{ControlError, message_of},
    events::{EventRecorder, TYPE_NORMAL, TYPE_WARNING},
    ref_manager::Owner,
    writes::{self, Written},
};

pub const REASON_SUCCESSFUL_CREATE: &str = "SuccessfulCreate";
pub const REASON_FAILED_CREATE: &str = "FailedCreate";
pub const REASON_SUCCESSFUL_DELETE: &str = "SuccessfulDelete";
pub const REASON_FAILED_DELETE: &str = "FailedDelete";

/// Pod writes a controller makes. Implemented against the API server by [`KubePodControl`] and by
/// fakes in tests.
pub trait PodControl: Send + Sync + 'static {
    /// Creates a pod from `template`, controlled by `owner`; returns its name and resourceVersion.
    fn create_pod(
        &self,
        owner: &Owner,
        template: &PodTemplateSpec,
    ) -> impl Future<Output = Result<Written, ControlError>> + Send;
    /// Creates a pod from `template` named `<generate_name><random>` (the Job controller's indexed
    /// pods). The default ignores the name, for fakes that do not care.
    fn create_pod_with_generate_name(
        &self,
        owner: &Owner,
        template: &PodTemplateSpec,
        generate_name: &str,
    ) -> impl Future<Output = Result<Written, ControlError>> + Send {
        let _ = generate_name;
        self.create_pod(owner, template)
    }
    /// Deletes the pod named as `pod` is, with no UID precondition: upstream's `DeletePod` sends
    /// empty DeleteOptions, so a pod recreated under the same name is deleted, not a FailedDelete.
    fn delete_pod(
        &self,
        owner: &Owner,
        pod: &CompactPod,
    ) -> impl Future<Output = Result<(), ControlError>> + Send;
    /// Applies a strategic-merge patch to a pod (adoption, release).
    fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> impl Future<Output = Result<(), ControlError>> + Send;
    /// [`Self::patch_pod`], returning the patched pod's resourceVersion where the implementation
    /// has it. Upstream's `PatchPod` hands the pod to `OnWrite`, so that the ReplicaSet's next sync
    /// waits until its cache shows the adoption. The default (fakes that do not care) returns none.
    fn patch_pod_returning(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> impl Future<Output = Result<Option<Written>, ControlError>> + Send {
        async move { self.patch_pod(namespace, name, patch).await.map(|()| None) }
    }
}

/// The pod an owner creates from its template (upstream `GetPodFromTemplate`): the template's labels,
/// annotations, finalizers and spec, `generateName` from the owner's name, and the controller reference.
pub fn pod_from_template(owner: &Owner, template: &PodTemplateSpec) -> Result<Pod, ControlError> {
    let meta = template.metadata.clone().unwrap_or_default();
    if meta.labels.as_ref().is_none_or(|l| l.is_empty()) {
        return Err(ControlError::NoLabels { owner: owner.key() });
    }
    Ok(Pod {
        metadata: ObjectMeta {
            generate_name: Some(generate_name_prefix(&owner.name)),
            namespace: Some(owner.namespace.clone()),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![owner.controller_ref()]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    })
}

/// `<owner>-`, or the owner's name alone if the dash would make an invalid prefix (upstream
/// `getPodsPrefix`): the API server appends 5 random characters.
fn generate_name_prefix(owner: &str) -> String {
    let prefix = format!("{owner}-");
    if prefix.len() <= 253 - 5 {
        prefix
    } else {
        owner.to_owned()
    }
}

/// A reference to the owner for events, with the version the sync read (client-go's
/// `GetReference`, which upstream's recorders call on the object they were handed).
pub fn object_reference(owner: &Owner) -> ObjectReference {
    ObjectReference {
        api_version: Some(owner.api_version.clone()),
        kind: Some(owner.kind.clone()),
        namespace: Some(owner.namespace.clone()),
        name: Some(owner.name.clone()),
        uid: Some(owner.uid.clone()),
        resource_version: Some(owner.resource_version.clone()).filter(|v| !v.is_empty()),
        ..ObjectReference::default()
    }
}

/// [`PodControl`] against the API server.
#[derive(Clone)]
pub struct KubePodControl {
    client: Client,
    recorder: EventRecorder,
}

impl std::fmt::Debug for KubePodControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubePodControl").finish_non_exhaustive()
    }
}

impl KubePodControl {
    pub fn new(client: Client, recorder: EventRecorder) -> Self {
        Self { client, recorder }
    }
}

impl KubePodControl {
    /// Creates `pod` and records the event upstream's `RealPodControl` records.
    async fn create(&self, owner: &Owner, pod: Pod) -> Result<Written, ControlError> {
        match writes::create(&self.client, &owner.namespace, &pod).await {
            Ok(created) => {
                let name = created.metadata.name.clone().unwrap_or_default();
                self.recorder.record(
                    &object_reference(owner),
                    TYPE_NORMAL,
                    REASON_SUCCESSFUL_CREATE,
                    format!("Created pod: {name}"),
                );
                Ok(created)
            }
            Err(e) => {
                let err = ControlError::api("create pod", owner.key(), e);
                if !err.is_namespace_terminating() {
                    self.recorder.record(
                        &object_reference(owner),
                        TYPE_WARNING,
                        REASON_FAILED_CREATE,
                        format!("Error creating: {err}"),
                    );
                }
                Err(err)
            }
        }
    }
}

impl PodControl for KubePodControl {
    async fn create_pod(&self, owner: &Owner, template: &PodTemplateSpec) -> Result<Written, ControlError> {
        let pod = pod_from_template(owner, template)?;
        self.create(owner, pod).await
    }

    async fn create_pod_with_generate_name(
        &self,
        owner: &Owner,
        template: &PodTemplateSpec,
        generate_name: &str,
    ) -> Result<Written, ControlError> {
        let mut pod = pod_from_template(owner, template)?;
        pod.metadata.generate_name = Some(generate_name.to_owned());
        self.create(owner, pod).await
    }
    async fn delete_pod(&self, owner: &Owner, pod: &CompactPod) -> Result<(), ControlError> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        match writes::delete::<Pod>(&self.client, &owner.namespace, &name, &DeleteParams::default()).await {
            Ok(()) => {
                self.recorder.record(
                    &object_reference(owner),
                    TYPE_NORMAL,
                    REASON_SUCCESSFUL_DELETE,
                    format!("Deleted pod: {name}"),
                );
                Ok(())
            }
            Err(e) => {
                // The event shows the server's message; the error returned wraps it as upstream's.
                let server_message = message_of(&e);
                let err = ControlError::delete_pod(format!("{}/{name}", owner.namespace), e);
                if !err.is_not_found() {
                    self.recorder.record(
                        &object_reference(owner),
                        TYPE_WARNING,
                        REASON_FAILED_DELETE,
                        format!("Error deleting: {server_message}"),
                    );
                }
                Err(err)
            }
        }
    }

    async fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), ControlError> {
        self.patch_pod_returning(namespace, name, patch).await.map(|_| ())
    }

    async fn patch_pod_returning(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<Option<Written>, ControlError> {
        writes::patch::<Pod, _>(
            &self.client,
            namespace,
            name,
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
        .map(Some)
        .map_err(|e| ControlError::api("patch pod", format!("{namespace}/{name}"), e))
    }
}

/// A [`PodControl`] for read-only controllers (shadow mode): every call fails without touching the
/// API server.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoWrites;

impl PodControl for NoWrites {
    async fn create_pod(&self, owner: &Owner, _: &PodTemplateSpec) -> Result<Written, ControlError> {
        Err(ControlError::Refused {
            what: format!("creating a pod for {}", owner.key()),
            message: "read-only".into(),
        })
    }
    async fn delete_pod(&self, owner: &Owner, _: &CompactPod) -> Result<(), ControlError> {
        Err(ControlError::Refused {
            what: format!("deleting a pod of {}", owner.key()),
            message: "read-only".into(),
        })
    }
    async fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        _: &serde_json::Value,
    ) -> Result<(), ControlError> {
        Err(ControlError::Refused {
            what: format!("patching pod {namespace}/{name}"),
            message: "read-only".into(),
        })
    }
}

#[cfg(test)]
#[path = "pod_control_tests.rs"]
mod tests;

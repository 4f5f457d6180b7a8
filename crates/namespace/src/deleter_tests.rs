//! The finalize request's body: the `kubernetes` finalizer taken out, the others kept.

use k8s_openapi::api::core::v1::NamespaceSpec;

use super::*;

#[test]
fn finalizing_removes_only_this_controllers_finalizer() {
    let ns = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some("ns".into()),
            resource_version: Some("7".into()),
            ..Default::default()
        },
        spec: Some(NamespaceSpec {
            finalizers: Some(vec![
                "z.example.com/x".into(),
                FINALIZER.into(),
                "a.example.com/y".into(),
                "a.example.com/y".into(),
            ]),
        }),
        status: Some(Default::default()),
    };
    let body = finalized(&ns);
    assert_eq!(
        body.spec.unwrap().finalizers.unwrap(),
        ["a.example.com/y", "z.example.com/x"]
    );
    assert_eq!(
        body.metadata.resource_version.as_deref(),
        Some("7"),
        "the write is conditional on the read"
    );
    assert_eq!(body.status, None);
}

use std::borrow::Cow;

use k8s_openapi::api::core::v1::Pod as FullPod;

use super::*;

/// The pod recorded from the local control plane that the benchmarks use (managedFields included).
const RECORDED: &str = include_str!("../../../../benches/fixtures/pod.json");

#[test]
fn a_recorded_pod_keeps_every_field_the_controllers_read() {
    let full: FullPod = serde_json::from_str(RECORDED).unwrap();
    let compact: Pod = serde_json::from_str(RECORDED).unwrap();
    let (m, fm) = (&compact.metadata, &full.metadata);
    assert_eq!(m.name, fm.name);
    assert_eq!(m.namespace, fm.namespace);
    assert_eq!(m.uid, fm.uid);
    assert_eq!(m.resource_version, fm.resource_version);
    assert_eq!(m.creation_timestamp, fm.creation_timestamp);
    assert_eq!(m.labels, fm.labels);
    assert_eq!(m.owner_references, fm.owner_references);
    assert!(m.managed_fields.is_none() && m.generate_name.is_none());
    let (spec, fspec) = (compact.spec.unwrap(), full.spec.unwrap());
    assert_eq!(spec.node_name, fspec.node_name);
    assert_eq!(spec.restart_policy.as_deref(), fspec.restart_policy.as_deref());
    let (st, fst) = (compact.status.unwrap(), full.status.unwrap());
    assert_eq!(st.phase.as_deref(), fst.phase.as_deref());
    let conds = st.conditions.unwrap();
    let fconds = fst.conditions.unwrap();
    assert_eq!(conds.len(), fconds.len());
    for (c, f) in conds.iter().zip(&fconds) {
        assert_eq!((&*c.type_, &*c.status), (f.type_.as_str(), f.status.as_str()));
        assert_eq!(c.last_transition_time, f.last_transition_time);
        assert!(
            matches!(c.status, Cow::Borrowed(_)),
            "condition status is interned"
        );
    }
    let cs = &st.container_statuses.unwrap()[0];
    let fcs = &fst.container_statuses.unwrap()[0];
    assert_eq!(
        (&cs.name, cs.ready, cs.restart_count),
        (&fcs.name, fcs.ready, fcs.restart_count)
    );
}

#[test]
fn only_the_annotations_a_controller_reads_are_kept() {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": "p",
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"big\": true}",
                "batch.kubernetes.io/job-completion-index": "3",
                "controller.kubernetes.io/pod-deletion-cost": "-5",
                "note": "x"
            }
        }
    }))
    .unwrap();
    let kept = pod.metadata.annotations.unwrap();
    assert_eq!(kept.len(), 2);
    assert_eq!(kept["batch.kubernetes.io/job-completion-index"], "3");
    assert_eq!(kept["controller.kubernetes.io/pod-deletion-cost"], "-5");

    let none: Pod =
        serde_json::from_value(serde_json::json!({"metadata": {"annotations": {"note": "x"}}})).unwrap();
    assert_eq!(none.metadata.annotations, None);
}

#[test]
fn nulls_and_absent_sections_decode() {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "p", "labels": null, "annotations": null, "ownerReferences": null},
        "spec": null,
        "status": {"phase": null, "conditions": null}
    }))
    .unwrap();
    assert_eq!(pod.metadata.name.as_deref(), Some("p"));
    assert!(pod.spec.is_none());
    assert_eq!(pod.status.unwrap().phase, None);
    let empty: Pod = serde_json::from_str("{}").unwrap();
    assert_eq!(empty, Pod::default());
}

#[test]
fn terminations_and_sidecars_are_kept() {
    let full: FullPod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "p", "deletionTimestamp": "2026-11-23T10:00:00Z", "deletionGracePeriodSeconds": 30,
                     "finalizers": ["batch.kubernetes.io/job-tracking"]},
        "spec": {"containers": [{"name": "main", "image": "busybox"}],
                 "initContainers": [{"name": "side", "image": "x", "restartPolicy": "Always"}]},
        "status": {"phase": "Failed",
                   "containerStatuses": [{"name": "main", "ready": false, "restartCount": 2, "image": "busybox",
                       "imageID": "", "state": {"terminated": {"exitCode": 42, "finishedAt": "2026-11-23T09:59:00Z"}}}],
                   "initContainerStatuses": [{"name": "side", "ready": true, "restartCount": 7, "image": "x", "imageID": ""}]}
    }))
    .unwrap();
    let pod = Pod::from(&full);
    assert_eq!(pod.metadata.deletion_grace_period_seconds, Some(30));
    assert_eq!(pod.metadata.deletion_timestamp, full.metadata.deletion_timestamp);
    assert_eq!(pod.metadata.finalizers, full.metadata.finalizers);
    let init = &pod.spec.unwrap().init_containers.unwrap()[0];
    assert_eq!(
        (init.name.as_str(), init.restart_policy.as_deref()),
        ("side", Some("Always"))
    );
    let status = pod.status.unwrap();
    let t = status.container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_eq!(t.exit_code, 42);
    assert!(t.finished_at.is_some());
    assert_eq!(status.init_container_statuses.unwrap()[0].restart_count, 7);
}

#[test]
fn is_a_kube_resource_for_the_pods_endpoint() {
    use kube::Resource;
    assert_eq!(Pod::url_path(&(), Some("ns")), "/api/v1/namespaces/ns/pods");
    assert_eq!(Pod::kind(&()), "Pod");
    let mut pod = Pod::default();
    pod.metadata.name = Some("p".into());
    assert_eq!(pod.object_ref(&()).kind.as_deref(), Some("Pod"));
}

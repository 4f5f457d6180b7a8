use serde_json::json;

use super::*;

const A: &str = "host_a";
const B: &str = "host_b";

fn at(second: u32) -> String {
    format!("2026-11-26T00:00:{second:02}.000000Z")
}

fn lease(second: u32, by: &str, holder: Option<&str>, code: u16) -> String {
    json!({
        "stage": "ResponseComplete",
        "userAgent": format!("kcm-rs/leader-election/{by}"),
        "verb": "update",
        "objectRef": {"resource": "leases", "namespace": "kube-system", "name": "kcm-rs-shard-0-of-2"},
        "responseStatus": {"code": code},
        "requestReceivedTimestamp": at(second),
        "stageTimestamp": at(second),
        "requestObject": {"spec": {"holderIdentity": holder}},
    })
    .to_string()
}

fn write(second: u32, by: &str, namespace: &str) -> String {
    write_answered(second, second, by, namespace)
}

fn write_answered(second: u32, answered: u32, by: &str, namespace: &str) -> String {
    json!({
        "stage": "ResponseComplete",
        "userAgent": format!("kcm-rs/replicaset-controller/{by}"),
        "verb": "create",
        "objectRef": {"resource": "pods", "namespace": namespace},
        "responseStatus": {"code": 201},
        "requestReceivedTimestamp": at(second),
        "stageTimestamp": at(answered),
    })
    .to_string()
}

fn check(lines: &[String]) -> Result<AuditSummary, Vec<String>> {
    check_writes_within_terms(&lines.join("\n"), &[A.to_owned(), B.to_owned()], |ns| {
        if ns == "ns" {
            vec!["kcm-rs-shard-0-of-2".to_owned()]
        } else {
            Vec::new()
        }
    })
}

#[test]
fn writes_inside_their_writers_terms_pass() {
    let summary = check(&[
        lease(1, A, Some(A), 200),
        write(2, A, "ns"),
        lease(3, A, Some(A), 200), // a renewal continues the term
        write(4, A, "ns"),
        lease(5, A, None, 200), // released
        lease(6, B, Some(B), 200),
        write(7, B, "ns"),
        write(8, A, "elsewhere"), // not a checked namespace
    ])
    .unwrap();
    assert_eq!(summary.total_writes(), 3);
    assert_eq!(summary.total_terms(), 2);
}

#[test]
fn a_write_after_the_next_holder_took_over_fails() {
    let errors = check(&[
        lease(1, A, Some(A), 200),
        lease(5, B, Some(B), 200), // taken over, A's lease having expired
        write(6, A, "ns"),
    ])
    .unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("by host_a"), "{errors:?}");
}

#[test]
fn a_failed_lease_write_makes_no_term() {
    let errors = check(&[lease(1, B, Some(B), 409), write(2, B, "ns")]).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
}

#[test]
fn a_write_before_the_term_or_after_a_release_fails() {
    let errors = check(&[
        write(1, A, "ns"),
        lease(2, A, Some(A), 200),
        lease(3, A, None, 200),
        write(4, A, "ns"),
    ])
    .unwrap_err();
    assert_eq!(errors.len(), 2, "{errors:?}");
}

#[test]
fn other_agents_and_unknown_replicas_are_not_checked() {
    let mut stranger = write(1, "host_c", "ns");
    stranger.push('\n');
    stranger.push_str(
        &json!({
            "stage": "ResponseComplete",
            "userAgent": "kube-scheduler/v1.36.3",
            "objectRef": {"resource": "pods", "namespace": "ns"},
            "requestReceivedTimestamp": at(1),
            "stageTimestamp": at(1),
        })
        .to_string(),
    );
    let summary = check(&[stranger]).unwrap();
    assert_eq!(summary.total_writes(), 0);
}

#[test]
fn timestamps_of_another_shape_are_refused() {
    let line = write(1, A, "ns").replace(".000000Z", "Z");
    assert!(check(&[line]).is_err());
}

#[test]
fn a_write_that_arrived_in_its_term_but_was_applied_after_it_fails() {
    let errors = check(&[
        lease(1, A, Some(A), 200),
        write_answered(4, 6, A, "ns"), // waited in the server past the takeover
        lease(5, B, Some(B), 200),
        write(7, B, "ns"),
    ])
    .unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("answered at 2026-11-26T00:00:06"),
        "{errors:#?}"
    );
}

fn lock(second: u32, by: &str, holder: Option<&str>) -> String {
    lease(second, by, holder, 200).replace("kcm-rs-shard-0-of-2", "kcm-rs-lock")
}

fn check_with_lock(lines: &[String]) -> Result<AuditSummary, Vec<String>> {
    let leases_of = |ns: &str| {
        if ns == "ns" {
            vec!["kcm-rs-shard-0-of-2".to_owned(), "kcm-rs-lock".to_owned()]
        } else {
            Vec::new()
        }
    };
    check_writes_within_terms_or_unfenced(
        &lines.join("\n"),
        &[A.to_owned(), B.to_owned()],
        leases_of,
        Some("kcm-rs-lock"),
    )
}

#[test]
fn the_unsharded_leaders_write_answered_after_its_release_passes_until_another_holds() {
    // A leads unsharded, sends a write at 2 that is answered at 4, after its release at 3.
    let ok = [
        lock(1, A, Some(A)),
        write_answered(2, 4, A, "ns"),
        lock(3, A, None),
        lease(6, B, Some(B), 200),
        write(7, B, "ns"),
    ];
    assert!(check_with_lock(&ok).is_ok(), "{:?}", check_with_lock(&ok));
    // Answered after B's shard term began: two writers.
    let late = [
        lock(1, A, Some(A)),
        write_answered(2, 7, A, "ns"),
        lock(3, A, None),
        lease(6, B, Some(B), 200),
    ];
    assert_eq!(check_with_lock(&late).unwrap_err().len(), 1);
    // Sent after the release: outside its term.
    let after = [lock(1, A, Some(A)), lock(3, A, None), write(4, A, "ns")];
    assert_eq!(check_with_lock(&after).unwrap_err().len(), 1);
}

#[test]
fn creates_answered_504_are_counted_per_namespace() {
    let timed_out = |ns: &str, code: u16, agent: &str| {
        json!({
            "stage": "ResponseComplete", "userAgent": agent, "verb": "create",
            "objectRef": {"resource": "pods", "namespace": ns},
            "responseStatus": {"code": code},
        })
        .to_string()
    };
    let log = [
        timed_out("a", 504, "kcm-rs/replication-controller/host_a"),
        timed_out("a", 504, "kcm-rs/job-controller/host_b"),
        timed_out("a", 201, "kcm-rs/job-controller/host_b"),
        timed_out("b", 504, "kube-controller-manager/v1.36.3"),
        write(1, A, "c"),
    ]
    .join("\n");
    assert_eq!(
        timed_out_creates(&log, "pods"),
        BTreeMap::from([("a".to_owned(), 2)])
    );
    assert!(timed_out_creates(&log, "jobs").is_empty());
}

/// As kcm-rs's log prints the fence's line (tracing's default format) at `second`.
fn dropped(second: u32, namespace: &str) -> String {
    format!(
        "{}  WARN sharding::fence::fenced: write dropped unanswered: its shard's window closed \
         method=POST path=/api/v1/namespaces/{namespace}/pods namespace={namespace}",
        at(second)
    )
}

#[test]
fn a_dropped_create_counts_only_if_the_server_was_applying_it() {
    let audit = [
        write_answered(1, 2, A, "ns"), // in the server when dropped at 2: made
        write_answered(3, 3, A, "ns"), // the next sync's create, after the drop at 2
        write_answered(5, 9, A, "ns"), // in the server when dropped at 6; the second drop at 6 finds none
    ]
    .join("\n");
    let logs = [
        dropped(2, "ns"),
        dropped(6, "ns"),
        dropped(6, "ns"),
        dropped(2, "other"),
    ]
    .join("\n");
    assert_eq!(lost_creates(&audit, &logs, "ns", "/api/v1", "pods"), 2);
    // A drop with no create in the server then (never sent) allows for nothing.
    assert_eq!(lost_creates(&audit, &logs, "other", "/api/v1", "pods"), 0);
    let unsent = [write_answered(7, 7, A, "ns")].join("\n");
    assert_eq!(
        lost_creates(&unsent, &dropped(6, "ns"), "ns", "/api/v1", "pods"),
        0
    );
    // A status write dropped is not a create.
    let status = dropped(2, "ns").replace("method=POST", "method=PUT");
    assert_eq!(lost_creates(&audit, &status, "ns", "/api/v1", "pods"), 0);
}

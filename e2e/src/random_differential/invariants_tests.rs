use super::*;

/// Not live here means being deleted.
fn pod(live: bool, ready: bool, index: Option<&str>) -> Option<PodView> {
    Some(PodView {
        live,
        ready,
        deleting: !live,
        index: index.map(str::to_owned),
    })
}

/// replicas 4, maxSurge 1, maxUnavailable 1: a rollout that deletes two old pods before the
/// first new one is Ready dips to 2 Ready pods, below the floor of 3; the check sees the event
/// that did it although the end state is fine.
#[test]
fn a_rollout_below_its_availability_floor_is_caught_on_the_event() {
    let mut c = Checker::default();
    for i in 0..4 {
        c.observe(&format!("old-{i}"), pod(true, true, None));
    }
    c.begin(
        3,
        Bounds::Deployment {
            floor: Some(3),
            ceiling: 5,
        },
    );
    c.observe("new-0", pod(true, false, None));
    c.observe("old-0", pod(false, false, None));
    assert!(c.violations.is_empty(), "3 Ready, 4 live: within bounds");
    c.observe("old-1", pod(false, false, None));
    assert_eq!(c.violations.len(), 1);
    assert!(
        c.violations[0].starts_with("step 3: 2 pods Ready"),
        "{:?}",
        c.violations
    );
    c.observe("new-0", pod(true, true, None));
    c.observe("old-0", None);
    c.observe("old-1", None);
    c.observe("new-1", pod(true, true, None));
    assert_eq!(c.violations.len(), 1, "back above the floor");
    assert_eq!(c.created(), 6);
}

#[test]
fn a_surge_beyond_max_surge_is_caught_in_the_specs_and_noted_in_the_pods() {
    let mut c = Checker::default();
    c.begin(
        1,
        Bounds::Deployment {
            floor: None,
            ceiling: 3,
        },
    );
    c.observe_replica_set("old", Some(2));
    c.observe_replica_set("new", Some(1));
    for i in 0..3 {
        c.observe(&format!("p{i}"), pod(true, true, None));
    }
    assert!(c.violations.is_empty() && c.notes.is_empty());
    c.observe("p3", pod(true, false, None));
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    assert!(c.notes[0].contains("4 live pods, above replicas + maxSurge = 3"));
    c.observe_replica_set("new", Some(2));
    assert!(
        c.violations[0].contains("the ReplicaSets' replicas add up to 4, above replicas + maxSurge = 3"),
        "{:?}",
        c.violations
    );
    c.observe_replica_set("old", None);
    assert_eq!(c.violations.len(), 1, "a ReplicaSet gone no longer counts");
}

#[test]
fn a_second_live_pod_for_an_index_is_caught_a_terminating_one_is_not() {
    let mut c = Checker::default();
    c.begin(
        2,
        Bounds::Job {
            max_active: 2,
            indexed: true,
        },
    );
    c.observe("a", pod(true, true, Some("0")));
    c.observe("b", pod(true, true, Some("1")));
    c.observe("a", pod(false, false, Some("0")));
    c.observe("c", pod(true, false, Some("0")));
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    c.observe("b", None);
    assert_eq!(
        c.deleted(),
        ["0", "1"],
        "deleted, or gone without the update showing it"
    );
    c.observe("e", pod(true, true, Some("1")));
    c.observe("d", pod(true, false, Some("1")));
    assert_eq!(c.violations.len(), 2, "{:?}", c.violations);
    assert!(
        c.violations
            .iter()
            .any(|v| v.contains("3 live pods, above parallelism 2"))
    );
    assert!(c.violations.iter().any(|v| v.contains("for completion index 1")));
}

#[test]
fn violations_are_capped_per_step() {
    let mut c = Checker::default();
    c.begin(
        0,
        Bounds::Job {
            max_active: 0,
            indexed: false,
        },
    );
    for i in 0..20 {
        c.observe(&format!("p{i}"), pod(true, true, None));
    }
    assert_eq!(c.violations.len(), KEPT_PER_STEP);
    c.begin(1, Bounds::None);
    c.observe("p0", pod(true, true, None));
    assert_eq!(c.violations.len(), KEPT_PER_STEP);
}

/// A CronJob's scheduled Job is checked at the instant it appears: outside a run (suspended), or
/// under Forbid or Replace beside another running one, it breaks the bounds; a manual Job never does.
#[test]
fn a_scheduled_job_beside_a_running_one_or_while_suspended_is_caught() {
    let view = |scheduled, running| Some(JobView { scheduled, running });
    let mut c = Checker::default();
    c.begin(
        1,
        Bounds::CronJob {
            running: true,
            single: true,
        },
    );
    c.observe_job("a", view(true, true));
    c.observe_job("m", view(false, true));
    c.observe_job("a", view(true, false));
    c.observe_job("b", view(true, true));
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    c.begin(
        2,
        Bounds::CronJob {
            running: true,
            single: true,
        },
    );
    c.observe_job("c", view(true, true));
    assert_eq!(
        c.violations,
        vec!["step 2: a scheduled Job created beside 1 running, under Forbid or Replace".to_owned()]
    );
    c.begin(
        3,
        Bounds::CronJob {
            running: false,
            single: false,
        },
    );
    c.observe_job("d", view(true, true));
    c.observe_job("n", view(false, true));
    assert_eq!(c.violations.len(), 2);
    assert!(c.violations[1].contains("while the CronJob was suspended"));
}

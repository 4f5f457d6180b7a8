use crate::fixtures::{deployment, int, rs, work};

#[test]
fn reconcile_new_grows_within_max_surge_and_shrinks_above_replicas() {
    // Upstream TestDeploymentController_reconcileNewReplicaSet: (replicas, surge, old, new) ->
    // Some(new size) or None.
    let cases = [
        (10, 0, 10, 0, None),
        (10, 2, 10, 0, Some(2)),
        (10, 2, 5, 0, Some(7)),
        (10, 2, 10, 2, None),
        (10, 2, 2, 11, Some(10)),
    ];
    for (replicas, surge, old, new, want) in cases {
        let d = deployment("foo", replicas).rolling(int(surge), int(0)).build();
        let mut w = work(
            &d,
            Some(rs("new", new, 2).build()),
            vec![rs("old", old, 1).image("old").build()],
        );
        let scaled = w.reconcile_new().unwrap();
        assert_eq!(scaled, want.is_some(), "{replicas} {surge} {old} {new}");
        if let Some(size) = want {
            assert_eq!(crate::replica_sets::replicas(w.rs(1)), size);
        }
    }
}

#[test]
fn reconcile_olds_respects_availability_and_unavailable_new_pods() {
    // Upstream TestDeploymentController_reconcileOldReplicaSets: (replicas, maxUnavailable, old,
    // new, old available, new available) -> old size after.
    let cases = [
        (10, 0, 10, 0, 10, 0, Some(9)),
        (10, 2, 10, 0, 10, 0, Some(8)),
        // Unhealthy old pods go first.
        (10, 2, 10, 0, 8, 0, Some(8)),
        // One unhealthy, then one available.
        (10, 2, 10, 0, 9, 0, Some(8)),
        // The new ReplicaSet's unavailable pods use up the budget.
        (10, 2, 8, 2, 8, 0, None),
    ];
    for (replicas, unavailable, old, new, old_av, new_av, want) in cases {
        let d = deployment("foo", replicas)
            .rolling(int(0), int(unavailable))
            .build();
        let mut w = work(
            &d,
            Some(rs("new", new, 2).pods(new, new_av).build()),
            vec![rs("old", old, 1).image("old").pods(old, old_av).build()],
        );
        let scaled = w.reconcile_olds();
        assert_eq!(
            scaled,
            want.is_some(),
            "{:?}",
            (replicas, unavailable, old, new, old_av, new_av)
        );
        if let Some(size) = want {
            assert_eq!(crate::replica_sets::replicas(w.rs(0)), size);
        }
    }
}

#[test]
fn cleanup_unhealthy_removes_at_most_the_budget() {
    // Upstream TestDeploymentController_cleanupUnhealthyReplicas: (available of 10, budget) -> removed.
    for (available, budget, want) in [(8, 1, 1), (8, 3, 2), (8, 0, 0), (10, 3, 0)] {
        let d = deployment("foo", 10).rolling(int(2), int(2)).build();
        let mut w = work(
            &d,
            None,
            vec![rs("old", 10, 1).image("old").pods(10, available).build()],
        );
        let olds = w.active_olds();
        assert_eq!(
            w.cleanup_unhealthy(&olds, budget),
            Some(want),
            "{available} {budget}"
        );
    }
}

#[test]
fn scale_down_olds_stops_at_min_available() {
    // Upstream TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate: (maxUnavailable,
    // available, old) -> old size after.
    for (unavailable, available, old, want) in [
        (0, 10, 10, Some(9)),
        (2, 10, 10, Some(8)),
        (2, 8, 10, None),
        (2, 10, 0, None),
        (2, 1, 10, None),
    ] {
        let d = deployment("foo", 10).rolling(int(0), int(unavailable)).build();
        let mut w = work(
            &d,
            None,
            vec![rs("old", old, 1).image("old").pods(old, available).build()],
        );
        let olds = w.active_olds();
        let down = w.scale_down_olds(&olds);
        match want {
            Some(size) => assert_eq!(crate::replica_sets::replicas(w.rs(0)), size),
            None => assert_eq!(down, 0, "{unavailable} {available} {old}"),
        }
    }
}

#[test]
fn one_direction_per_sync_and_the_stuck_rollout_figure() {
    // 10 replicas, maxSurge 3, maxUnavailable 2, the new template never available: the new
    // ReplicaSet gets 3, the old one goes to 8, the new one to 5, then nothing moves.
    let d = deployment("foo", 10).rolling(int(3), int(2)).build();
    let mut w = work(
        &d,
        Some(rs("new", 3, 2).pods(3, 0).build()),
        vec![rs("old", 10, 1).image("old").build()],
    );
    assert!(!w.reconcile_new().unwrap(), "13 pods: no room");
    assert!(w.reconcile_olds());
    assert_eq!(crate::replica_sets::replicas(w.rs(0)), 8);
    let mut w = work(
        &d,
        Some(rs("new", 3, 2).pods(3, 0).build()),
        vec![rs("old", 8, 1).image("old").build()],
    );
    assert!(w.reconcile_new().unwrap());
    assert_eq!(crate::replica_sets::replicas(w.rs(1)), 5);
    let mut w = work(
        &d,
        Some(rs("new", 5, 2).pods(5, 0).build()),
        vec![rs("old", 8, 1).image("old").build()],
    );
    assert!(!w.reconcile_new().unwrap());
    assert!(
        !w.reconcile_olds(),
        "the 5 unavailable new pods use the whole budget"
    );
}

#[test]
fn the_scale_down_budget_counts_only_old_replica_sets_active_at_the_start() {
    // 10 replicas, maxSurge 3, maxUnavailable 2 (8 must stay available). A was just scaled to 0 and
    // still reports 5 available pods; those do not count: the budget is 3 + 6 - 8 = 1, not 6.
    let d = deployment("foo", 10).rolling(int(3), int(2)).build();
    let mut w = work(
        &d,
        Some(rs("c", 10, 3).pods(10, 6).build()),
        vec![
            rs("a", 0, 1).image("a").pods(5, 5).build(),
            rs("b", 3, 2).image("b").build(),
        ],
    );
    assert!(w.reconcile_olds());
    assert_eq!(
        crate::fixtures::sizes(&w),
        [("a".to_owned(), 0), ("b".to_owned(), 2), ("c".to_owned(), 10)].into()
    );
}

#[test]
fn an_old_replica_set_reporting_more_available_than_its_size_stops_the_scale_down() {
    // 10 replicas, maxSurge 1, maxUnavailable 1. The old ReplicaSet was lowered from 6 to 4 and
    // still reports 6 available: upstream's cleanup of unhealthy replicas gives up there, and
    // nothing else is scaled down in that sync.
    let d = deployment("foo", 10).rolling(int(1), int(1)).build();
    let mut w = work(
        &d,
        Some(rs("new", 7, 2).build()),
        vec![rs("old", 4, 1).image("old").pods(6, 6).build()],
    );
    assert!(!w.reconcile_olds());
    assert_eq!(crate::replica_sets::replicas(w.rs(0)), 4);
}

#[test]
fn only_rolling_old_scale_downs_are_best_effort_writes() {
    // Upstream swallows a failed old-ReplicaSet scale-down of a rolling update (and still writes
    // the status); every other ReplicaSet write failing fails the sync.
    let d = deployment("foo", 10).rolling(int(2), int(2)).build();
    let mut w = work(
        &d,
        Some(rs("new", 2, 2).build()),
        vec![rs("old", 10, 1).image("old").build()],
    );
    assert!(!w.reconcile_new().unwrap(), "12 pods: no room");
    assert!(w.reconcile_olds());
    assert!(w.slots[0].best_effort && !w.slots[1].best_effort);
    let mut w = work(
        &d,
        Some(rs("new", 0, 2).build()),
        vec![rs("old", 10, 1).image("old").build()],
    );
    assert!(w.reconcile_new().unwrap());
    assert!(w.slots.iter().all(|s| !s.best_effort));
}

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
        assert_eq!(w.cleanup_unhealthy(budget), want, "{available} {budget}");
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
        let down = w.scale_down_olds();
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

use k8s_openapi::api::apps::v1::{DeploymentStatus, ReplicaSetCondition};

use super::*;
use crate::fixtures::{deployment, rs, ts, work};

fn progressing(reason: &str, status: &str, at: i64) -> DeploymentStatus {
    let mut s = DeploymentStatus::default();
    conditions::set(&mut s, conditions::new(PROGRESSING, status, reason, "", ts(at)));
    s
}

fn reason_of(w: &Work<'_>) -> Option<String> {
    w.d.status
        .as_ref()
        .and_then(|s| conditions::get(s, PROGRESSING))
        .map(|c| conditions::reason(c).to_owned())
}

#[test]
fn progressing_reasons_in_upstream_order() {
    // Complete: NewReplicaSetAvailable.
    let d = deployment("foo", 2)
        .deadline(60)
        .status(progressing(conditions::REPLICA_SET_UPDATED, TRUE, 900))
        .build();
    let mut w = work(&d, Some(rs("new", 2, 1).build()), vec![]);
    w.sync_rollout_status();
    assert_eq!(reason_of(&w).as_deref(), Some(conditions::NEW_RS_AVAILABLE));
    let c = conditions::get(w.d.status.as_ref().unwrap(), PROGRESSING).unwrap();
    assert_eq!(
        c.message.as_deref(),
        Some("ReplicaSet \"new\" has successfully progressed.")
    );
    // Progress (more available than the status shows): ReplicaSetUpdated, lastUpdateTime now,
    // transition time kept.
    let d = deployment("foo", 3)
        .deadline(60)
        .status(progressing(conditions::REPLICA_SET_UPDATED, TRUE, 900))
        .build();
    let mut w = work(&d, Some(rs("new", 3, 1).pods(3, 1).build()), vec![]);
    w.sync_rollout_status();
    let c = conditions::get(w.d.status.as_ref().unwrap(), PROGRESSING)
        .unwrap()
        .clone();
    assert_eq!(c.last_update_time, Some(conditions::now_time(ts(1000))));
    assert_eq!(c.last_transition_time, Some(conditions::now_time(ts(900))));
    // No progress past the deadline: ProgressDeadlineExceeded.
    let mut stuck = progressing(conditions::REPLICA_SET_UPDATED, TRUE, 900);
    stuck.replicas = Some(3);
    stuck.updated_replicas = Some(3);
    stuck.ready_replicas = Some(1);
    stuck.available_replicas = Some(1);
    let d = deployment("foo", 3).deadline(60).status(stuck).build();
    let mut w = work(&d, Some(rs("new", 3, 1).pods(3, 1).build()), vec![]);
    w.sync_rollout_status();
    assert_eq!(reason_of(&w).as_deref(), Some(conditions::TIMED_OUT));
    assert_eq!(w.requeue_after, None, "the status changed: no progress check");
    // No deadline: no Progressing condition at all.
    let d = deployment("foo", 2)
        .status(progressing(conditions::REPLICA_SET_UPDATED, TRUE, 900))
        .build();
    let mut w = work(&d, Some(rs("new", 2, 1).build()), vec![]);
    w.sync_rollout_status();
    assert_eq!(reason_of(&w), None);
}

#[test]
fn a_stuck_rollout_is_looked_at_again_at_its_deadline() {
    // Upstream TestRequeueStuckDeployment: last update 3 min ago, deadline 10 min: 7 min (+1 s).
    let mut s = progressing(conditions::REPLICA_SET_UPDATED, TRUE, 1000 - 180);
    s.replicas = Some(1);
    s.updated_replicas = Some(1);
    let d = deployment("foo", 1).deadline(600).status(s.clone()).build();
    assert_eq!(
        requeue_stuck(&d, &s, ts(1000)),
        Some(Duration::from_secs(420) + PROGRESS_CHECK_SLACK)
    );
    // Complete, timed out, no deadline, no condition: never.
    let mut done = s.clone();
    done.available_replicas = Some(1);
    done.observed_generation = Some(1);
    assert_eq!(requeue_stuck(&d, &done, ts(1000)), None);
    let t = progressing(conditions::TIMED_OUT, FALSE, 0);
    assert_eq!(
        requeue_stuck(
            &deployment("foo", 1).deadline(600).status(t.clone()).build(),
            &t,
            ts(1000)
        ),
        None
    );
    assert_eq!(
        requeue_stuck(&deployment("foo", 1).status(s.clone()).build(), &s, ts(1000)),
        None
    );
    let none = DeploymentStatus::default();
    assert_eq!(
        requeue_stuck(&deployment("foo", 1).deadline(600).build(), &none, ts(1000)),
        None
    );
    // Past the deadline already: at once, plus the slack.
    assert_eq!(requeue_stuck(&d, &s, ts(5000)), Some(PROGRESS_CHECK_SLACK));
}

#[test]
fn replica_failure_is_copied_from_the_new_replica_set_first() {
    let failure = |msg: &str| ReplicaSetCondition {
        type_: REPLICA_FAILURE.into(),
        status: TRUE.into(),
        reason: Some("FailedCreate".into()),
        message: Some(msg.into()),
        last_transition_time: Some(conditions::now_time(ts(5))),
    };
    let mut new = rs("new", 2, 2).pods(0, 0).build();
    new.status.as_mut().unwrap().conditions = Some(vec![failure("quota new")]);
    let mut old = rs("old", 1, 1).image("old").build();
    old.status.as_mut().unwrap().conditions = Some(vec![failure("quota old")]);
    let d = deployment("foo", 2).build();
    let mut w = work(&d, Some(new), vec![old.clone()]);
    w.sync_rollout_status();
    let c = conditions::get(w.d.status.as_ref().unwrap(), REPLICA_FAILURE).unwrap();
    assert_eq!(c.message.as_deref(), Some("quota new"));
    assert_eq!(c.last_update_time, c.last_transition_time);
    let mut w = work(&d, Some(rs("new", 2, 2).build()), vec![old]);
    w.sync_rollout_status();
    let c = conditions::get(w.d.status.as_ref().unwrap(), REPLICA_FAILURE).unwrap();
    assert_eq!(c.message.as_deref(), Some("quota old"));
    let mut w = work(&d, Some(rs("new", 2, 2).build()), vec![]);
    w.sync_rollout_status();
    assert!(conditions::get(w.d.status.as_ref().unwrap(), REPLICA_FAILURE).is_none());
}

#[test]
fn pause_and_resume_set_progressing_unknown_unless_timed_out() {
    let d = deployment("foo", 1).deadline(60).paused().build();
    let mut w = work(&d, None, vec![]);
    w.check_paused_conditions();
    let c = conditions::get(w.d.status.as_ref().unwrap(), PROGRESSING).unwrap();
    assert_eq!(
        (c.status.as_str(), conditions::reason(c)),
        (conditions::UNKNOWN, conditions::PAUSED)
    );
    assert_eq!(c.message.as_deref(), Some(conditions::MSG_PAUSED));
    let resumed = deployment("foo", 1)
        .deadline(60)
        .status(w.d.status.clone().unwrap())
        .build();
    let mut w = work(&resumed, None, vec![]);
    w.check_paused_conditions();
    assert_eq!(reason_of(&w).as_deref(), Some(conditions::RESUMED));
    let timed_out = deployment("foo", 1)
        .deadline(60)
        .paused()
        .status(progressing(conditions::TIMED_OUT, FALSE, 0))
        .build();
    let mut w = work(&timed_out, None, vec![]);
    w.check_paused_conditions();
    assert_eq!(reason_of(&w).as_deref(), Some(conditions::TIMED_OUT));
    let no_deadline = deployment("foo", 1).paused().build();
    let mut w = work(&no_deadline, None, vec![]);
    w.check_paused_conditions();
    assert_eq!(reason_of(&w), None);
}

//! No value the API server accepts makes a plan panic: replicas up to MaxInt32, any maxSurge
//! (percentages are not capped), hand-edited annotations, any counts in the ReplicaSets' status.
//! Tests build with overflow checks on, so an arithmetic overflow is a panic here.

use std::sync::Arc;

use controller::compact_pod::Pod;
use k8s_openapi::api::apps::v1::{DeploymentStatus, ReplicaSet};
use proptest::prelude::*;

use super::{Decision, SyncInput, SyncPlan, plan_sync};
use crate::{annotations, fixtures::*};

fn no_pods(_: &str) -> Vec<Arc<Pod>> {
    Vec::new()
}

/// Counts weighted towards the edges of int32.
fn count() -> impl Strategy<Value = i32> {
    prop_oneof![
        Just(0),
        Just(1),
        Just(i32::MAX),
        Just(i32::MAX - 1),
        Just(i32::MAX / 2 + 1),
        0..=i32::MAX,
        0..20i32,
    ]
}

fn int_or_percent() -> impl Strategy<Value = k8s_openapi::apimachinery::pkg::util::intstr::IntOrString> {
    prop_oneof![
        count().prop_map(int),
        prop::sample::select(vec![
            "0%",
            "1%",
            "25%",
            "100%",
            "101%",
            "1000%",
            "2147483647%",
            "2147483648%",
            "9223372036854775807%",
            "99999999999999999999%",
        ])
        .prop_map(pct),
    ]
}

fn annotation_value() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop::sample::select(vec![
        "0",
        "1",
        "10",
        "-5",
        "+5",
        "2147483647",
        "2147483648",
        "4294967301",
        "9223372036854775807",
        "x",
    ]))
}

#[derive(Debug, Clone)]
struct RsCase {
    replicas: i32,
    status: (i32, i32, i32),
    desired: Option<&'static str>,
    max: Option<&'static str>,
    revision: Option<&'static str>,
    image: &'static str,
}

fn rs_case() -> impl Strategy<Value = RsCase> {
    (
        count(),
        (count(), count(), count()),
        annotation_value(),
        annotation_value(),
        annotation_value(),
        prop::sample::select(vec!["foo/bar", "old", "older"]),
    )
        .prop_map(|(replicas, status, desired, max, revision, image)| RsCase {
            replicas,
            status,
            desired,
            max,
            revision,
            image,
        })
}

#[test]
fn max_int32_replicas_wrap_as_upstream() {
    // `kubectl create deployment x --replicas=2147483647` (25% surge): replicas + maxSurge wraps
    // negative in int32, so upstream's first ReplicaSet gets 0 replicas, and max-replicas records
    // the wrapped sum.
    let d = deployment("x", i32::MAX).rolling(pct("25%"), pct("25%")).build();
    let input = SyncInput {
        deployment: &d,
        replica_sets: &[],
        pods_of: &no_pods,
        now: ts(1000),
    };
    let Ok(SyncPlan {
        decision: Decision::Sync(a),
        ..
    }) = plan_sync(&input)
    else {
        panic!("a sync");
    };
    let created = a.create.unwrap();
    assert_eq!(created.rs.spec.as_ref().unwrap().replicas, Some(0));
    assert!(created.events.is_empty(), "no scale-up from 0 to 0");
    let ann = created.rs.metadata.annotations.unwrap();
    assert_eq!(ann[annotations::DESIRED_REPLICAS], "2147483647");
    assert_eq!(ann[annotations::MAX_REPLICAS], "-1610612737");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn plans_never_panic_on_extreme_values(
        replicas in count(),
        surge in int_or_percent(),
        unavailable in int_or_percent(),
        recreate in any::<bool>(),
        paused in any::<bool>(),
        deadline in prop::option::of(count()),
        history in prop::option::of(count()),
        rollback in annotation_value(),
        status in (count(), count(), count(), prop::option::of(count())),
        cases in prop::collection::vec(rs_case(), 0..4),
    ) {
        let mut b = deployment("foo", replicas).rolling(surge, unavailable);
        if recreate {
            b = b.recreate();
        }
        if paused {
            b = b.paused();
        }
        if let Some(s) = deadline {
            b = b.deadline(s);
        }
        if let Some(h) = history {
            b = b.history(h);
        }
        if let Some(r) = rollback {
            b = b.annotation(annotations::ROLLBACK_TO, r);
        }
        let d = b
            .status(DeploymentStatus {
                replicas: Some(status.0),
                updated_replicas: Some(status.1),
                available_replicas: Some(status.2),
                collision_count: status.3,
                ..DeploymentStatus::default()
            })
            .build();
        let rss: Vec<Arc<ReplicaSet>> = cases
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut b = rs(&format!("rs{i}"), c.replicas, i64::try_from(i).unwrap_or(0))
                    .image(c.image)
                    .pods(c.status.0, c.status.1.min(c.status.0));
                b.0.status.as_mut().unwrap().terminating_replicas = Some(c.status.2);
                for (k, v) in [
                    (annotations::DESIRED_REPLICAS, c.desired),
                    (annotations::MAX_REPLICAS, c.max),
                    (annotations::REVISION, c.revision),
                ] {
                    if let Some(v) = v {
                        b = b.annotation(k, v);
                    }
                }
                b.arc()
            })
            .collect();
        let input = SyncInput {
            deployment: &d,
            replica_sets: &rss,
            pods_of: &no_pods,
            now: ts(1000),
        };
        let first = plan_sync(&input);
        // A plan over the status it asked for must not panic either.
        if let Ok(SyncPlan { decision: Decision::Sync(a), .. }) = first
            && let Some(w) = a.status
        {
            let _ = plan_sync(&SyncInput { deployment: &w, ..input });
        }
    }
}

//! One program under one actor, in a namespace of its own: each step applied, then settled and
//! projected, with the invariants watched throughout and the API server's 422 counter read around it.

use std::{collections::BTreeMap, panic::AssertUnwindSafe, sync::Arc};

use futures::FutureExt as _;
use k8s_openapi::{
    api::{apps::v1::Deployment, batch::v1::Job, core::v1::Pod},
    apimachinery::pkg::util::intstr::IntOrString,
};
use parking_lot::Mutex;

use super::{
    execute,
    invariants::{Bounds, Watcher},
    metrics,
    program::{Amount, DEPLOYMENT, DeploymentStep, JOB, JobStep, Program, Step},
    ranking::{Removal, pick},
    settle,
};
use crate::{
    Cluster, TestNamespace,
    differential::{Outcome, event_reasons, panic_message},
    with_namespace,
};

/// What one run of a program showed.
#[derive(Debug, Default)]
pub struct Run {
    /// Per step: the settled projection, or what kept it from settling (the run stops there).
    pub steps: Vec<Result<Outcome, String>>,
    pub violations: Vec<String>,
    /// Bounds broken that upstream does not keep either: printed, never a failure.
    pub notes: Vec<String>,
    /// 422 answers counted by the API server while a step ran.
    pub refusals: Vec<String>,
    /// The harness failed (a write refused, a panic): the run stopped.
    pub failure: Option<String>,
    /// The events' distinct reasons once the program is over.
    pub events: String,
    /// Per step that lowered an Indexed Job's parallelism: which pods went, and which the ranking
    /// picks on this run's pods.
    pub removals: BTreeMap<usize, Removal>,
}

/// Runs `program` in a fresh namespace and returns what it showed; a panic becomes the run's failure.
pub async fn run(cluster: Cluster, program: Program, actor: &'static str) -> Run {
    let slot: Arc<Mutex<Run>> = Arc::default();
    let shared = slot.clone();
    let prefix = format!("random-{}-{actor}", program.seed);
    let body = with_namespace(cluster, &prefix, move |ns| async move {
        steps(&ns, &program, &shared).await;
    });
    let panicked = AssertUnwindSafe(body).catch_unwind().await.err();
    let mut run = std::mem::take(&mut *slot.lock());
    if let Some(p) = panicked {
        run.failure = Some(panic_message(&*p));
    }
    run
}

async fn steps(ns: &TestNamespace, program: &Program, run: &Mutex<Run>) {
    let watcher = Watcher::start(ns).await;
    let kind = program.kind();
    let client = &ns.cluster.client;
    // One reading per step boundary: the one after a step is the one before the next.
    let mut before = metrics::refusals(client).await;
    for (k, step) in program.steps.iter().enumerate() {
        watcher.begin(k, bounds(ns, step).await);
        let scale_down = indexed_pods(ns, step).await;
        let note = match execute::apply(ns, step).await {
            Ok(n) => n,
            Err(e) => {
                run.lock().failure = Some(format!("step {k} ({step:?}): {e}"));
                return;
            }
        };
        let extra = || {
            let mut o = Outcome::new();
            o.insert("step applied".into(), note.clone());
            o.insert("pods ever created".into(), watcher.created().to_string());
            o
        };
        let settled = settle::settle(ns, kind, extra).await;
        let after = metrics::refusals(client).await;
        let deleted = watcher.deleted();
        let mut r = run.lock();
        if let Some((live, completions)) = scale_down
            && !deleted.is_empty()
        {
            let expected = pick(&live, completions, deleted.len());
            r.removals.insert(k, Removal { deleted, expected });
        }
        match (&before, &after) {
            (Ok(b), Ok(a)) => r.refusals.extend(
                metrics::increases(b, a)
                    .into_iter()
                    .map(|i| format!("step {k}: 422 {i}")),
            ),
            (Err(e), _) | (_, Err(e)) => r.refusals.push(format!("step {k}: reading /metrics: {e}")),
        }
        before = after;
        r.violations.extend(watcher.take_violations());
        r.notes.extend(watcher.take_notes());
        let stuck = settled.is_err();
        r.steps.push(settled);
        if stuck {
            return;
        }
    }
    watcher.begin(program.steps.len(), Bounds::None);
    let events = super::cronjob_outcome::without_missing_job(&event_reasons(ns).await);
    let mut r = run.lock();
    r.violations.extend(watcher.take_violations());
    r.notes.extend(watcher.take_notes());
    r.events = events;
}

/// Before a parallelism step of an Indexed Job: its live pods and completions, for [`pick`].
async fn indexed_pods(ns: &TestNamespace, step: &Step) -> Option<(Vec<Pod>, i32)> {
    let Step::Job(JobStep::Parallelism(_)) = step else {
        return None;
    };
    let spec = ns.api::<Job>().get(JOB).await.ok()?.spec?;
    if spec.completion_mode.as_deref() != Some("Indexed") {
        return None;
    }
    let pods = ns.api::<Pod>().list(&Default::default()).await.ok()?.items;
    let live = pods.into_iter().filter(crate::soak::is_active).collect();
    Some((live, spec.completions?))
}

fn scaled(v: Option<&IntOrString>, replicas: i32, round_up: bool, default: i32) -> i32 {
    let amount = match v {
        Some(IntOrString::Int(n)) => Amount::Count(*n),
        Some(IntOrString::String(s)) => Amount::Percent(s.trim_end_matches('%').parse().unwrap_or(default)),
        None => Amount::Percent(default),
    };
    amount.scaled(replicas, round_up)
}

/// The step's bounds, from the settled state it starts from.
async fn bounds(ns: &TestNamespace, step: &Step) -> Bounds {
    match step {
        Step::Deployment(DeploymentStep::DeleteReplicaSet { .. }) | Step::ReplicationController(_) => {
            Bounds::None
        }
        Step::Deployment(DeploymentStep::Create {
            replicas, strategy, ..
        }) => {
            let surge = match strategy {
                super::program::Strategy::Recreate => 0,
                super::program::Strategy::Rolling { surge, .. } => surge.scaled(*replicas, true),
            };
            Bounds::Deployment {
                floor: None,
                ceiling: replicas + surge,
            }
        }
        Step::Deployment(s) => {
            let Ok(d) = ns.api::<Deployment>().get(DEPLOYMENT).await else {
                return Bounds::None;
            };
            deployment_bounds(&d, s)
        }
        Step::Job(JobStep::Create(shape)) => Bounds::Job {
            max_active: shape.parallelism,
            indexed: shape.indexed,
        },
        Step::CronJob(s) => {
            let cj = ns.api().get_opt(super::program::CRON).await.ok().flatten();
            let (running, single) = super::cronjob::bounds(cj.as_ref(), s);
            Bounds::CronJob { running, single }
        }
        Step::Job(s) => {
            let Ok(j) = ns.api::<Job>().get(JOB).await else {
                return Bounds::None;
            };
            let spec = j.spec.unwrap_or_default();
            let p = spec.parallelism.unwrap_or(1);
            Bounds::Job {
                max_active: match s {
                    JobStep::Parallelism(n) => p.max(*n),
                    _ => p,
                },
                indexed: spec.completion_mode.as_deref() == Some("Indexed"),
            }
        }
    }
}

/// replicas + maxSurge over the sizes and strategies the step goes between, and, on a template-only
/// step of a fully available rolling Deployment, replicas − maxUnavailable (upstream's
/// `ResolveFenceposts`: surge rounded up, unavailability down, at least one of them non-zero).
pub fn deployment_bounds(d: &Deployment, step: &DeploymentStep) -> Bounds {
    let spec = d.spec.clone().unwrap_or_default();
    let replicas = spec.replicas.unwrap_or(1);
    let paused = spec.paused.unwrap_or(false);
    let after = match step {
        DeploymentStep::Scale(n) => *n,
        _ => replicas,
    };
    let size = replicas.max(after);
    let fenceposts = |s: &k8s_openapi::api::apps::v1::DeploymentStrategy| -> Option<(i32, i32)> {
        if s.type_.as_deref() == Some("Recreate") {
            return None;
        }
        let ru = s.rolling_update.clone().unwrap_or_default();
        let surge = scaled(ru.max_surge.as_ref(), size, true, 25);
        let mut unavailable = scaled(ru.max_unavailable.as_ref(), size, false, 25);
        if surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        Some((surge, unavailable.min(size)))
    };
    let now = fenceposts(&spec.strategy.clone().unwrap_or_default());
    let next = match step {
        DeploymentStep::Strategy(s) => {
            let s: k8s_openapi::api::apps::v1::DeploymentStrategy =
                serde_json::from_value(s.to_json()).unwrap_or_default();
            fenceposts(&s)
        }
        _ => now,
    };
    let surge = now.map_or(0, |f| f.0).max(next.map_or(0, |f| f.0));
    let st = d.status.clone().unwrap_or_default();
    let available =
        st.available_replicas.unwrap_or(0) == replicas && st.updated_replicas.unwrap_or(0) == replicas;
    let floor = match now {
        Some((_, unavailable)) if step.template_only(paused) && available => Some(replicas - unavailable),
        _ => None,
    };
    Bounds::Deployment {
        floor,
        ceiling: size + surge,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random_differential::program::Strategy;

    fn d(replicas: i32, strategy: serde_json::Value, paused: bool) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "paused": paused, "strategy": strategy,
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}}},
            "status": {"replicas": replicas, "updatedReplicas": replicas, "availableReplicas": replicas}
        }))
        .unwrap()
    }

    #[test]
    fn fenceposts_follow_upstream() {
        let rolling = serde_json::json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
        assert_eq!(
            deployment_bounds(&d(3, rolling.clone(), false), &DeploymentStep::Image(2)),
            Bounds::Deployment {
                floor: Some(3),
                ceiling: 4
            },
            "25% of 3: surge 1 (up), unavailable 0 (down)"
        );
        assert_eq!(
            deployment_bounds(&d(3, rolling.clone(), true), &DeploymentStep::Image(2)),
            Bounds::Deployment {
                floor: None,
                ceiling: 4
            },
            "paused: no rollout, no floor"
        );
        let zero = serde_json::json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "10%", "maxUnavailable": 0}});
        assert_eq!(
            deployment_bounds(&d(4, zero, false), &DeploymentStep::Rollback { back: 1 }),
            Bounds::Deployment {
                floor: Some(4),
                ceiling: 5
            },
            "10% of 4 rounds up to 1, and with maxUnavailable 0 every pod stays available"
        );
        let recreate = serde_json::json!({"type": "Recreate"});
        assert_eq!(
            deployment_bounds(&d(4, recreate.clone(), false), &DeploymentStep::Scale(6)),
            Bounds::Deployment {
                floor: None,
                ceiling: 6
            }
        );
        let to_rolling = DeploymentStep::Strategy(Strategy::Rolling {
            surge: Amount::Count(2),
            unavailable: Amount::Count(1),
        });
        assert_eq!(
            deployment_bounds(&d(4, recreate, false), &to_rolling),
            Bounds::Deployment {
                floor: None,
                ceiling: 6
            }
        );
    }
}

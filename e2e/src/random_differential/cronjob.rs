//! Programs over one CronJob (upstream's v2 controller, kcm-rs's `cronjob` crate): the drawn steps
//! and how each is applied.
//!
//! A schedule runs on the clock, and the two runs of a program happen minutes apart, so the
//! CronJob stays suspended except during a [`CronStep::Run`], which unsuspends it early in a minute
//! it has not scheduled yet and suspends it again once that minute's slot is handled. Under both
//! controllers, a run then sees the same due slot whatever the wall clock said. Its schedule is
//! every minute (`*/1 * * * *`): a Job's name carries its slot's minute, so a schedule of seconds
//! would start no more Jobs than this one does (`crate::cronjob_scenarios`).
//!
//! What is compared, and when a step has settled: [`super::cronjob_outcome`].

use std::time::Duration;

use k8s_openapi::{
    api::{
        batch::v1::{CronJob, Job},
        core::v1::{Event, Pod},
    },
    jiff::Timestamp,
};
use kube::api::{DeleteParams, ListParams, PostParams};
use rand::{Rng as _, rngs::StdRng, seq::IndexedRandom as _};
use serde_json::json;

use super::{
    cronjob_outcome::finished,
    execute::{Applied, fail_patch, live_pods, merge, refused, succeed_patch},
    program::{Behaviour, CRON, CronStep, Policy, Step},
};
use crate::{TestNamespace, pods::controller_uid, soak::pick};

const SCHEDULE: &str = "*/1 * * * *";
/// What `kubectl create job --from=cronjob/...` marks its Job with.
const INSTANTIATE: &str = "cronjob.kubernetes.io/instantiate";
/// The earliest second of a minute at which a run may unsuspend: a startingDeadlineSeconds of 1
/// must find the minute's slot already too old, as it does in any later second.
const EARLIEST_START: i64 = 3;
/// The latest second of a minute at which a run may unsuspend: the slot is handled and the CronJob
/// suspended again well before the next minute's slot is due.
const LATEST_START: i64 = 30;
/// The latest second by which a run must have seen what it waits for; past it, the next slot is too
/// close for the run to tell the two apart.
const HANDLED_BY: i64 = 55;
/// How long a run whose slot is not due (the deadline of 1 s) leaves the CronJob unsuspended: there
/// is nothing to wait for, and a controller that starts a Job anyway has this long to show it.
const NOT_DUE_WAIT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Run,
    Policy,
    Finish,
    DeleteJob,
    Limits,
    Manual,
}

const WEIGHTS: &[(Op, u32)] = &[
    (Op::Run, 30),
    (Op::Policy, 10),
    (Op::Finish, 25),
    (Op::DeleteJob, 10),
    (Op::Limits, 10),
    (Op::Manual, 15),
];

const POLICIES: [Policy; 3] = [Policy::Allow, Policy::Forbid, Policy::Replace];
/// Most runs in one program: each waits for a minute the CronJob has not scheduled, so a program
/// of more runs would outlast the others of its round by a minute a run.
const MAX_RUNS: usize = 2;

/// A CronJob created, run once (so that every program starts a Job), then drawn steps.
pub fn steps(rng: &mut StdRng, n: usize) -> Vec<Step> {
    let behaviour = *[
        Behaviour::Succeed,
        Behaviour::Fail(1),
        Behaviour::Forever,
        Behaviour::Forever,
    ]
    .choose(rng)
    .expect("values");
    let mut out = vec![
        CronStep::Create {
            policy: *POLICIES.choose(rng).expect("values"),
            behaviour,
            limits: rng
                .random_bool(0.5)
                .then(|| (rng.random_range(0..=2), rng.random_range(0..=2))),
            deadline: *[None, None, None, Some(1), Some(300)]
                .choose(rng)
                .expect("values"),
            time_zone: *[None, None, Some("Etc/UTC"), Some("Asia/Kolkata")]
                .choose(rng)
                .expect("values"),
        },
        CronStep::Run,
    ];
    while out.len() < n {
        let runs = out.iter().filter(|s| **s == CronStep::Run).count();
        out.push(match pick(rng, WEIGHTS) {
            Op::Run if runs >= MAX_RUNS => CronStep::Finish { succeed: true },
            Op::Run => CronStep::Run,
            Op::Policy => CronStep::Policy(*POLICIES.choose(rng).expect("values")),
            Op::Finish => CronStep::Finish {
                succeed: rng.random_bool(0.6),
            },
            Op::DeleteJob => CronStep::DeleteJob {
                newest: rng.random_bool(0.5),
            },
            Op::Limits => CronStep::Limits {
                successful: rng.random_range(0..=2),
                failed: rng.random_range(0..=2),
            },
            Op::Manual => CronStep::Manual(out.len()),
        });
    }
    out.truncate(n.max(1));
    out.into_iter().map(Step::CronJob).collect()
}

fn manifest(step: &CronStep) -> Option<CronJob> {
    let CronStep::Create {
        policy,
        behaviour,
        limits,
        deadline,
        time_zone,
    } = step
    else {
        return None;
    };
    let mut spec = json!({
        "schedule": SCHEDULE,
        "suspend": true,
        "concurrencyPolicy": policy.name(),
        "jobTemplate": {
            "metadata": {"labels": {"from": "template"}},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": behaviour.command()}]
            }}}
        }
    });
    if let Some((successful, failed)) = limits {
        spec["successfulJobsHistoryLimit"] = json!(successful);
        spec["failedJobsHistoryLimit"] = json!(failed);
    }
    if let Some(d) = deadline {
        spec["startingDeadlineSeconds"] = json!(d);
    }
    if let Some(z) = time_zone {
        spec["timeZone"] = json!(z);
    }
    serde_json::from_value(json!({"metadata": {"name": CRON}, "spec": spec})).ok()
}

/// The CronJob's Jobs, oldest first (creation, then name: steps run seconds apart).
async fn jobs(ns: &TestNamespace) -> Result<Vec<Job>, String> {
    let mut jobs = ns
        .api::<Job>()
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?
        .items;
    jobs.sort_by(|a, b| {
        let key = |j: &Job| (j.metadata.creation_timestamp.clone(), j.metadata.name.clone());
        key(a).cmp(&key(b))
    });
    Ok(jobs)
}

pub async fn apply(ns: &TestNamespace, step: &CronStep) -> Applied {
    let api = ns.api::<CronJob>();
    let spec = |s| json!({"spec": s});
    match step {
        CronStep::Create { .. } => {
            let cj = manifest(step).ok_or("a Create step makes a CronJob")?;
            api.create(&PostParams::default(), &cj)
                .await
                .map(|_| "applied".to_owned())
                .map_err(|e| refused("creating the CronJob", e))
        }
        CronStep::Run => run(ns).await,
        CronStep::Policy(p) => merge(&api, CRON, spec(json!({"concurrencyPolicy": p.name()}))).await,
        CronStep::Limits { successful, failed } => {
            let limits = json!({"successfulJobsHistoryLimit": successful, "failedJobsHistoryLimit": failed});
            merge(&api, CRON, spec(limits)).await
        }
        CronStep::Finish { succeed } => finish(ns, *succeed).await,
        CronStep::DeleteJob { newest } => {
            let jobs = jobs(ns).await?;
            let Some(j) = (if *newest { jobs.last() } else { jobs.first() }) else {
                return Ok("skipped: no Job".into());
            };
            let name = j.metadata.name.clone().unwrap_or_default();
            match ns.api::<Job>().delete(&name, &DeleteParams::background()).await {
                Ok(_) => Ok(format!(
                    "deleted the {} Job",
                    if *newest { "newest" } else { "oldest" }
                )),
                Err(e) => Err(refused("deleting a Job", e)),
            }
        }
        CronStep::Manual(k) => manual(ns, *k).await,
    }
}

/// What a run's slot comes to, from the state it starts in (upstream's `syncCronJob`): with a
/// deadline of 1 s no slot is due (upstream counts none older than the deadline as missed);
/// under Forbid with a Job in the active list the slot is skipped, with a `JobAlreadyActive` event;
/// otherwise a Job starts and the slot is recorded as `lastScheduleTime`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    NotDue,
    Skipped,
    Recorded,
}

fn expect(cj: &CronJob) -> Expect {
    let active = cj
        .status
        .as_ref()
        .and_then(|s| s.active.as_ref())
        .is_some_and(|a| !a.is_empty());
    if cj.spec.starting_deadline_seconds == Some(1) {
        Expect::NotDue
    } else if active && cj.spec.concurrency_policy.as_deref() == Some("Forbid") {
        Expect::Skipped
    } else {
        Expect::Recorded
    }
}

fn second_of(t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> i64 {
    t.map_or(0, |t| t.0.as_second())
}

/// Unsuspends the CronJob early in a minute whose slot it has not seen (after its creation and its
/// last scheduled slot), waits until the controller has done what the slot comes to ([`Expect`]),
/// and suspends it again. Suspending before the controller's status write would race it (the
/// write then conflicts, and the started Job is never listed active), so what is expected is
/// waited for, not a fixed time; a controller that does something else fails the run, naming it.
async fn run(ns: &TestNamespace) -> Applied {
    let api = ns.api::<CronJob>();
    let cj = api.get(CRON).await.map_err(|e| e.to_string())?;
    let last = |cj: &CronJob| second_of(cj.status.as_ref().and_then(|s| s.last_schedule_time.as_ref()));
    let seen = second_of(cj.metadata.creation_timestamp.as_ref()).max(last(&cj));
    let slot = loop {
        let now = Timestamp::now().as_second();
        let minute = now - now.rem_euclid(60);
        if minute > seen && (EARLIEST_START..=LATEST_START).contains(&(now - minute)) {
            break minute;
        }
        let next = if now - minute < EARLIEST_START && minute > seen {
            minute + EARLIEST_START
        } else {
            minute + 60 + EARLIEST_START
        };
        tokio::time::sleep(Duration::from_secs(u64::try_from(next - now).unwrap_or(1))).await;
    };
    let expected = expect(&cj);
    merge(&api, CRON, json!({"spec": {"suspend": false}})).await?;
    let outcome = match expected {
        Expect::NotDue => {
            tokio::time::sleep(NOT_DUE_WAIT).await;
            Ok("the slot was not due".to_owned())
        }
        Expect::Skipped => {
            wait_for_slot(slot, || async {
                let events = ns
                    .api::<Event>()
                    .list(&ListParams::default().fields("reason=JobAlreadyActive"))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((!events.items.is_empty()).then(|| "the slot was skipped".to_owned()))
            })
            .await
        }
        Expect::Recorded => {
            wait_for_slot(slot, || async {
                let recorded = last(&api.get(CRON).await.map_err(|e| e.to_string())?);
                Ok((recorded >= slot).then(|| {
                    let which = if recorded == slot {
                        "this minute's"
                    } else {
                        "a later"
                    };
                    format!("{which} slot recorded")
                }))
            })
            .await
        }
    };
    merge(&api, CRON, json!({"spec": {"suspend": true}})).await?;
    outcome
}

/// Polls `seen` until it answers, or fails the run once second [`HANDLED_BY`] of the slot's minute
/// has passed.
async fn wait_for_slot<F, Fut>(slot: i64, seen: F) -> Applied
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Option<String>, String>>,
{
    loop {
        if let Some(done) = seen().await? {
            return Ok(done);
        }
        if Timestamp::now().as_second() - slot > HANDLED_BY {
            return Err(format!(
                "the controller had not handled the slot by second {HANDLED_BY} of its minute"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The oldest unfinished Job's running pod ends, through the labels KWOK's stages read.
async fn finish(ns: &TestNamespace, succeed: bool) -> Applied {
    let jobs = jobs(ns).await?;
    let pods = live_pods(ns).await?;
    let running = jobs.iter().filter(|j| !finished(j)).find_map(|j| {
        pods.iter()
            .find(|p| controller_uid(&p.metadata) == j.metadata.uid.as_deref())
    });
    let Some(p) = running else {
        return Ok("skipped: no running pod".into());
    };
    let patch = if succeed {
        succeed_patch()
    } else {
        fail_patch(1, false)
    };
    let name = p.metadata.name.clone().unwrap_or_default();
    merge(&ns.api::<Pod>(), &name, patch).await.map(|_| {
        format!(
            "the oldest running Job's pod {}",
            if succeed { "succeeds" } else { "fails" }
        )
    })
}

/// What `kubectl create job --from=cronjob/...` does: the template's Job, owned by the CronJob as
/// its controller, marked manual.
async fn manual(ns: &TestNamespace, k: usize) -> Applied {
    let cj = ns.api::<CronJob>().get(CRON).await.map_err(|e| e.to_string())?;
    let template = cj.spec.job_template.clone();
    let mut meta = template.metadata.unwrap_or_default();
    meta.name = Some(format!("{CRON}-manual-{k}"));
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(INSTANTIATE.into(), "manual".into());
    meta.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "batch/v1".into(),
            kind: "CronJob".into(),
            name: CRON.into(),
            uid: cj.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            // kubectl leaves it unset: setting it needs the cronjobs/finalizers permission.
            block_owner_deletion: None,
        },
    ]);
    let job = Job {
        metadata: meta,
        spec: template.spec,
        status: None,
    };
    ns.api::<Job>()
        .create(&PostParams::default(), &job)
        .await
        .map(|_| format!("created manual Job {k}"))
        .map_err(|e| refused("creating a manual Job", e))
}

/// Whether the step may start a scheduled Job, and whether at most one may run then (Forbid and
/// Replace): the bounds the invariants check on every Job event.
pub fn bounds(cj: Option<&CronJob>, step: &CronStep) -> (bool, bool) {
    let policy = cj
        .and_then(|c| c.spec.concurrency_policy.clone())
        .unwrap_or_default();
    (
        matches!(step, CronStep::Run),
        matches!(policy.as_str(), "Forbid" | "Replace"),
    )
}

#[cfg(test)]
#[path = "cronjob_tests.rs"]
mod tests;

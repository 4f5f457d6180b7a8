//! The CronJob scenarios the differential suite runs, on minute schedules (`*/1 * * * *`) as
//! upstream's e2e specs are: a Job name carries its slot's minute, so a schedule of seconds starts at
//! most one Job a minute and shows no more than a minute's does. One `@every 5s` scenario checks
//! what a first slot writes, seconds after the CronJob's creation. The scenarios run side by side, so
//! the suite takes about two minutes a controller.
//!
//! Outcomes are what does not depend on where in a minute a scenario started: which Jobs and how
//! many, what each carries (controller reference, template labels, the scheduled-time annotation
//! against the Job's name), the status fields, and the distinct event reasons.

use std::time::Duration;

use futures::FutureExt as _;
use k8s_openapi::{
    api::batch::v1::{CronJob, Job},
    jiff::Timestamp,
};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::{
    TestNamespace,
    differential::{Outcome, Scenario, ScenarioFuture as Run, event_reasons},
    job_scenarios::{FOREVER, SUCCEED},
    random_differential::cronjob_outcome::{stale_active, without_missing_job},
    wait_for,
};

/// Liveness bound: two minute boundaries and the Jobs' few seconds.
const WAIT: Duration = Duration::from_secs(150);
const EVERY_MINUTE: &str = "*/1 * * * *";
const NAME: &str = "cron";
/// The scheduled-time annotation upstream writes on each Job it starts.
pub(crate) const ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

async fn create(ns: &TestNamespace, schedule: &str, command: &[&str], spec: Value) {
    let mut cj = json!({
        "metadata": {"name": NAME},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": {"labels": {"from": "template"}},
                "spec": {"template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": command}]
                }}}
            }
        }
    });
    crate::json::merge(&mut cj["spec"], spec);
    let cj: CronJob = serde_json::from_value(cj).unwrap();
    ns.api::<CronJob>()
        .create(&PostParams::default(), &cj)
        .await
        .unwrap();
}

async fn cron_job(ns: &TestNamespace) -> CronJob {
    ns.api::<CronJob>().get(NAME).await.unwrap()
}

async fn jobs(ns: &TestNamespace) -> Vec<Job> {
    let mut jobs = ns.api::<Job>().list(&ListParams::default()).await.unwrap().items;
    jobs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    jobs
}

fn active(cj: &CronJob) -> Vec<String> {
    let status = cj.status.as_ref();
    status
        .and_then(|s| s.active.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|r| r.name.clone())
        .collect()
}

/// Waits until the active list satisfies `done`; returns it.
async fn active_until(ns: &TestNamespace, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    wait_for(what, WAIT, || async {
        let names = active(&cron_job(ns).await);
        if done(&names) {
            Ok(names)
        } else {
            Err(format!("active {names:?}"))
        }
    })
    .await
}

/// What a Job the CronJob started carries, as one line: its controller, its template's label, and
/// whether the scheduled-time annotation names the minute its name does, and in which zone.
pub(crate) fn describe(job: &Job) -> String {
    describe_slot(job, Slot::OnTheMinute)
}

/// Where a schedule puts its slots against the minute a Job's name carries.
#[derive(Clone, Copy)]
enum Slot {
    /// A cron schedule: the annotation is the name's minute to the second.
    OnTheMinute,
    /// `@every` a number of seconds: the annotation is the slot's second, inside the name's minute
    /// (on it only when the slot happens to fall there, which differs from run to run).
    WithinTheMinute,
}

fn describe_slot(job: &Job, slot: Slot) -> String {
    let meta = &job.metadata;
    let owner = meta
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    let owner = owner.map(|r| format!("{}/{} blocking={:?}", r.kind, r.name, r.block_owner_deletion));
    let label = meta.labels.as_ref().and_then(|l| l.get("from")).cloned();
    let annotation = meta.annotations.as_ref().and_then(|a| a.get(ANNOTATION)).cloned();
    let minute = meta
        .name
        .as_deref()
        .and_then(|n| n.rsplit('-').next())
        .and_then(|m| m.parse::<i64>().ok());
    let parsed = annotation.as_deref().and_then(|a| a.parse::<Timestamp>().ok());
    let matches = match (parsed, minute, slot) {
        (Some(t), Some(m), Slot::OnTheMinute) => t.as_second() == m * 60,
        (Some(t), Some(m), Slot::WithinTheMinute) => t.as_second().div_euclid(60) == m,
        _ => false,
    };
    let zone = annotation.as_deref().map(|a| {
        if a.ends_with('Z') {
            "Z".to_owned()
        } else {
            a[a.len() - 6..].to_owned()
        }
    });
    let relation = match slot {
        Slot::OnTheMinute => "is the name's minute",
        Slot::WithinTheMinute => "is in the name's minute",
    };
    format!("owner {owner:?}, label {label:?}, annotation {relation}: {matches}, zone {zone:?}")
}

/// Waits until the active list names only Jobs that exist and have not finished. A sync deletes the
/// Jobs beyond the history limits or reads a finished one before it writes the status that drops
/// them, so a read between the two sees a list the controller is about to change; on a loaded
/// machine that window once held for a whole poll. A controller that never drops them fails here.
async fn settled(ns: &TestNamespace) -> CronJob {
    wait_for("the active list to name only unfinished Jobs", WAIT, || async {
        let cj = cron_job(ns).await;
        let jobs = jobs(ns).await;
        let stale = stale_active(&cj, &jobs);
        if stale.is_empty() {
            Ok(cj)
        } else {
            Err(format!("active lists {stale:?}, gone or finished"))
        }
    })
    .await
}

/// The CronJob's status as an outcome, once settled: the active count, and whether each time is set
/// and agrees with the Jobs (the last schedule is the newest Job's slot).
async fn status(ns: &TestNamespace, o: &mut Outcome) {
    let cj = settled(ns).await;
    let status = cj.status.clone().unwrap_or_default();
    o.insert("active".into(), active(&cj).len().to_string());
    let newest = jobs(ns)
        .await
        .into_iter()
        .filter_map(|j| j.metadata.annotations?.get(ANNOTATION)?.parse::<Timestamp>().ok())
        .max();
    let last = status.last_schedule_time.map(|t| t.0);
    o.insert(
        "lastScheduleTime".into(),
        match (last, newest) {
            (None, _) => "unset".into(),
            (Some(l), Some(n)) if l == n => "the newest Job's slot".into(),
            (Some(_), _) => "set, not the newest Job's slot".into(),
        },
    );
    o.insert(
        "lastSuccessfulTime set".into(),
        status.last_successful_time.is_some().to_string(),
    );
}

async fn events(ns: &TestNamespace, o: &mut Outcome) {
    stop(ns).await;
    o.insert("event reasons".into(), event_reasons(ns).await);
}

/// Suspends the CronJob, so that no later slot (a minute boundary passing while the harness collects
/// events and pods) adds a Job or an event depending on when the scenario started. Not a deletion:
/// the collector would then delete its Jobs while a controller's cache may still hold the CronJob,
/// and a sync in between records `MissingJob` for each listed one, under either controller,
/// depending on how far its CronJob cache lags (seen once under kcm-rs in three lanes).
async fn stop(ns: &TestNamespace) {
    let suspend = json!({"spec": {"suspend": true}});
    ns.api::<CronJob>()
        .patch(NAME, &PatchParams::default(), &Patch::Merge(&suspend))
        .await
        .expect("suspend the CronJob");
}

/// Waits until the first Job's pod exists: the harness counts pods ever created.
async fn first_pod(ns: &TestNamespace) {
    wait_for("the first Job's pod", WAIT, || async {
        if crate::pods::list(ns).await.is_empty() {
            Err("no pod yet")
        } else {
            Ok(())
        }
    })
    .await;
}

/// Allow, Jobs that run on: a second Job starts beside the first at the next minute.
fn allow(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(&ns, EVERY_MINUTE, FOREVER, json!({"concurrencyPolicy": "Allow"})).await;
        active_until(&ns, "two active Jobs", |a| a.len() >= 2).await;
        let all = jobs(&ns).await;
        o.insert("jobs".into(), all.len().to_string());
        o.insert("job".into(), describe(&all[0]));
        status(&ns, &mut o).await;
        events(&ns, &mut o).await;
        o
    }
    .boxed()
}

/// Forbid: the next minute's slot passes while the first Job runs, and starts nothing.
fn forbid(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(&ns, EVERY_MINUTE, FOREVER, json!({"concurrencyPolicy": "Forbid"})).await;
        active_until(&ns, "a first Job", |a| a.len() == 1).await;
        let slot = cron_job(&ns)
            .await
            .status
            .and_then(|s| s.last_schedule_time)
            .unwrap()
            .0;
        let next = slot.as_second() + 60 + 5 - Timestamp::now().as_second();
        tokio::time::sleep(Duration::from_secs(u64::try_from(next).unwrap_or(0))).await;
        o.insert("jobs a minute later".into(), jobs(&ns).await.len().to_string());
        status(&ns, &mut o).await;
        events(&ns, &mut o).await;
        o
    }
    .boxed()
}

/// Replace: the next minute's Job takes the running one's place.
fn replace(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(
            &ns,
            EVERY_MINUTE,
            FOREVER,
            json!({"concurrencyPolicy": "Replace"}),
        )
        .await;
        let first = active_until(&ns, "a first Job", |a| a.len() == 1).await;
        let second = active_until(&ns, "the first Job replaced", |a| {
            a.len() == 1 && a != first.as_slice()
        })
        .await;
        let old = ns.api::<Job>().get_opt(&first[0]).await.unwrap();
        let gone = old.is_none_or(|j| j.metadata.deletion_timestamp.is_some());
        o.insert("first job deleted".into(), gone.to_string());
        o.insert("replaced by one Job".into(), (second.len() == 1).to_string());
        status(&ns, &mut o).await;
        events(&ns, &mut o).await;
        // Left out: `MissingJob`, for the replaced Job (see `without_missing_job`).
        let reasons = without_missing_job(&o["event reasons"]);
        o.insert("event reasons".into(), reasons);
        o
    }
    .boxed()
}

/// History limits 1 and 0 with Jobs that succeed: once a second Job has finished, the first goes.
fn history(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        let limits = json!({"successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 0});
        create(&ns, EVERY_MINUTE, SUCCEED, limits).await;
        let finished = |j: &Job| {
            let conditions = j
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_deref())
                .unwrap_or_default();
            conditions
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        };
        let first = wait_for("a first finished Job", WAIT, || async {
            let all = jobs(&ns).await;
            all.iter()
                .find(|j| finished(j))
                .and_then(|j| j.metadata.name.clone())
                .ok_or("none yet")
        })
        .await;
        wait_for("the first Job deleted after a second finished", WAIT, || async {
            let all = jobs(&ns).await;
            let first_gone = all.iter().all(|j| j.metadata.name.as_deref() != Some(&first));
            let finished_now = all.iter().filter(|j| finished(j)).count();
            if first_gone && finished_now == 1 {
                Ok(())
            } else {
                Err(format!("{} jobs", all.len()))
            }
        })
        .await;
        o.insert("finished jobs kept".into(), "1".into());
        status(&ns, &mut o).await;
        events(&ns, &mut o).await;
        o
    }
    .boxed()
}

/// Suspended across a minute's slot: nothing; resumed, the missed slot starts at once.
fn suspend(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(&ns, EVERY_MINUTE, FOREVER, json!({"suspend": true})).await;
        let created = cron_job(&ns).await.metadata.creation_timestamp.unwrap().0;
        let past_slot = (created.as_second() / 60 + 1) * 60 + 3 - Timestamp::now().as_second();
        tokio::time::sleep(Duration::from_secs(u64::try_from(past_slot).unwrap_or(0))).await;
        o.insert("jobs while suspended".into(), jobs(&ns).await.len().to_string());
        let resume = json!({"spec": {"suspend": false}});
        ns.api::<CronJob>()
            .patch(NAME, &PatchParams::default(), &Patch::Merge(&resume))
            .await
            .unwrap();
        active_until(&ns, "the missed slot's Job", |a| a.len() == 1).await;
        status(&ns, &mut o).await;
        events(&ns, &mut o).await;
        o
    }
    .boxed()
}

/// A running Job deleted by someone else leaves the active list (a `MissingJob` event).
fn missing(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(&ns, EVERY_MINUTE, FOREVER, json!({"concurrencyPolicy": "Forbid"})).await;
        let first = active_until(&ns, "a first Job", |a| a.len() == 1).await;
        ns.api::<Job>()
            .delete(&first[0], &DeleteParams::background())
            .await
            .unwrap();
        active_until(&ns, "the deleted Job off the list", |a| !a.contains(&first[0])).await;
        events(&ns, &mut o).await;
        o
    }
    .boxed()
}

/// `spec.timeZone`: the annotation is in the CronJob's zone.
fn time_zone(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(&ns, EVERY_MINUTE, FOREVER, json!({"timeZone": "Asia/Kolkata"})).await;
        active_until(&ns, "a first Job", |a| a.len() == 1).await;
        first_pod(&ns).await;
        o.insert("job".into(), describe(&jobs(&ns).await[0]));
        stop(&ns).await;
        o
    }
    .boxed()
}

/// `@every 5s`: the first slot, five seconds after the CronJob's creation.
fn every_seconds(ns: TestNamespace) -> Run {
    async move {
        let mut o = Outcome::new();
        create(&ns, "@every 5s", FOREVER, json!({"concurrencyPolicy": "Forbid"})).await;
        active_until(&ns, "a first Job", |a| a.len() == 1).await;
        let cj = cron_job(&ns).await;
        let created = cj.metadata.creation_timestamp.unwrap().0;
        let last = cj.status.and_then(|s| s.last_schedule_time).unwrap().0;
        o.insert(
            "first slot after creation (s)".into(),
            (last.as_second() - created.as_second()).to_string(),
        );
        let job = describe_slot(&jobs(&ns).await[0], Slot::WithinTheMinute);
        o.insert("job".into(), job);
        first_pod(&ns).await;
        stop(&ns).await;
        o
    }
    .boxed()
}

/// Every CronJob scenario.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("cron-allow", allow),
        Scenario::new("cron-forbid", forbid),
        Scenario::new("cron-replace", replace),
        Scenario::new("cron-history", history),
        Scenario::new("cron-suspend", suspend),
        Scenario::new("cron-missing-job", missing),
        Scenario::new("cron-time-zone", time_zone),
        Scenario::new("cron-every-5s", every_seconds),
    ]
}

//! When a step is over: the projection is taken only once the controllers have nothing left to do,
//! so that it does not depend on how fast either of them is. "Nothing left" is a predicate per kind
//! (a rollout complete or, paused, every ReplicaSet at its size; a Job finished, suspended, or with
//! as many Ready pods as it wants), held with an unchanged projection for [`QUIET`]. KWOK pods are
//! Ready at once, so only minReadySeconds and a Job's re-creation backoff make a step wait.

use std::time::Duration;

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    batch::v1::Job,
    core::v1::Pod,
};
use kube::api::ListParams;
use tokio::time::Instant;

use super::{
    program::{DEPLOYMENT, JOB, Kind},
    projection::{Snapshot, project, revision, tracked},
};
use crate::{
    TestNamespace,
    differential::Outcome,
    pods::{is_ready, phase},
};

/// How long the projection must stay the same, settled, to be taken.
pub const QUIET: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(500);
/// A step's liveness bound: a failed pod's re-creation waits 10 s, then 20 s, and minReadySeconds
/// (at most 1 s here) delays each round of a rollout of at most 8 pods; a step that needs longer is
/// stuck.
pub const STEP_WAIT: Duration = Duration::from_secs(120);

pub async fn read(ns: &TestNamespace, kind: Kind) -> Result<Snapshot, String> {
    let e = |e: kube::Error| e.to_string();
    let lp = ListParams::default();
    let mut s = Snapshot {
        pods: ns.api::<Pod>().list(&lp).await.map_err(e)?.items,
        ..Snapshot::default()
    };
    match kind {
        Kind::Deployment => {
            s.deployment = ns.api::<Deployment>().get_opt(DEPLOYMENT).await.map_err(e)?;
            s.replica_sets = ns.api::<ReplicaSet>().list(&lp).await.map_err(e)?.items;
        }
        Kind::Job => s.job = ns.api::<Job>().get_opt(JOB).await.map_err(e)?,
        Kind::ReplicationController => {
            s.replication_controller = ns.api().get_opt(super::program::RC).await.map_err(e)?;
        }
        Kind::CronJob => {
            s.cron_job = ns.api().get_opt(super::program::CRON).await.map_err(e)?;
            s.jobs = ns.api::<Job>().list(&lp).await.map_err(e)?.items;
        }
    }
    Ok(s)
}

/// Waits until the program's object has settled and its projection (with `extra`'s facts, such as
/// the pods ever created) has not changed for [`QUIET`]; returns it, or what was still moving after
/// [`STEP_WAIT`].
pub async fn settle(ns: &TestNamespace, kind: Kind, extra: impl Fn() -> Outcome) -> Result<Outcome, String> {
    let start = Instant::now();
    let mut stable: Option<(Outcome, Instant)> = None;
    loop {
        let seen = match read(ns, kind).await {
            Ok(s) => {
                let mut o = project(&s, kind);
                o.extend(extra());
                let problems = unsettled(&s, kind);
                if problems.is_empty() {
                    Ok(o)
                } else {
                    Err(problems.join("; "))
                }
            }
            Err(e) => Err(e),
        };
        match (seen, stable.take()) {
            (Ok(o), Some((before, since))) if o == before => {
                if since.elapsed() >= QUIET {
                    return Ok(o);
                }
                stable = Some((o, since));
            }
            (Ok(o), _) => stable = Some((o, Instant::now())),
            (Err(problems), _) if start.elapsed() >= STEP_WAIT => {
                return Err(format!("not settled after {STEP_WAIT:?}: {problems}"));
            }
            (Err(_), _) => {}
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What keeps the snapshot from being settled; empty when it is.
pub fn unsettled(s: &Snapshot, kind: Kind) -> Vec<String> {
    let mut out = Vec::new();
    for p in &s.pods {
        let name = p.metadata.name.as_deref().unwrap_or("?");
        if p.metadata.deletion_timestamp.is_some() {
            out.push(format!("pod {name} being deleted"));
        } else if matches!(phase(p), "Succeeded" | "Failed") {
            if tracked(p) {
                out.push(format!("finished pod {name} still tracked"));
            }
        } else if phase(p) != "Running" || !is_ready(p) {
            out.push(format!("pod {name} not Ready yet"));
        }
    }
    match kind {
        Kind::Deployment => deployment_unsettled(s, &mut out),
        Kind::Job => job_unsettled(s, &mut out),
        Kind::ReplicationController => super::replication::unsettled(s, &mut out),
        Kind::CronJob => super::cronjob_outcome::unsettled(s, &mut out),
    }
    out
}

fn deployment_unsettled(s: &Snapshot, out: &mut Vec<String>) {
    let Some(d) = &s.deployment else {
        out.push("no Deployment".into());
        return;
    };
    let spec = d.spec.clone().unwrap_or_default();
    let (want, paused) = (spec.replicas.unwrap_or(1), spec.paused.unwrap_or(false));
    let st = d.status.clone().unwrap_or_default();
    if st.observed_generation != d.metadata.generation {
        out.push("the Deployment's generation not observed".into());
    }
    let mut total = 0;
    let mut new_size = None;
    for rs in &s.replica_sets {
        let size = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let rst = rs.status.clone().unwrap_or_default();
        let rev = revision(&rs.metadata);
        if rst.observed_generation != rs.metadata.generation
            || rst.replicas != size
            || rst.ready_replicas.unwrap_or(0) != size
            || rst.available_replicas.unwrap_or(0) != size
        {
            out.push(format!("ReplicaSet rev {rev} not at its size {size}: {rst:?}"));
        }
        total += size;
        if rev == revision(&d.metadata) {
            new_size = Some(size);
        }
    }
    let pods = s.pods.iter().filter(|p| crate::soak::is_active(p)).count();
    if i32::try_from(pods).ok() != Some(total) {
        out.push(format!("{pods} live pods for ReplicaSets of {total} in all"));
    }
    for (field, v) in [
        ("replicas", st.replicas),
        ("readyReplicas", st.ready_replicas),
        ("availableReplicas", st.available_replicas),
    ] {
        if v.unwrap_or(0) != total {
            out.push(format!("status.{field} {v:?}, ReplicaSets {total}"));
        }
    }
    let progressing = st
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Progressing")
        .and_then(|c| c.reason.clone())
        .unwrap_or_default();
    if paused {
        if progressing != "DeploymentPaused" {
            out.push(format!("paused, Progressing reason {progressing}"));
        }
    } else {
        if new_size != Some(want) || total != want || st.updated_replicas.unwrap_or(0) != want {
            out.push(format!(
                "rollout not complete: new ReplicaSet at {new_size:?}, {total} in all, updated {:?}, want {want}",
                st.updated_replicas
            ));
        }
        if progressing != "NewReplicaSetAvailable" {
            out.push(format!("Progressing reason {progressing}"));
        }
    }
}

/// How many indexes an index string ("0,2-4") names.
pub fn index_count(s: Option<&str>) -> i32 {
    s.unwrap_or("")
        .split(',')
        .filter(|r| !r.is_empty())
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<i32>().unwrap_or(0) - a.parse::<i32>().unwrap_or(0) + 1,
            None => 1,
        })
        .sum()
}

fn has(j: &Job, type_: &str) -> bool {
    j.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == type_ && c.status == "True")
}

fn job_unsettled(s: &Snapshot, out: &mut Vec<String>) {
    let Some(j) = &s.job else {
        // Deleted: what its deletion leaves (orphans or nothing) must be left alone by now.
        if let Some(p) = s
            .pods
            .iter()
            .find(|p| crate::pods::controller_uid(&p.metadata).is_some() || tracked(p))
        {
            let name = p.metadata.name.as_deref().unwrap_or("?");
            out.push(format!("pod {name} still owned or tracked, its Job gone"));
        }
        return;
    };
    if j.metadata.deletion_timestamp.is_some() {
        out.push("the Job being deleted".into());
        return;
    }
    let spec = j.spec.clone().unwrap_or_default();
    if (has(j, "Complete") || has(j, "Failed")) && spec.ttl_seconds_after_finished.is_some() {
        // At most 2 s: the TTL-after-finished controller deletes it (in the foreground) soon.
        out.push("finished with a TTL, not yet deleted".into());
        return;
    }
    let st = j.status.clone().unwrap_or_default();
    let uncounted = st.uncounted_terminated_pods.as_ref().map_or(0, |u| {
        u.succeeded.iter().flatten().count() + u.failed.iter().flatten().count()
    });
    if uncounted > 0 || st.terminating.unwrap_or(0) > 0 {
        out.push(format!("{uncounted} uncounted, {:?} terminating", st.terminating));
    }
    let live = i32::try_from(s.pods.iter().filter(|p| crate::soak::is_active(p)).count()).unwrap_or(i32::MAX);
    let active = st.active.unwrap_or(0);
    let want = if has(j, "Complete") || has(j, "Failed") {
        0
    } else if has(j, "FailureTarget") || has(j, "SuccessCriteriaMet") {
        out.push("the Job finishing".into());
        return;
    } else if spec.suspend.unwrap_or(false) {
        if !has(j, "Suspended") {
            out.push("suspend not observed".into());
        }
        0
    } else {
        let completions = spec.completions.unwrap_or(1);
        let remaining = if spec.completion_mode.as_deref() == Some("Indexed") {
            completions
                - index_count(st.completed_indexes.as_deref())
                - index_count(st.failed_indexes.as_deref())
        } else {
            completions - st.succeeded.unwrap_or(0)
        };
        if remaining <= 0 {
            out.push("every completion done, the Job not finished".into());
        }
        spec.parallelism.unwrap_or(1).min(remaining.max(0))
    };
    if active != want || live != want || st.ready.unwrap_or(0) != want {
        out.push(format!(
            "active {active}, ready {:?}, {live} live pods; want {want}",
            st.ready
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_strings_count_their_indexes() {
        assert_eq!(index_count(None), 0);
        assert_eq!(index_count(Some("")), 0);
        assert_eq!(index_count(Some("0")), 1);
        assert_eq!(index_count(Some("0,2-4,7")), 5);
    }

    fn job(spec: serde_json::Value, status: serde_json::Value) -> Snapshot {
        Snapshot {
            job: Some(
                serde_json::from_value(serde_json::json!({
                    "metadata": {"name": "job", "uid": "j"},
                    "spec": spec, "status": status
                }))
                .unwrap(),
            ),
            ..Snapshot::default()
        }
    }

    /// A Job waiting out a re-creation backoff has fewer pods than it wants: not settled, though
    /// nothing changes for 10 s.
    #[test]
    fn a_job_in_backoff_is_not_settled() {
        let spec = serde_json::json!({"completions": 2, "parallelism": 2,
            "template": {"spec": {"containers": []}}});
        let s = job(
            spec.clone(),
            serde_json::json!({"active": 1, "ready": 1, "failed": 1}),
        );
        assert!(!unsettled(&s, Kind::Job).is_empty());
        let done = serde_json::json!({"failed": 2, "conditions": [
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]});
        assert_eq!(unsettled(&job(spec, done), Kind::Job), Vec::<String>::new());
    }
}

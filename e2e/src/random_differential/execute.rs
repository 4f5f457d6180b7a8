//! Applying a step to the cluster. The step says what to do; which object it acts on is picked from
//! the settled state by rules that choose equivalent objects under both controllers (a ReplicaSet
//! by revision, a Job's pod by completion index; pods of one ReplicaSet, or of a NonIndexed Job, are
//! interchangeable once settled), never by name or at random.

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    batch::v1::Job,
    core::v1::Pod,
};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use serde_json::{Value, json};

use super::{
    program::{DEPLOYMENT, DeploymentStep, JOB, JobStep, Propagation, Step},
    projection::{INDEX, revision},
};
use crate::TestNamespace;

/// What the step did ("applied", or why there was nothing to act on), compared with the projection;
/// `Err` when the API server refused a write, which means the generator is wrong (or, for a 422,
/// that the harness wrote an invalid object and would be counted as a controller's).
pub type Applied = Result<String, String>;

const APPLIED: &str = "applied";

pub async fn apply(ns: &TestNamespace, step: &Step) -> Applied {
    match step {
        Step::Deployment(s) => deployment(ns, s).await,
        Step::Job(s) => job(ns, s).await,
        Step::ReplicationController(s) => super::replication::apply(ns, s).await,
        Step::CronJob(s) => super::cronjob::apply(ns, s).await,
    }
}

pub(super) fn refused(what: &str, e: kube::Error) -> String {
    format!("{what}: the API server refused it: {e}")
}

pub(super) async fn merge<K>(api: &kube::Api<K>, name: &str, patch: Value) -> Applied
where
    K: Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| APPLIED.to_owned())
        .map_err(|e| refused(&format!("patching {name} with {patch}"), e))
}

async fn deployment(ns: &TestNamespace, step: &DeploymentStep) -> Applied {
    let api = ns.api::<Deployment>();
    let spec = |s: Value| json!({"spec": s});
    match step {
        DeploymentStep::Create {
            replicas,
            strategy,
            min_ready_seconds,
            history_limit,
        } => {
            let mut extra = json!({"strategy": strategy.to_json(), "minReadySeconds": min_ready_seconds});
            if let Some(h) = history_limit {
                extra["revisionHistoryLimit"] = json!(h);
            }
            let d = crate::deployment_scenarios::deployment_manifest(DEPLOYMENT, *replicas, "nginx:1", extra);
            api.create(&PostParams::default(), &d)
                .await
                .map(|_| APPLIED.to_owned())
                .map_err(|e| refused("creating the Deployment", e))
        }
        DeploymentStep::Scale(n) => merge(&api, DEPLOYMENT, spec(json!({"replicas": n}))).await,
        DeploymentStep::Image(n) => {
            let containers = json!([{"name": "c", "image": format!("nginx:{n}")}]);
            merge(
                &api,
                DEPLOYMENT,
                spec(json!({"template": {"spec": {"containers": containers}}})),
            )
            .await
        }
        DeploymentStep::Strategy(s) => merge(&api, DEPLOYMENT, spec(json!({"strategy": s.to_json()}))).await,
        DeploymentStep::Pause(p) => merge(&api, DEPLOYMENT, spec(json!({"paused": p}))).await,
        DeploymentStep::MinReadySeconds(n) => {
            merge(&api, DEPLOYMENT, spec(json!({"minReadySeconds": n}))).await
        }
        DeploymentStep::RevisionHistoryLimit(n) => {
            merge(&api, DEPLOYMENT, spec(json!({"revisionHistoryLimit": n}))).await
        }
        DeploymentStep::Rollback { back } => rollback(ns, *back).await,
        DeploymentStep::DeletePods(n) => {
            let mut pods = live_pods(ns).await?;
            pods.truncate(*n);
            if pods.is_empty() {
                return Ok("skipped: no pod".into());
            }
            for p in &pods {
                delete_pod(ns, p).await?;
            }
            Ok(format!("deleted {} pods", pods.len()))
        }
        DeploymentStep::DeleteReplicaSet { newest } => {
            let rss = owned_replica_sets(ns).await?;
            let rs = if *newest { rss.last() } else { rss.first() };
            let Some(rs) = rs else {
                return Ok("skipped: no ReplicaSet".into());
            };
            let rev = revision(&rs.metadata);
            let name = rs.metadata.name.clone().unwrap_or_default();
            match ns
                .api::<ReplicaSet>()
                .delete(&name, &DeleteParams::background())
                .await
            {
                Ok(_) => Ok(format!("deleted the ReplicaSet of revision {rev}")),
                Err(e) => Err(refused("deleting a ReplicaSet", e)),
            }
        }
    }
}

/// The Deployment's ReplicaSets, oldest revision first.
async fn owned_replica_sets(ns: &TestNamespace) -> Result<Vec<ReplicaSet>, String> {
    let d = ns
        .api::<Deployment>()
        .get(DEPLOYMENT)
        .await
        .map_err(|e| e.to_string())?;
    let mut rss: Vec<ReplicaSet> = ns
        .api::<ReplicaSet>()
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?
        .items
        .into_iter()
        .filter(|rs| crate::pods::controller_uid(&rs.metadata) == d.metadata.uid.as_deref())
        .collect();
    rss.sort_by_key(|rs| revision(&rs.metadata));
    Ok(rss)
}

/// What `kubectl rollout undo --to-revision` does: refuse while paused, skip when the template
/// already matches, else write the older ReplicaSet's template (without its pod-template-hash label)
/// back into the Deployment. kubectl also copies the ReplicaSet's own annotations; these
/// Deployments have none to copy.
async fn rollback(ns: &TestNamespace, back: usize) -> Applied {
    let d = ns
        .api::<Deployment>()
        .get(DEPLOYMENT)
        .await
        .map_err(|e| e.to_string())?;
    let spec = d.spec.clone().unwrap_or_default();
    if spec.paused.unwrap_or(false) {
        return Ok("refused: paused (as kubectl refuses)".into());
    }
    let current = revision(&d.metadata);
    let mut older: Vec<ReplicaSet> = owned_replica_sets(ns)
        .await?
        .into_iter()
        .filter(|rs| revision(&rs.metadata) < current)
        .collect();
    older.reverse();
    let Some(target) = older.get(back.saturating_sub(1)).or(older.last()) else {
        return Ok("skipped: no older revision".into());
    };
    let rev = revision(&target.metadata);
    let mut template = target
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove("pod-template-hash");
    }
    if serde_json::to_value(&template).ok() == serde_json::to_value(&spec.template).ok() {
        return Ok(format!("skipped: the template already matches revision {rev}"));
    }
    let template = serde_json::to_value(&template).map_err(|e| e.to_string())?;
    merge(
        &ns.api::<Deployment>(),
        DEPLOYMENT,
        json!({"spec": {"template": template}}),
    )
    .await
    .map(|_| format!("rolled back to revision {rev}"))
}

/// Live pods (not finished, not being deleted, running), by completion index, then name.
pub(super) async fn live_pods(ns: &TestNamespace) -> Result<Vec<Pod>, String> {
    let mut pods: Vec<Pod> = ns
        .api::<Pod>()
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?
        .items
        .into_iter()
        .filter(|p| crate::soak::is_active(p) && crate::pods::phase(p) == "Running")
        .collect();
    let index = |p: &Pod| -> i64 {
        p.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(INDEX))
            .and_then(|i| i.parse().ok())
            .unwrap_or(-1)
    };
    pods.sort_by(|a, b| (index(a), &a.metadata.name).cmp(&(index(b), &b.metadata.name)));
    Ok(pods)
}

pub(super) async fn delete_pod(ns: &TestNamespace, p: &Pod) -> Result<(), String> {
    let name = p.metadata.name.clone().unwrap_or_default();
    match ns.api::<Pod>().delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(refused(&format!("deleting pod {name}"), e)),
    }
}

async fn job(ns: &TestNamespace, step: &JobStep) -> Applied {
    let api = ns.api::<Job>();
    match step {
        JobStep::Create(shape) => {
            let command = shape.behaviour.command();
            let command: Vec<&str> = command.iter().map(String::as_str).collect();
            let j = crate::job_scenarios::job_manifest(JOB, &command, shape.spec());
            api.create(&PostParams::default(), &j)
                .await
                .map(|_| APPLIED.to_owned())
                .map_err(|e| refused("creating the Job", e))
        }
        JobStep::Suspend(s) => merge(&api, JOB, json!({"spec": {"suspend": s}})).await,
        JobStep::Parallelism(n) => merge(&api, JOB, json!({"spec": {"parallelism": n}})).await,
        JobStep::Ttl(seconds) => {
            merge(&api, JOB, json!({"spec": {"ttlSecondsAfterFinished": seconds}})).await
        }
        JobStep::Delete(p) => {
            let propagation_policy = Some(match p {
                Propagation::Foreground => PropagationPolicy::Foreground,
                Propagation::Background => PropagationPolicy::Background,
                Propagation::Orphan => PropagationPolicy::Orphan,
            });
            let dp = DeleteParams {
                propagation_policy,
                ..DeleteParams::default()
            };
            api.delete(JOB, &dp)
                .await
                .map(|_| APPLIED.to_owned())
                .map_err(|e| refused("deleting the Job", e))
        }
        JobStep::FailPod { which, .. } | JobStep::SucceedPod { which } | JobStep::DeletePod { which } => {
            let pods = live_pods(ns).await?;
            if pods.is_empty() {
                return Ok("skipped: no running pod".into());
            }
            let p = &pods[which % pods.len()];
            let index = p
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(INDEX))
                .map_or("a pod".to_owned(), |i| format!("the pod of index {i}"));
            let name = p.metadata.name.clone().unwrap_or_default();
            let patch = match step {
                JobStep::DeletePod { .. } => {
                    delete_pod(ns, p).await?;
                    return Ok(format!("deleted {index}"));
                }
                JobStep::SucceedPod { .. } => succeed_patch(),
                JobStep::FailPod {
                    exit_code,
                    disruption,
                    ..
                } => fail_patch(*exit_code, *disruption),
                _ => unreachable!("pod steps only"),
            };
            merge(&ns.api::<Pod>(), &name, patch)
                .await
                .map(|_| format!("{index} patched"))
        }
    }
}

/// The running pod ends Succeeded, through the label KWOK's stages read.
pub(super) fn succeed_patch() -> Value {
    json!({
        "metadata": {"labels": {"kcm-rs.test/outcome": "succeed"},
                     "annotations": {"kcm-rs.test/after": "200ms"}}
    })
}

/// The ignore-disruption scenario's patch (job_scenarios): the running pod ends Failed with the
/// exit code, with the DisruptionTarget condition if asked.
pub(super) fn fail_patch(exit_code: i32, disruption: bool) -> Value {
    let mut labels = json!({"kcm-rs.test/outcome": "fail"});
    if disruption {
        labels["kcm-rs.test/condition"] = json!("DisruptionTarget");
    }
    json!({
        "metadata": {
            "labels": labels,
            "annotations": {"kcm-rs.test/terminal": "true", "kcm-rs.test/exit-code": exit_code.to_string(),
                            "kcm-rs.test/after": "200ms"}
        }
    })
}

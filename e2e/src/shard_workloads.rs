//! The workloads and the guards the scale-out suites share: in each namespace one object for each of
//! the six controllers (a Deployment, a ReplicaSet and a ReplicationController scaled up, a Job, a
//! Job deleted once finished, a CronJob), awaited; a record of every pod ever created per namespace
//! (a pod created twice for one missing replica, by two replicas acting on one namespace, shows as
//! one more); the API server restarted with or without `ShardedListAndWatch` and the write audit.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use informer::Layout;
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    batch::v1::{CronJob, Job},
    coordination::v1::Lease,
    core::v1::{Namespace, Pod, ReplicationController},
};
use kube::{
    Api, ResourceExt as _,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use parking_lot::Mutex;
use serde_json::json;

use crate::{
    Cluster, KcmRs,
    deployment_scenarios::deployment_manifest,
    job_scenarios::{FOREVER, job_manifest},
    replicaset_scenarios::{Replicas as _, rs_manifest},
    wait_for,
};

/// Each namespace: a Deployment, a ReplicaSet and a ReplicationController scaled from 1 to 3, a Job
/// of 2 completions, a Job of one pod deleted once finished (`ttlSecondsAfterFinished: 0`), and a
/// CronJob every 5 s whose one Job runs on (`Forbid`).
pub const SCALED_TO: i32 = 3;
pub const JOB_COMPLETIONS: i32 = 2;
/// The pods each namespace needs in all, the CronJob's aside (see [`pod_recorder`]).
pub const PODS_PER_NAMESPACE: usize = 3 * SCALED_TO as usize + JOB_COMPLETIONS as usize + 1;
/// The CronJob's Jobs are named after it and their slot.
const CRON_JOB_PREFIX: &str = "cron-";
const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Pods ever added, by namespace: UID to a line saying which pod it was (name, controller, creation
/// time), for the failure message of [`converged_exactly`].
pub type PodsSeen = Arc<Mutex<HashMap<String, BTreeMap<String, String>>>>;

/// `hack/cluster.sh sharding <gate> --audit-writes` now, `sharding off` when dropped, also when the
/// test fails, so the suites after it in the lane find the API server as it was started.
#[derive(Debug)]
pub struct GateGuard(Cluster);

impl GateGuard {
    pub fn set(cluster: &Cluster, gate: &str) -> Self {
        cluster.hack(&["sharding", gate, "--audit-writes"]);
        GateGuard(cluster.clone())
    }
}

impl Drop for GateGuard {
    fn drop(&mut self) {
        if let Err(e) = self.0.try_hack(&["sharding", "off"]) {
            eprintln!("warning: restoring the API server without ShardedListAndWatch: {e}");
        }
    }
}

/// The `ShardedListAndWatch` settings a scale-out suite runs under, in order: `KCM_RS_SHARD_GATES`
/// (`on`, `off`, or `on,off`) if set, else `default`.
pub fn gates(default: &str) -> Vec<String> {
    let list = std::env::var("KCM_RS_SHARD_GATES").unwrap_or_else(|_| default.to_owned());
    let gates: Vec<String> = list.split(',').map(|g| g.trim().to_owned()).collect();
    assert!(
        gates.iter().all(|g| g == "on" || g == "off"),
        "KCM_RS_SHARD_GATES must list on and off only: {list:?}"
    );
    gates
}

/// Records the UID of every pod ever added by a controller in namespaces whose name holds `tag`, by
/// namespace (a pod a test made itself has no controller).
pub async fn pod_recorder(
    cluster: &Cluster,
    tag: &str,
    seen: PodsSeen,
) -> (informer::SharedInformer<Pod>, tokio_util::sync::CancellationToken) {
    let factory = informer::SharedInformerFactory::new(cluster.client.clone());
    let pods = factory.namespaced::<Pod>(informer::InformerOptions::default());
    let tag = tag.to_owned();
    let _registration = pods.add_event_handler(
        informer::HandlerFns::new().on_add(move |p: &Arc<Pod>, _| {
            let ns = p.namespace().unwrap_or_default();
            let controlled = p.owner_references().iter().any(|o| o.controller == Some(true));
            // A Forbid CronJob whose first Job's status write was lost with a killed replica
            // starts a second at its next slot, under upstream too: its pods are not counted.
            if controlled && !of_cron_job(p) && ns.contains(&tag) {
                seen.lock()
                    .entry(ns)
                    .or_default()
                    .insert(p.uid().unwrap_or_default(), describe(p));
            }
        }),
        None,
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    factory.start(&cancel);
    assert!(informer::wait_for_cache_sync(&cancel, &[&pods]).await);
    (pods, cancel)
}

pub async fn create_workloads(cluster: &Cluster, ns: &str) {
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let pp = PostParams::default();
    let client = cluster.client.clone();
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&pp, &deployment_manifest("web", 1, "nginx", json!({})))
        .await
        .unwrap();
    Api::<ReplicaSet>::namespaced(client.clone(), ns)
        .create(&pp, &rs_manifest("rs", 1, 0))
        .await
        .unwrap();
    let job = job_manifest(
        "job",
        &["sh", "-c", "exit 0"],
        json!({"completions": JOB_COMPLETIONS, "parallelism": 1}),
    );
    Api::<Job>::namespaced(client.clone(), ns)
        .create(&pp, &job)
        .await
        .unwrap();
    Api::<ReplicationController>::namespaced(client.clone(), ns)
        .create(&pp, &ReplicationController::manifest("rc", 1, 0))
        .await
        .unwrap();
    let ttl = job_manifest(
        "ttl",
        &["sh", "-c", "exit 0"],
        json!({"ttlSecondsAfterFinished": 0}),
    );
    Api::<Job>::namespaced(client.clone(), ns)
        .create(&pp, &ttl)
        .await
        .unwrap();
    let cron: CronJob = serde_json::from_value(json!({
        "metadata": {"name": "cron"},
        "spec": {
            "schedule": "@every 5s",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": FOREVER}]
            }}}}
        }
    }))
    .unwrap();
    Api::<CronJob>::namespaced(client, ns)
        .create(&pp, &cron)
        .await
        .unwrap();
}

pub async fn scale(cluster: &Cluster, ns: &str) {
    let patch = json!({"spec": {"replicas": SCALED_TO}});
    let pp = PatchParams::default();
    Api::<Deployment>::namespaced(cluster.client.clone(), ns)
        .patch("web", &pp, &Patch::Merge(&patch))
        .await
        .unwrap();
    Api::<ReplicaSet>::namespaced(cluster.client.clone(), ns)
        .patch("rs", &pp, &Patch::Merge(&patch))
        .await
        .unwrap();
    Api::<ReplicationController>::namespaced(cluster.client.clone(), ns)
        .patch("rc", &pp, &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// The Deployment, the ReplicaSet and the ReplicationController at 3 ready pods, the Job complete
/// and none of its pods holding the tracking finalizer, the finished Job with a TTL deleted, the
/// CronJob with its Job.
pub async fn converged(cluster: &Cluster, ns: &str) {
    let client = cluster.client.clone();
    wait_for(
        &format!("namespace {ns} to converge"),
        Duration::from_secs(180),
        || async {
            let e = |e: kube::Error| e.to_string();
            let d = Api::<Deployment>::namespaced(client.clone(), ns)
                .get("web")
                .await
                .map_err(e)?;
            let available = d.status.and_then(|s| s.available_replicas).unwrap_or(0);
            let rs = Api::<ReplicaSet>::namespaced(client.clone(), ns)
                .get("rs")
                .await
                .map_err(e)?;
            let ready = rs.status.and_then(|s| s.ready_replicas).unwrap_or(0);
            let job = Api::<Job>::namespaced(client.clone(), ns)
                .get("job")
                .await
                .map_err(e)?;
            let succeeded = job.status.and_then(|s| s.succeeded).unwrap_or(0);
            let rc = Api::<ReplicationController>::namespaced(client.clone(), ns)
                .get("rc")
                .await
                .map_err(e)?;
            let rc_ready = rc.status.and_then(|s| s.ready_replicas).unwrap_or(0);
            let ttl_gone = Api::<Job>::namespaced(client.clone(), ns)
                .get_opt("ttl")
                .await
                .map_err(e)?
                .is_none();
            let cron = Api::<CronJob>::namespaced(client.clone(), ns)
                .get("cron")
                .await
                .map_err(e)?;
            let cron_active = cron.status.and_then(|s| s.active).map_or(0, |a| a.len());
            let pods = Api::<Pod>::namespaced(client.clone(), ns)
                .list(&ListParams::default())
                .await
                .map_err(e)?;
            // The CronJob's Job runs on, its pod keeping the finalizer.
            let tracked = pods
                .items
                .iter()
                .filter(|p| !of_cron_job(p) && p.finalizers().iter().any(|f| f == TRACKING_FINALIZER))
                .count();
            let done = available == SCALED_TO
                && ready == SCALED_TO
                && rc_ready == SCALED_TO
                && succeeded == JOB_COMPLETIONS
                && ttl_gone
                && cron_active == 1
                && tracked == 0;
            if done {
                Ok(())
            } else {
                Err(format!(
                    "deployment {available} available, replicaset {ready} ready, replication controller \
                     {rc_ready} ready, job {succeeded} succeeded, TTL job gone: {ttl_gone}, cron job \
                     {cron_active} active, {tracked} pods with the tracking finalizer"
                ))
            }
        },
    )
    .await;
}

/// Whether the pod is of one of the CronJob's Jobs.
fn of_cron_job(p: &Pod) -> bool {
    p.labels()
        .get("batch.kubernetes.io/job-name")
        .is_some_and(|j| j.starts_with(CRON_JOB_PREFIX))
}

/// A recorded pod as the failure message of [`converged_exactly`] names it.
fn describe(p: &Pod) -> String {
    let owner = p
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
        .map(|o| format!("{}/{}", o.kind, o.name))
        .unwrap_or_default();
    let created = p
        .creation_timestamp()
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    format!("{} of {owner}, created {created}", p.name_any())
}

/// Every namespace of `names` converged, each having seen exactly [`PODS_PER_NAMESPACE`] pods, or
/// more by no more than the pod creates whose outcome their sender did not learn: those the server
/// answered 504 there ([`crate::timed_out_creates`]), and those a replica dropped unanswered when its
/// shard's write window closed while the server applied them ([`crate::lost_creates`]). Such a create may still have made its pod, and
/// the controller made another, as upstream's does after any failed create. A pod made twice by two
/// replicas writing one namespace has no such failure to account for it.
pub async fn converged_exactly(cluster: &Cluster, seen: &PodsSeen, names: &[String]) {
    for ns in names {
        converged(cluster, ns).await;
    }
    pods_exactly(cluster, seen, names);
}

/// The count check of [`converged_exactly`], for a test that checks the audit's terms first (a write
/// outside its sender's term explains an extra pod better than the count does).
pub fn pods_exactly(cluster: &Cluster, seen: &PodsSeen, names: &[String]) {
    let log = std::fs::read_to_string(cluster.run_dir.join("logs/audit-writes.log")).unwrap_or_default();
    let timed_out = crate::timed_out_creates(&log, "pods");
    let replica_logs = replica_logs(cluster);
    let seen = seen.lock();
    let mut wrong = BTreeMap::new();
    for ns in names {
        let n = seen.get(ns).map_or(0, BTreeMap::len);
        let may_have_made = timed_out.get(ns).copied().unwrap_or(0)
            + crate::lost_creates(&log, &replica_logs, ns, "/api/v1", "pods");
        if n < PODS_PER_NAMESPACE || n > PODS_PER_NAMESPACE + may_have_made {
            wrong.insert(ns, (n, may_have_made));
        } else if n > PODS_PER_NAMESPACE {
            println!(
                "{ns}: {n} pods, {} beyond the specs after {may_have_made} creates answered 504 or \
                 dropped unanswered",
                n - PODS_PER_NAMESPACE
            );
        }
    }
    // Which pods, and who sent which create when: enough to tell a second writer from a create
    // retried after a lost answer without the run's logs.
    let mut detail = String::new();
    for ns in wrong.keys() {
        detail.push_str(&format!("\n{ns}, pods seen:\n"));
        for pod in seen.get(*ns).into_iter().flat_map(BTreeMap::values) {
            detail.push_str(&format!("  {pod}\n"));
        }
        detail.push_str("pod creates the API server audited there:\n");
        for create in crate::creates_in(&log, "pods", ns) {
            detail.push_str(&format!("  {create}\n"));
        }
    }
    assert!(
        wrong.is_empty(),
        "pods ever created per namespace (and pod creates answered 504 or dropped unanswered there), expected \
         {PODS_PER_NAMESPACE}: {wrong:?}{detail}"
    );
}

/// The text of every kcm-rs log of the run (the killed replicas' too).
fn replica_logs(cluster: &Cluster) -> String {
    let dir = cluster.run_dir.join("logs");
    let mut text = String::new();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("kcm-rs-") && name.ends_with(".log") {
            text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
            // A replica killed mid-line leaves its last line open.
            text.push('\n');
        }
    }
    text
}

/// Deletes the namespaces, not waiting for them to go.
pub async fn delete_namespaces(cluster: &Cluster, names: &[String]) {
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    for ns in names {
        let _ = namespaces.delete(ns, &DeleteParams::default()).await;
    }
}

/// Waits until the `shards` shard Leases are held, every one, by as many replicas as `want` has
/// entries, holding that many each in any order (`[4, 4, 4]`: 12 shards evenly over 3).
pub async fn spread(cluster: &Cluster, shards: u32, want: &[usize]) {
    spread_layout(cluster, &Layout::equal(shards).unwrap(), want).await;
}

/// [`spread`] for a layout of any cuts.
pub async fn spread_layout(cluster: &Cluster, layout: &Layout, want: &[usize]) {
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-system");
    let mut want = want.to_vec();
    want.sort_unstable();
    // By name, not by the layout's prefix: refitted cuts leave the released Leases of earlier
    // versions behind under the same prefix.
    let names: Vec<String> = layout.shards().into_iter().map(shard_lease_name).collect();
    let of_layout = |name: &str| names.iter().any(|n| n == name);
    wait_for(
        &format!("{layout} shards held as {want:?}"),
        Duration::from_secs(120),
        || async {
            let list = leases
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let mut by_holder: BTreeMap<String, usize> = BTreeMap::new();
            for l in list.items.iter().filter(|l| of_layout(&l.name_any())) {
                let holder = l
                    .spec
                    .as_ref()
                    .and_then(|s| s.holder_identity.clone())
                    .unwrap_or_default();
                *by_holder.entry(holder).or_default() += 1;
            }
            let mut counts: Vec<usize> = by_holder.values().copied().collect();
            counts.sort_unstable();
            if counts == want && !by_holder.contains_key("") {
                Ok(())
            } else {
                Err(format!("{by_holder:?}"))
            }
        },
    )
    .await;
}

/// The Lease of `shard`, as kcm-rs names it (a layout with cuts of its own adds the range).
pub use sharding::shard_lease_name;

/// For a refitted layout among `layouts` (`--shard-cuts=auto`): the shard Leases of every version
/// the audit log names whose range holds `ns`, read from their names, since the versions written
/// while a test ran are not all known to it.
fn refitted_leases(log: &str, layouts: &[Layout], ns: &str) -> Vec<String> {
    let hash = informer::fnv1a64(ns.as_bytes());
    let mut found = std::collections::BTreeSet::new();
    for (at, _) in log.match_indices("kcm-rs-shard-") {
        let name: String = log[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let covers = sharding::shard_of_lease_name(&name).is_some_and(|shard| {
            shard.contains_hash(hash)
                && layouts
                    .iter()
                    .any(|l| l.is_auto() && (l.count(), l.tag()) == (shard.count(), shard.tag()))
        });
        if covers {
            found.insert(name);
        }
    }
    found.into_iter().collect()
}

/// The identity a replica logged at start-up (its Leases' holder).
pub fn identity(replica: &KcmRs) -> String {
    replica
        .identity()
        .expect("a replica logs its identity at start-up")
}

/// The write audit of a scale-out test: every write of the replicas `identities` into `names` lies
/// in one of its sender's terms on the namespace's shard Lease of any of the `layouts`, from its
/// arrival to its answer (`check_writes_within_terms`); panics with every write
/// that does not. The summary is for the test's own checks that it was not vacuous.
pub fn writes_within_terms(
    cluster: &Cluster,
    identities: &[String],
    names: &[String],
    layouts: &[Layout],
) -> crate::AuditSummary {
    writes_within_terms_or_lock(cluster, identities, names, layouts, None)
}

/// [`writes_within_terms`] where the unsharded lock `lock` (`--leader-elect-resource-name`) also
/// covers every namespace: the writes of an unsharded leader beside the sharded layouts.
pub fn writes_within_terms_or_lock(
    cluster: &Cluster,
    identities: &[String],
    names: &[String],
    layouts: &[Layout],
    lock: Option<&str>,
) -> crate::AuditSummary {
    let path = cluster.run_dir.join("logs/audit-writes.log");
    let log = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // Once per namespace: finding the refitted Leases scans the whole log, and the check asks for
    // every line of it (a scan per line made the check quadratic: minutes on a 24 MB log).
    let by_namespace: HashMap<&str, Vec<String>> = names
        .iter()
        .map(|ns| {
            let leases = layouts
                .iter()
                .map(|l| shard_lease_name(l.shard_of_namespace(ns)))
                .chain(refitted_leases(&log, layouts, ns))
                .chain(lock.map(str::to_owned))
                .collect();
            (ns.as_str(), leases)
        })
        .collect();
    let leases_of = |ns: &str| -> Vec<String> { by_namespace.get(ns).cloned().unwrap_or_default() };
    let summary = crate::check_writes_within_terms_or_unfenced(&log, identities, leases_of, lock)
        .unwrap_or_else(|errors| panic!("writes outside their sender's shard terms: {errors:#?}"));
    println!("audit: {summary:?}");
    summary
}

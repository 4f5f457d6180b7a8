//! Scale-out on the real control plane: kcm-rs replicas with `--shards=12` share Deployments,
//! ReplicaSets and Jobs in 40 namespaces through per-shard Leases, with the API server filtering
//! (`ShardedListAndWatch` on) and without it (off: each replica filters on its side). Three
//! replicas start; while the workloads scale up one is killed with -9, then a fourth joins and
//! another stops with SIGTERM. Afterwards every object converged, every namespace saw exactly the pods its specs needed
//! (a pod created twice for one missing replica, by two replicas acting on one shard, would show as
//! one more), no Job pod kept the tracking finalizer, the shards are spread evenly again, and the
//! API server's audit log shows every write of a replica inside one of its own terms on the shard
//! (`kcm_rs_e2e::check_writes_within_terms`).

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use futures::future::join_all;
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    batch::v1::Job,
    coordination::v1::Lease,
    core::v1::{Namespace, Pod},
};
use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard, deployment_scenarios::deployment_manifest, job_scenarios::job_manifest,
    replicaset_scenarios::rs_manifest, wait_for,
};
use kube::{
    Api, ResourceExt as _,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use parking_lot::Mutex;
use serde_json::json;

const SHARDS: usize = 12;
const NAMESPACES: usize = 40;
/// Each namespace: a Deployment and a ReplicaSet scaled from 1 to 3, a Job of 2 completions.
const SCALED_TO: i32 = 3;
const JOB_COMPLETIONS: i32 = 2;
const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

#[tokio::test]
async fn disruptive_sharded_replicas_with_server_side_sharding() {
    share_the_work("on", true).await;
}

#[tokio::test]
async fn disruptive_sharded_replicas_filtering_on_their_side() {
    share_the_work("off", false).await;
}

async fn share_the_work(gate: &str, server_filters: bool) {
    let cluster = Cluster::connect().await;
    let _gate = GateGuard::set(&cluster, gate);
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let tag = format!("shard-{gate}-{}", std::process::id());
    // Namespaces end with the tag (see `names`); the recorder keys on it.
    let args = ["--leader-elect=true", "--shards=12"];
    let spawn = |i: usize| KcmRs::spawn(&cluster, &format!("{tag}-{i}"), &args, None);
    let mut replicas: Vec<KcmRs> = (0..3).map(spawn).collect();
    spread(&cluster, 3).await;
    let mut identities: Vec<String> = replicas.iter().map(identity).collect();

    // The number first: FNV-1a's top bits barely move with a name's last characters, so names that
    // differ only at the end would all hash into one or two shards (docs/scale-out.md, section 5).
    let names: Vec<String> = (0..NAMESPACES).map(|i| format!("{i}-{tag}")).collect();
    let covered: HashSet<u32> = names.iter().map(|ns| shard_of(ns).index()).collect();
    assert!(
        covered.len() >= 9,
        "40 namespaces cover {} of the 12 shards",
        covered.len()
    );
    let seen = Arc::new(Mutex::new(HashMap::<String, HashSet<String>>::new()));
    let (pods, stop_pods) = pod_recorder(&cluster, &tag, seen.clone()).await;
    join_all(names.iter().map(|ns| create_workloads(&cluster, ns))).await;

    // Scale up everywhere, and kill -9 a replica in the middle of it.
    join_all(names.iter().map(|ns| scale(&cluster, ns))).await;
    let (_, body) = replicas[0].http_get("/debug/shards");
    let victim: serde_json::Value = serde_json::from_str(&body).unwrap();
    let victims_shards: Vec<String> = victim["held"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["shard"].as_str().unwrap().to_owned())
        .collect();
    let victims_namespaces = names
        .iter()
        .filter(|ns| {
            let shard = shard_of(ns).to_string();
            victims_shards.contains(&shard)
        })
        .count();
    assert!(
        victims_namespaces > 0,
        "the replica killed holds some of the namespaces: {victims_shards:?}"
    );
    let t = tokio::time::Instant::now();
    replicas.remove(0).kill();
    spread(&cluster, 2).await; // its shards taken over once their Leases expire
    println!("kill -9: its shards held by the others after {:?}", t.elapsed());
    let t = tokio::time::Instant::now();
    replicas.push(spawn(3));
    spread(&cluster, 3).await; // the fourth gets its share
    identities.push(identity(&replicas[2]));
    println!("a fourth replica: 4/4/4 after {:?}", t.elapsed());
    let t = tokio::time::Instant::now();
    let status = replicas.remove(0).stop();
    assert!(status.success(), "SIGTERM exits 0, got {status}");
    spread(&cluster, 2).await;
    println!("SIGTERM: its shards held by the others after {:?}", t.elapsed());

    for ns in &names {
        converged(&cluster, ns).await;
    }
    let seen = seen.lock().clone();
    let per_ns = usize::try_from(2 * SCALED_TO + JOB_COMPLETIONS).unwrap();
    let wrong: BTreeMap<&String, usize> = names
        .iter()
        .map(|ns| (ns, seen.get(ns).map_or(0, HashSet::len)))
        .filter(|(_, n)| *n != per_ns)
        .collect();
    assert!(
        wrong.is_empty(),
        "pods ever created per namespace, expected {per_ns}: {wrong:?}"
    );
    drop(pods);
    stop_pods.cancel();
    writes_within_terms(&cluster, &identities, &names);

    for r in &replicas {
        let (code, body) = r.http_get("/debug/shards");
        assert_eq!(code, 200, "{body}");
        let status: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            status["held"].as_array().map(Vec::len),
            Some(SHARDS / 2),
            "{body}"
        );
        assert_eq!(status["serverFilters"], json!(server_filters), "{body}");
    }
    // A failed sync is retried (a status write that lost to the test's scale patch is one); any
    // other error (a lost shard Lease, a shard that could not start) is not expected here.
    let errors: Vec<String> = replicas
        .iter()
        .flat_map(|r| {
            r.log_text()
                .lines()
                .filter(|l| l.contains(" ERROR ") && !l.contains("sync failed"))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        errors.is_empty(),
        "no error-level lines but failed syncs in the survivors' logs: {errors:#?}"
    );

    drop(replicas);
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    for ns in &names {
        let _ = namespaces.delete(ns, &DeleteParams::default()).await;
    }
}

/// Every write the replicas sent into the test's namespaces arrived, by the API server's audit log,
/// while its sender held the namespace's shard Lease: no namespace written by two replicas in one
/// term. Not vacuous: at least the pods the specs needed were written, by the replica killed
/// (`identities[0]`: its namespaces had work before it died) and others, and shards changed hands.
fn writes_within_terms(cluster: &Cluster, identities: &[String], names: &[String]) {
    let path = cluster.run_dir.join("logs/audit-writes.log");
    let log = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lease_of = |ns: &str| {
        names
            .iter()
            .any(|n| n == ns)
            .then(|| format!("kcm-rs-shard-{}-of-{SHARDS}", shard_of(ns).index()))
    };
    let summary = kcm_rs_e2e::check_writes_within_terms(&log, identities, lease_of)
        .unwrap_or_else(|errors| panic!("writes outside their sender's shard terms: {errors:#?}"));
    println!("audit: {summary:?}");
    assert!(summary.total_writes() >= names.len() * 8, "{summary:?}");
    assert!(
        summary.writes.contains_key(&identities[0]) && summary.writes.len() >= 2,
        "the replica killed wrote, and others: {summary:?}"
    );
    assert!(
        summary.total_terms() > SHARDS,
        "shards changed hands: {summary:?}"
    );
}

/// `hack/cluster.sh sharding <gate> --audit-writes` now, `sharding off` when dropped, also when the
/// test fails, so the suites after it in the lane find the API server as it was started.
struct GateGuard(Cluster);

impl GateGuard {
    fn set(cluster: &Cluster, gate: &str) -> Self {
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

/// The shard of `ns` among the test's `SHARDS`, as the replicas compute it.
fn shard_of(ns: &str) -> informer::Shard {
    informer::Shard::of_namespace(ns, u32::try_from(SHARDS).unwrap()).unwrap()
}

fn identity(replica: &KcmRs) -> String {
    replica
        .identity()
        .expect("a replica logs its identity at start-up")
}

/// Waits until the shard Leases are held by exactly `holders` replicas, evenly (12 over 3: 4 each,
/// over 4: 3 each), every Lease live.
async fn spread(cluster: &Cluster, holders: usize) {
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-system");
    let want = vec![SHARDS / holders; holders];
    wait_for(
        &format!("12 shards spread over {holders} replicas"),
        Duration::from_secs(120),
        || async {
            let list = leases
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let mut by_holder: BTreeMap<String, usize> = BTreeMap::new();
            for l in list
                .items
                .iter()
                .filter(|l| l.name_any().starts_with("kcm-rs-shard-"))
            {
                let holder = l
                    .spec
                    .as_ref()
                    .and_then(|s| s.holder_identity.clone())
                    .unwrap_or_default();
                *by_holder.entry(holder).or_default() += 1;
            }
            let counts: Vec<usize> = by_holder.values().copied().collect();
            if counts == want && !by_holder.contains_key("") {
                Ok(())
            } else {
                Err(format!("{by_holder:?}"))
            }
        },
    )
    .await;
}

/// Records the UID of every pod ever added in the test's namespaces, by namespace.
async fn pod_recorder(
    cluster: &Cluster,
    tag: &str,
    seen: Arc<Mutex<HashMap<String, HashSet<String>>>>,
) -> (informer::SharedInformer<Pod>, tokio_util::sync::CancellationToken) {
    let factory = informer::SharedInformerFactory::new(cluster.client.clone());
    let pods = factory.namespaced::<Pod>(informer::InformerOptions::default());
    let suffix = format!("-{tag}");
    let _registration = pods.add_event_handler(
        informer::HandlerFns::new().on_add(move |p: &Arc<Pod>, _| {
            let ns = p.namespace().unwrap_or_default();
            if ns.ends_with(&suffix) {
                seen.lock()
                    .entry(ns)
                    .or_default()
                    .insert(p.uid().unwrap_or_default());
            }
        }),
        None,
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    factory.start(&cancel);
    assert!(informer::wait_for_cache_sync(&cancel, &[&pods]).await);
    (pods, cancel)
}

async fn create_workloads(cluster: &Cluster, ns: &str) {
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
    Api::<Job>::namespaced(client, ns)
        .create(&pp, &job)
        .await
        .unwrap();
}

async fn scale(cluster: &Cluster, ns: &str) {
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
}

/// The Deployment and the ReplicaSet at 3 ready pods, the Job complete and none of its pods
/// holding the tracking finalizer.
async fn converged(cluster: &Cluster, ns: &str) {
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
            let pods = Api::<Pod>::namespaced(client.clone(), ns)
                .list(&ListParams::default())
                .await
                .map_err(e)?;
            let tracked = pods
                .items
                .iter()
                .filter(|p| p.finalizers().iter().any(|f| f == TRACKING_FINALIZER))
                .count();
            if available == SCALED_TO && ready == SCALED_TO && succeeded == JOB_COMPLETIONS && tracked == 0 {
                Ok(())
            } else {
                Err(format!(
                    "deployment {available} available, replicaset {ready} ready, job {succeeded} succeeded, \
                 {tracked} pods with the tracking finalizer"
                ))
            }
        },
    )
    .await;
}

//! Scale-out on the real control plane: kcm-rs replicas with `--shards=12` share the objects of all
//! six controllers (`kcm_rs_e2e::shard_workloads`) in 40 namespaces through per-shard Leases, with the API server filtering
//! (`ShardedListAndWatch` on) and without it (off: each replica filters on its side). Three
//! replicas start; while the workloads scale up one is killed with -9, then a fourth joins and
//! another stops with SIGTERM. Afterwards every object converged, every namespace saw exactly the pods its specs needed
//! (a pod created twice for one missing replica, by two replicas acting on one shard, would show as
//! one more), no Job pod kept the tracking finalizer, the shards are spread evenly again, and the
//! API server's audit log shows every write of a replica inside one of its own terms on the shard
//! (`kcm_rs_e2e::check_writes_within_terms`). Then namespaces that equal ranges crowd into one
//! shard, spread by cuts refitted online (`--shard-cuts=auto`).

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use futures::future::join_all;
use informer::{Layout, Shard};
use k8s_openapi::api::{coordination::v1::Lease, core::v1::Pod};
use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard,
    shard_workloads::{
        GateGuard, PodsSeen, converged, converged_exactly, create_workloads, delete_namespaces, gates,
        identity, pod_recorder, pods_exactly, scale, spread, spread_layout, writes_within_terms,
    },
};
use kube::{Api, ResourceExt as _, api::PostParams};
use parking_lot::Mutex;
use serde_json::json;

const SHARDS: usize = 12;
/// [`SHARDS`] as the flag and the Lease names count them.
const SHARDS_U32: u32 = SHARDS as u32;
const NAMESPACES: usize = 40;

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
    spread(&cluster, SHARDS_U32, &[SHARDS / 3; 3]).await;
    // Synced before the workloads come, so that the replica killed below has written by then.
    synced(&replicas).await;
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
    let seen = PodsSeen::default();
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
    spread(&cluster, SHARDS_U32, &[SHARDS / 2; 2]).await; // its shards taken over once their Leases expire
    println!("kill -9: its shards held by the others after {:?}", t.elapsed());
    let t = tokio::time::Instant::now();
    replicas.push(spawn(3));
    spread(&cluster, SHARDS_U32, &[SHARDS / 3; 3]).await; // the fourth gets its share
    identities.push(identity(&replicas[2]));
    println!("a fourth replica: 4/4/4 after {:?}", t.elapsed());
    let t = tokio::time::Instant::now();
    let status = replicas.remove(0).stop();
    assert!(status.success(), "SIGTERM exits 0, got {status}");
    spread(&cluster, SHARDS_U32, &[SHARDS / 2; 2]).await;
    println!("SIGTERM: its shards held by the others after {:?}", t.elapsed());

    for ns in &names {
        converged(&cluster, ns).await;
    }
    drop(pods);
    stop_pods.cancel();
    audit(&cluster, &identities, &names);
    pods_exactly(&cluster, &seen, &names);

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
        // Without the server's filter, a replica's shards read views of one watch per kind.
        let cached: Vec<_> = status["held"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| &h["cached"])
            .collect();
        assert!(cached.iter().all(|c| **c == json!(!server_filters)), "{body}");
    }
    // A failed sync is retried (a status write that lost to the test's scale patch is one), and an
    // event the API server refused (a 504 under load) is logged as client-go logs it; any other
    // error (a lost shard Lease, a shard that could not start) is not expected here.
    let errors: Vec<String> = replicas
        .iter()
        .flat_map(|r| {
            r.log_text()
                .lines()
                .filter(|l| {
                    l.contains(" ERROR ")
                        && !l.contains("sync failed")
                        && !l.contains("server rejected event")
                })
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        errors.is_empty(),
        "no error-level lines but failed syncs in the survivors' logs: {errors:#?}"
    );

    drop(replicas);
    delete_namespaces(&cluster, &names).await;
}

/// Namespaces whose names differ only in their last character share one shard of equal ranges, so
/// one replica would do all their work. Two replicas run with `--shard-cuts=auto` before these
/// namespaces exist; once they fill, one replica refits the cuts online and the shards whose range
/// moved change hands through the claims. The workloads, created before the refit and scaled after
/// it, converge exactly, and every write lies inside its sender's term on the Lease of its range in
/// whichever version of the cuts it was sent. `--print-shard-cuts` fits the same namespaces apart.
///
/// With the API server filtering (`make test`); `KCM_RS_SHARD_GATES` chooses (`shard_workloads::gates`).
#[tokio::test]
async fn disruptive_crowded_namespaces_spread_with_refitted_cuts() {
    for gate in gates("on") {
        refitted_cuts(&gate).await;
    }
}

async fn refitted_cuts(gate: &str) {
    let cluster = Cluster::connect().await;
    let _gate = GateGuard::set(&cluster, gate);
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let records = RefitLeases::clear(&cluster).await;
    let tag = format!("cuts-{}", std::process::id());
    let names: Vec<String> = ('a'..='h').map(|c| format!("{tag}-{c}")).collect();
    let equal: HashSet<Shard> = names
        .iter()
        .map(|ns| Shard::of_namespace(ns, 4).unwrap())
        .collect();
    assert_eq!(equal.len(), 1, "equal ranges put {names:?} in one shard");
    let args = [
        "--leader-elect=true",
        "--shards=4",
        "--shard-cuts=auto",
        "--shard-refit-interval=2s",
    ];
    let replicas: Vec<KcmRs> = (0..2)
        .map(|i| KcmRs::spawn(&cluster, &format!("{tag}-{i}"), &args, None))
        .collect();
    kcm_rs_e2e::wait_for(
        "both replicas hold shards",
        std::time::Duration::from_secs(90),
        || {
            let holding = replicas.iter().filter(|r| !held_shards(r).is_empty()).count();
            async move {
                if holding == 2 {
                    Ok(())
                } else {
                    Err(format!("{holding} hold shards"))
                }
            }
        },
    )
    .await;

    let seen = Arc::new(Mutex::new(HashMap::new()));
    let (pods, stop_pods) = pod_recorder(&cluster, &tag, seen.clone()).await;
    join_all(names.iter().map(|ns| create_workloads(&cluster, ns))).await;
    // Pods of their own, so that these namespaces outweigh whatever else the cluster holds (the cuts
    // are fitted to all its namespaces, weighted by pods).
    join_all(names.iter().map(|ns| bare_pods(&cluster, ns, BARE_PODS))).await;
    let printed = KcmRs::run_once(&cluster, &["--shards=4", "--print-shard-cuts"]);
    println!("{printed}");
    let printed_cuts = printed
        .lines()
        .find(|l| l.starts_with("--shards="))
        .and_then(|l| l.split_once("--shard-cuts="))
        .map(|(_, c)| Layout::parse_cuts(c.trim()).unwrap())
        .unwrap_or_else(|| panic!("no --shard-cuts printed: {printed}"));
    let spread_by = |l: &Layout| {
        names
            .iter()
            .map(|ns| l.shard_of_namespace(ns))
            .collect::<HashSet<_>>()
            .len()
    };
    assert!(
        spread_by(&printed_cuts) >= 3,
        "printed cuts spread {names:?}: {printed}"
    );

    let refitted = kcm_rs_e2e::wait_for(
        "cuts refitted apart on both replicas",
        std::time::Duration::from_secs(120),
        || {
            let followed: Vec<(String, serde_json::Value)> = replicas
                .iter()
                .map(|r| {
                    let status = debug_shards(r);
                    (
                        status["cuts"].as_str().unwrap_or_default().to_owned(),
                        status["cutsGeneration"].clone(),
                    )
                })
                .collect();
            let layout = Layout::parse_cuts(&followed[0].0)
                .ok()
                .and_then(|l| Layout::auto(4, Some(l.cuts().to_vec())).ok());
            let apart = layout.as_ref().is_some_and(|l| spread_by(l) >= 3);
            async move {
                match layout {
                    Some(l) if apart && followed[0] == followed[1] && followed[0].1.is_u64() => Ok(l),
                    _ => Err(format!("followed {followed:?}")),
                }
            }
        },
    )
    .await;
    println!("refitted cuts: {}", refitted.cuts_text());
    spread_layout(&cluster, &refitted, &[2, 2]).await;
    synced(&replicas).await;
    for r in &replicas {
        let held = held_shards(r);
        let serves = names
            .iter()
            .filter(|ns| held.contains(&refitted.shard_of_namespace(ns).to_string()))
            .count();
        assert!(serves > 0, "each replica serves some of them: {held:?}");
    }
    join_all(names.iter().map(|ns| scale(&cluster, ns))).await;
    converged_exactly(&cluster, &seen, &names).await;
    drop(pods);
    stop_pods.cancel();
    let ids: Vec<String> = replicas.iter().map(identity).collect();
    let first = Layout::auto(4, None).unwrap();
    let summary = writes_within_terms(&cluster, &ids, &names, &[first, refitted]);
    assert_eq!(summary.writes.len(), 2, "both replicas wrote: {summary:?}");
    drop(replicas);
    delete_namespaces(&cluster, &names).await;
    records.delete().await;
}

fn debug_shards(replica: &KcmRs) -> serde_json::Value {
    let (_, body) = replica.http_get("/debug/shards");
    serde_json::from_str(&body).unwrap_or_default()
}

/// The shards a replica holds, as `/debug/shards` names them.
fn held_shards(replica: &KcmRs) -> Vec<String> {
    debug_shards(replica)["held"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|h| h["shard"].as_str().map(str::to_owned))
        .collect()
}

/// The record of refitted cuts and the shard Leases of refitted layouts of 4, deleted before the
/// test (a record left by an earlier run would be followed at once) and at its end.
struct RefitLeases(Api<Lease>);

impl RefitLeases {
    async fn clear(cluster: &Cluster) -> Self {
        let leases = Api::namespaced(cluster.client.clone(), "kube-system");
        let this = Self(leases);
        this.delete().await;
        this
    }

    async fn delete(&self) {
        let family = format!("-of-{}-", Layout::auto(4, None).unwrap());
        for l in self
            .0
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            let name = l.name_any();
            if name == "kcm-rs-shard-cuts-4" || name.contains(&family) {
                let _ = self.0.delete(&name, &Default::default()).await;
            }
        }
    }
}

/// Waits until every shard each replica holds has synced (`/debug/shards`).
async fn synced(replicas: &[KcmRs]) {
    kcm_rs_e2e::wait_for("held shards synced", std::time::Duration::from_secs(60), || {
        let unsynced: Vec<String> = replicas
            .iter()
            .flat_map(|r| {
                let (_, body) = r.http_get("/debug/shards");
                let status: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                let held = status["held"].as_array().cloned().unwrap_or_default();
                held.into_iter()
                    .filter(|h| h["synced"] != json!(true))
                    .map(|h| h["shard"].to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        async move {
            if unsynced.is_empty() {
                Ok(())
            } else {
                Err(format!("not synced: {unsynced:?}"))
            }
        }
    })
    .await;
}

/// Pods each crowded namespace gets from the test itself.
const BARE_PODS: usize = 10;

/// `count` pods without a controller in `ns`.
async fn bare_pods(cluster: &Cluster, ns: &str, count: usize) {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), ns);
    for i in 0..count {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("weight-{i}"), "labels": {"weight": "1"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
}

/// The write audit (`shard_workloads::writes_within_terms`): no namespace written by two replicas in
/// one term. Not vacuous: at least the pods the specs needed were written, by the replica killed
/// (`identities[0]`: its namespaces had work before it died) and others, and shards changed hands.
fn audit(cluster: &Cluster, identities: &[String], names: &[String]) {
    let summary = writes_within_terms(cluster, identities, names, &[Layout::equal(SHARDS_U32).unwrap()]);
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

/// The shard of `ns` among the test's `SHARDS`, as the replicas compute it.
fn shard_of(ns: &str) -> informer::Shard {
    informer::Shard::of_namespace(ns, SHARDS_U32).unwrap()
}

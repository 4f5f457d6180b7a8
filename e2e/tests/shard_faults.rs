//! What the world does to sharded replicas, on the real control plane with `ShardedListAndWatch` on
//! (`KCM_RS_SHARD_GATES=off` or `on,off`, as `make soak` sets, for the gate off too): a holder paused (SIGSTOP) for longer than its lease while the workloads scale, then resumed; a
//! shard Lease deleted under its holder; and API Priority and Fairness rejecting the replicas' pod
//! writes with 429 while a third replica joins and shards move. Each test ends the way the sharding
//! suite does: every namespace saw exactly the pods its specs needed (a create retried after its
//! shard moved, or sent by two holders, would show as one more) and the API server's audit log shows
//! every write of a replica inside one of its own terms on the namespace's shard Lease.

use std::{collections::BTreeMap, time::Duration};

use futures::future::join_all;
use informer::Layout;
use k8s_openapi::api::coordination::v1::Lease;
use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard,
    shard_workloads::{
        GateGuard, PodsSeen, converged_exactly, create_workloads, delete_namespaces, gates, identity,
        pod_recorder, scale, spread, writes_within_terms,
    },
    wait_for,
};
use kube::{Api, api::DeleteParams};

const SHARDS: u32 = 4;
const NAMESPACES: usize = 12;
/// kcm-rs's `--leader-elect-lease-duration` default (KCM's): a pause longer than this lets the
/// other replica take the paused one's shards.
const LEASE_DURATION: Duration = Duration::from_secs(15);

#[tokio::test]
async fn disruptive_paused_holder_and_deleted_lease() {
    for gate in gates("on") {
        paused_holder_and_deleted_lease(&gate).await;
    }
}

async fn paused_holder_and_deleted_lease(gate: &str) {
    let cluster = Cluster::connect().await;
    let _gate = GateGuard::set(&cluster, gate);
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let tag = format!("faults-{gate}-{}", std::process::id());
    let args = ["--leader-elect=true", "--shards=4"];
    let a = KcmRs::spawn(&cluster, &format!("{tag}-a"), &args, None);
    let b = KcmRs::spawn(&cluster, &format!("{tag}-b"), &args, None);
    spread(&cluster, SHARDS, &[2, 2]).await;
    let ids = [identity(&a), identity(&b)];
    let names: Vec<String> = (0..NAMESPACES).map(|i| format!("{i}-{tag}")).collect();
    let seen: PodsSeen = Default::default();
    let (pods, stop_pods) = pod_recorder(&cluster, &tag, std::sync::Arc::clone(&seen)).await;
    join_all(names.iter().map(|ns| create_workloads(&cluster, ns))).await;
    // Both replicas have written (a pod in every namespace, whose shards both hold) and still have
    // writes queued (status updates, the other pods) when one is paused: those must not leave after
    // its term.
    wait_for("a pod in every namespace", Duration::from_secs(60), || {
        let missing = names
            .iter()
            .filter(|ns| seen.lock().get(*ns).is_none_or(BTreeMap::is_empty))
            .count();
        std::future::ready(if missing == 0 { Ok(()) } else { Err(missing) })
    })
    .await;

    // Paused past its lease: the other replica takes every shard, and the workloads scale meanwhile.
    let t = tokio::time::Instant::now();
    let paused = Paused::stop(&a);
    tokio::time::sleep(LEASE_DURATION).await;
    spread(&cluster, SHARDS, &[SHARDS as usize]).await;
    println!("SIGSTOP: every shard held by the other after {:?}", t.elapsed());
    join_all(names[..NAMESPACES / 2].iter().map(|ns| scale(&cluster, ns))).await;
    // Resumed: its fence is closed and its renewals lose; it gets its share back through the claims.
    drop(paused);
    let t = tokio::time::Instant::now();
    spread(&cluster, SHARDS, &[2, 2]).await;
    println!("SIGCONT: 2/2 again after {:?}", t.elapsed());

    // A shard Lease deleted under its holder: written again by a holder, the shards spread again.
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-system");
    let deleted = format!("kcm-rs-shard-0-of-{SHARDS}");
    leases
        .delete(&deleted, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("deleting Lease {deleted}: {e}"));
    let t = tokio::time::Instant::now();
    join_all(names[NAMESPACES / 2..].iter().map(|ns| scale(&cluster, ns))).await;
    spread(&cluster, SHARDS, &[2, 2]).await;
    println!("deleted {deleted}: held again after {:?}", t.elapsed());

    converged_exactly(&cluster, &seen, &names).await;
    drop(pods);
    stop_pods.cancel();
    let summary = writes_within_terms(&cluster, &ids, &names, &[Layout::equal(SHARDS).unwrap()]);
    assert!(summary.total_writes() >= names.len() * 8, "{summary:?}");
    assert!(
        summary.writes.len() == 2 && summary.total_terms() > SHARDS as usize + 2,
        "both replicas wrote and shards changed hands: {summary:?}"
    );
    drop((a, b));
    delete_namespaces(&cluster, &names).await;
}

/// The kcm-rs ServiceAccount's pod writes get a priority level of 7 seats that rejects instead of
/// queueing (`nominalConcurrencyShares: 1` of the API server's 1,500, no borrowing), so the bursts of
/// pod creates and deletes below are answered 429 with `Retry-After`. A third replica joins while
/// they are, and shards move.
#[tokio::test]
async fn disruptive_throttled_pod_writes_during_rebalance() {
    for gate in gates("on") {
        throttled_pod_writes_during_rebalance(&gate).await;
    }
}

async fn throttled_pod_writes_during_rebalance(gate: &str) {
    let cluster = Cluster::connect().await;
    let _gate = GateGuard::set(&cluster, gate);
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    cluster.apply_shipped_rbac();
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs");
    let _throttle = Throttle::apply(&cluster);
    let tag = format!("throttled-{gate}-{}", std::process::id());
    let args = ["--leader-elect=true", "--shards=4"];
    let spawn = |name: &str| {
        KcmRs::spawn(
            &cluster,
            &format!("{tag}-{name}"),
            &args,
            Some(kubeconfig.clone()),
        )
    };
    let a = spawn("a");
    let b = spawn("b");
    spread(&cluster, SHARDS, &[2, 2]).await;
    let mut ids = vec![identity(&a), identity(&b)];
    let names: Vec<String> = (0..2 * NAMESPACES).map(|i| format!("{i}-{tag}")).collect();
    let seen = Default::default();
    let (pods, stop_pods) = pod_recorder(&cluster, &tag, std::sync::Arc::clone(&seen)).await;
    let rejected_before = rejected(&cluster).await;
    join_all(names.iter().map(|ns| create_workloads(&cluster, ns))).await;
    join_all(names.iter().map(|ns| scale(&cluster, ns))).await;

    // A third replica joins while the creates are being rejected: 2/1/1.
    let t = tokio::time::Instant::now();
    let c = spawn("c");
    spread(&cluster, SHARDS, &[1, 1, 2]).await;
    ids.push(identity(&c));
    println!("a third replica under throttling: 2/1/1 after {:?}", t.elapsed());

    converged_exactly(&cluster, &seen, &names).await;
    let rejected = rejected(&cluster).await - rejected_before;
    println!("pod writes rejected with 429: {rejected}");
    assert!(
        rejected > 0,
        "the priority level rejected none of kcm-rs's pod writes"
    );
    drop(pods);
    stop_pods.cancel();
    let summary = writes_within_terms(&cluster, &ids, &names, &[Layout::equal(SHARDS).unwrap()]);
    assert!(summary.total_writes() >= names.len() * 8, "{summary:?}");
    drop((a, b, c));
    delete_namespaces(&cluster, &names).await;
}

const THROTTLE: &str = "kcm-rs-e2e-throttle";

/// The priority level and flow schema of the throttled test, deleted when dropped.
struct Throttle(Cluster);

impl Throttle {
    fn apply(cluster: &Cluster) -> Throttle {
        let manifest = format!(
            "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {{name: {THROTTLE}}}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    borrowingLimitPercent: 0
    limitResponse: {{type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: {THROTTLE}}}
spec:
  priorityLevelConfiguration: {{name: {THROTTLE}}}
  matchingPrecedence: 100
  distinguisherMethod: {{type: ByUser}}
  rules:
  - subjects: [{{kind: ServiceAccount, serviceAccount: {{name: kcm-rs, namespace: kcm-rs}}}}]
    resourceRules:
    - {{verbs: [create, delete], apiGroups: [\"\"], resources: [pods], namespaces: [\"*\"]}}
"
        );
        let path = cluster.run_dir.join(format!("{THROTTLE}.yaml"));
        std::fs::write(&path, manifest).expect("writing the throttle manifest");
        cluster.kubectl(&["apply", "-f", &path.display().to_string()]);
        Throttle(cluster.clone())
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let _ = self.0.try_kubectl(&[
            "delete",
            "flowschema,prioritylevelconfiguration",
            THROTTLE,
            "--ignore-not-found",
        ]);
    }
}

/// Requests the API server rejected at the throttle's priority level, by its metrics.
async fn rejected(cluster: &Cluster) -> u64 {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = cluster
        .client
        .request_text(request)
        .await
        .expect("the API server's /metrics");
    text.lines()
        .filter(|l| {
            l.starts_with("apiserver_flowcontrol_rejected_requests_total{")
                && l.contains(&format!("priority_level=\"{THROTTLE}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// A replica stopped with SIGSTOP until dropped (then SIGCONT), so that a failing assertion cannot
/// leave it stopped.
struct Paused(u32);

impl Paused {
    fn stop(replica: &KcmRs) -> Paused {
        signal(replica.pid(), "-STOP");
        Paused(replica.pid())
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        signal(self.0, "-CONT");
    }
}

fn signal(pid: u32, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("running kill");
    assert!(status.success(), "kill {sig} {pid}: {status}");
}

//! Leadership under load (replace mode), at KCM's default client limits (20 QPS, burst 30):
//! * a burst of pod creates does not cost the leader its lease, because leader election has a client
//!   and a rate limiter of its own, as in kube-controller-manager;
//! * a leader whose lease is taken mid scale-up writes nothing once it knows it lost: it exits at
//!   once, as kube-controller-manager does, instead of draining its queue.
//!
//! Who wrote what is read from the API: events carry the writer's identity as reportingInstance, and
//! in replace mode kcm-rs is the only ReplicaSet controller, so every pod was created by it.

use std::time::Duration;

use k8s_openapi::{
    api::{
        apps::v1::ReplicaSet,
        coordination::v1::Lease,
        core::v1::{Event, Pod},
    },
    jiff::Timestamp,
};
use kcm_rs_e2e::{Cluster, KcmRs, TestNamespace, wait_for, with_namespace};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tokio::time::Instant;

const ACQUIRED: &str = "successfully acquired lease";
/// KCM's default client limits: the setting under which requests queue up behind each other.
const KCM_QPS: &[&str] = &["--kube-api-qps=20", "--kube-api-burst=30"];

fn args(lease: &str) -> Vec<String> {
    let mut a: Vec<String> = [
        "--controllers=replicaset-controller",
        "--leader-elect=true",
        "--leader-elect-release-on-cancel=false",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    a.push(format!("--leader-elect-resource-name={lease}"));
    a.extend(KCM_QPS.iter().map(ToString::to_string));
    a
}

async fn holder(leases: &Api<Lease>, name: &str) -> (Option<String>, Option<i32>) {
    let spec = leases.get(name).await.unwrap().spec.unwrap_or_default();
    (spec.holder_identity, spec.lease_transitions)
}

async fn create_rs(ns: &TestNamespace, name: &str, replicas: i32) {
    let rs = kcm_rs_e2e::replicaset_scenarios::rs_manifest(name, replicas, 0);
    ns.api::<ReplicaSet>()
        .create(&PostParams::default(), &rs)
        .await
        .unwrap();
}

async fn pods(ns: &TestNamespace) -> Vec<Pod> {
    ns.api::<Pod>().list(&ListParams::default()).await.unwrap().items
}

#[tokio::test]
async fn disruptive_a_burst_of_creates_keeps_the_leader() {
    let cluster = Cluster::connect().await;
    cluster.hack(&["mode", "replace"]);
    let lease_name = format!("kcm-rs-burst-{}", std::process::id());
    let a = args(&lease_name);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let all: Vec<KcmRs> = (0..3)
        .map(|i| KcmRs::spawn(&cluster, &format!("burst-{i}"), &a, None))
        .collect();
    let replicas = &all;
    let leader = wait_for("a leader", Duration::from_secs(30), || async {
        let leading: Vec<usize> = (0..replicas.len())
            .filter(|i| replicas[*i].log_text().contains(ACQUIRED))
            .collect();
        match leading.as_slice() {
            [one] => Ok(*one),
            other => Err(format!("leaders: {other:?}")),
        }
    })
    .await;
    replicas[leader]
        .wait_log("caches synced", Duration::from_secs(60))
        .await;
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-system");
    let before = holder(&leases, &lease_name).await;
    with_namespace(cluster.clone(), "burst", |ns| async move {
        // 5 ReplicaSets x 200 pods at 20 QPS: about 50 s of creates, over three lease durations.
        const SETS: i32 = 5;
        const PODS: i32 = 200;
        for i in 0..SETS {
            create_rs(&ns, &format!("burst-{i}"), PODS).await;
        }
        let started = Instant::now();
        let total = usize::try_from(SETS * PODS).unwrap();
        loop {
            let now = holder(&leases, &lease_name).await;
            assert_eq!(
                now, before,
                "the lease changed hands during the burst ({:?} after {:?})",
                now, started
            );
            let n = pods(&ns).await.len();
            if n >= total {
                println!(
                    "{n} pods created in {:?}; the lease stayed with the leader",
                    started.elapsed()
                );
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(240),
                "only {n} of {total} pods after 240 s"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        for (i, r) in replicas.iter().enumerate() {
            if i != leader {
                assert!(
                    !r.log_text().contains(ACQUIRED),
                    "a standby took the lease during the burst"
                );
            }
        }
    })
    .await;
    drop(all);
    cluster.hack(&["mode", "reference"]);
}

/// The timestamp at the start of the first log line containing `needle` (tracing's default format).
fn logged_at(log: &str, needle: &str) -> Option<Timestamp> {
    let line = log.lines().find(|l| l.contains(needle))?;
    line.split_whitespace().next()?.parse().ok()
}

#[tokio::test]
async fn disruptive_a_stolen_lease_stops_writes_at_once() {
    let cluster = Cluster::connect().await;
    cluster.hack(&["mode", "replace"]);
    let lease_name = format!("kcm-rs-stolen-{}", std::process::id());
    let a = args(&lease_name);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let leader = KcmRs::spawn(&cluster, "stolen", &a, None);
    leader.wait_log(ACQUIRED, Duration::from_secs(30)).await;
    leader.wait_log("caches synced", Duration::from_secs(60)).await;
    let identity = leader.identity().expect("the leader logged its identity");
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-system");
    let leader = &leader;
    with_namespace(cluster.clone(), "stolen", |ns| async move {
        // Several ReplicaSets, so that keys are queued as well as in flight when the lease goes.
        for i in 0..3 {
            create_rs(&ns, &format!("web-{i}"), 400).await;
        }
        wait_for(
            "the scale-up to be under way",
            Duration::from_secs(60),
            || async {
                let n = pods(&ns).await.len();
                if n >= 50 { Ok(()) } else { Err(format!("{n} pods")) }
            },
        )
        .await;
        let grab = json!({"spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 3600}});
        leases
            .patch(&lease_name, &PatchParams::default(), &Patch::Merge(&grab))
            .await
            .unwrap();
        let stolen_at = Timestamp::now();
        leader
            .wait_log("leaderelection lost", Duration::from_secs(30))
            .await;
        let pid = leader.pid();
        wait_for("the old leader to exit", Duration::from_secs(5), || async {
            // An exited child stays a zombie until reaped: look at its state, not its existence.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit(')').next().and_then(|r| r.split_whitespace().next());
            match state {
                None | Some("Z" | "X") => Ok(()),
                Some(_) => Err("still running"),
            }
        })
        .await;
        let lost_at = logged_at(&leader.log_text(), "leaderelection lost").expect("a timestamped log line");
        println!("lease stolen at {stolen_at}, loss noticed at {lost_at}");
        // Give anything still in flight time to land before looking.
        tokio::time::sleep(Duration::from_secs(3)).await;
        // Pod creation times have one-second resolution: allow the second the loss fell in.
        let limit = lost_at.as_second() + 1;
        let late: Vec<String> = pods(&ns)
            .await
            .iter()
            .filter(|p| {
                p.metadata
                    .creation_timestamp
                    .as_ref()
                    .is_some_and(|t| t.0.as_second() > limit)
            })
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        assert!(late.is_empty(), "pods created after the loss: {late:?}");
        let events: Api<Event> = ns.api();
        let late_events: Vec<String> = events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.reporting_instance.as_deref() == Some(identity.as_str()))
            .filter(|e| e.last_timestamp.as_ref().is_some_and(|t| t.0.as_second() > limit))
            .map(|e| format!("{:?} {:?}", e.reason, e.message))
            .collect();
        assert!(
            late_events.is_empty(),
            "events written after the loss: {late_events:?}"
        );
        let n = pods(&ns).await.len();
        assert!(n < 1200, "the scale-up stopped with the leader ({n} pods)");
    })
    .await;
    cluster.hack(&["mode", "reference"]);
}

//! Leader election on the real control plane with three kcm-rs replicas (replace mode): one leader
//! at a time, only the leader writes, kill -9 fails over within the lease duration, SIGTERM hands over
//! at once, a write by someone else sends the renewal down the slow path, and a leader that loses
//! its lease exits non-zero.

use std::time::Duration;

use tokio::time::Instant;

use k8s_openapi::api::{apps::v1::ReplicaSet, coordination::v1::Lease, core::v1::Event};
use kcm_rs_e2e::{Cluster, KcmRs, wait_for, with_namespace};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

const ACQUIRED: &str = "successfully acquired lease";
/// kcm-rs's defaults (KCM's): lease 15 s, retry 2 s with up to 1.2x jitter.
const LEASE: Duration = Duration::from_secs(15);
const RETRY_JITTERED: Duration = Duration::from_millis(4400);

/// Waits until the Lease `name` carries a `LeaderElection` event with each message of `want`.
async fn wait_lease_events(events: &Api<Event>, name: &str, want: &[String]) {
    let on_lease = ListParams::default().fields(&format!("involvedObject.name={name}"));
    wait_for("the LeaderElection events", Duration::from_secs(20), || async {
        let messages: Vec<String> = events
            .list(&on_lease)
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("LeaderElection"))
            .filter_map(|e| e.message)
            .collect();
        if want.iter().all(|w| messages.contains(w)) {
            Ok(())
        } else {
            Err(format!("{messages:?}"))
        }
    })
    .await;
}

fn leaders(replicas: &[KcmRs]) -> Vec<usize> {
    replicas
        .iter()
        .enumerate()
        .filter(|(_, r)| r.log_text().contains(ACQUIRED))
        .map(|(i, _)| i)
        .collect()
}

async fn wait_new_leader(replicas: &[KcmRs], timeout: Duration) -> usize {
    wait_for("a replica to acquire the lease", timeout, || async {
        match leaders(replicas).as_slice() {
            [one] => Ok(*one),
            other => Err(format!("leaders: {other:?}")),
        }
    })
    .await
}

#[tokio::test]
async fn disruptive_three_replicas_one_leader() {
    let cluster = Cluster::connect().await;
    cluster.hack(&["mode", "replace"]);
    let lease_name = format!("kcm-rs-e2e-{}", std::process::id());
    let args = [
        "--controllers=replicaset-controller",
        "--leader-elect=true",
        &format!("--leader-elect-resource-name={lease_name}"),
    ];
    let mut replicas: Vec<KcmRs> = (0..3)
        .map(|i| KcmRs::spawn(&cluster, &format!("le-{i}"), &args, None))
        .collect();
    let leader = wait_new_leader(&replicas, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(leaders(&replicas), [leader], "exactly one replica leads");
    let identity = replicas[leader]
        .identity()
        .expect("the leader logged its identity");
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-system");
    let system_events: Api<Event> = Api::namespaced(cluster.client.clone(), "kube-system");
    let holder = leases
        .get(&lease_name)
        .await
        .unwrap()
        .spec
        .unwrap()
        .holder_identity;
    assert_eq!(
        holder.as_deref(),
        Some(identity.as_str()),
        "the Lease names the leader"
    );

    with_namespace(cluster.clone(), "leader", |ns| async move {
        let rs = kcm_rs_e2e::replicaset_scenarios::rs_manifest("web", 3, 0);
        ns.api::<ReplicaSet>()
            .create(&PostParams::default(), &rs)
            .await
            .unwrap();
        let events: Api<Event> = ns.api();
        let writers = wait_for("3 SuccessfulCreate events", Duration::from_secs(60), || async {
            let list = events
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let creates: Vec<String> = list
                .items
                .iter()
                .filter(|e| e.reason.as_deref() == Some("SuccessfulCreate"))
                .map(|e| e.reporting_instance.clone().unwrap_or_default())
                .collect();
            if creates.len() >= 3 {
                Ok(creates)
            } else {
                Err(format!("{} so far", creates.len()))
            }
        })
        .await;
        assert!(
            writers.iter().all(|w| *w == identity),
            "only the leader {identity} writes; writers: {writers:?}"
        );

        // kill -9 of the leader: another takes over once the lease expires by its own clock.
        let killed_at = Instant::now();
        replicas.remove(leader).kill();
        let next = wait_new_leader(&replicas, Duration::from_secs(60)).await;
        let failover = killed_at.elapsed();
        println!("failover after kill -9: {failover:?}");
        assert!(
            failover <= LEASE + RETRY_JITTERED + Duration::from_secs(2),
            "took over after {failover:?}"
        );

        // SIGTERM: the leader releases the lease; the last replica takes over at its next try.
        let stopped_at = Instant::now();
        let stopping = replicas.remove(next);
        let stopping_identity = stopping.identity().expect("the leader logged its identity");
        let log = stopping.log.clone();
        let status = stopping.stop();
        assert!(status.success(), "graceful shutdown exits 0, got {status}");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let errors: Vec<&str> = text.lines().filter(|l| l.contains(" ERROR ")).collect();
        assert!(
            errors.is_empty(),
            "no error-level log lines on a graceful shutdown: {errors:#?}"
        );
        let last = wait_new_leader(&replicas, Duration::from_secs(30)).await;
        let handover = stopped_at.elapsed();
        println!("handover after SIGTERM: {handover:?}");
        assert!(
            handover <= RETRY_JITTERED + Duration::from_secs(1),
            "took over after {handover:?}"
        );
        // On the Lease, as client-go's lock records them: who led, and who stopped gracefully.
        let want = [
            format!("{identity} became leader"),
            format!("{stopping_identity} became leader"),
            format!("{stopping_identity} stopped leading"),
        ];
        wait_lease_events(&system_events, &lease_name, &want).await;

        // The new leader runs the controllers.
        let patch = json!({"spec": {"replicas": 5}});
        ns.api::<ReplicaSet>()
            .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        wait_for(
            "the ReplicaSet to reach 5 replicas",
            Duration::from_secs(60),
            || async {
                let rs = ns
                    .api::<ReplicaSet>()
                    .get("web")
                    .await
                    .map_err(|e| e.to_string())?;
                let n = rs.status.map_or(0, |s| s.replicas);
                if n == 5 {
                    Ok(())
                } else {
                    Err(format!("{n} replicas"))
                }
            },
        )
        .await;

        // Someone else writes the Lease but leaves the holder: the leader's renewal of the Lease as
        // it last wrote it conflicts, so it reads the Lease first (client-go's slow path, which
        // leader_election_slowpath_total counts) and goes on leading.
        let note = json!({"metadata": {"annotations": {"e2e.kcm-rs.io/touched": "yes"}}});
        leases
            .patch(&lease_name, &PatchParams::default(), &Patch::Merge(&note))
            .await
            .unwrap();
        let counted = format!("leader_election_slowpath_total{{name=\"{lease_name}\"}}");
        wait_for("a slow-path renewal counted", Duration::from_secs(20), || async {
            let (_, metrics) = replicas[last].http_get("/metrics");
            let line = metrics.lines().find(|l| l.starts_with(&counted));
            match line.and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok()) {
                Some(n) if n >= 1.0 => Ok(()),
                _ => Err(format!("{line:?}")),
            }
        })
        .await;
        let still = leases.get(&lease_name).await.unwrap().spec.unwrap();
        assert_eq!(
            still.holder_identity,
            replicas[last].identity(),
            "the leader renewed after the slow path"
        );

        // Someone else takes the lease: the leader cannot renew, stops and exits non-zero.
        let grab = json!({"spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 3600}});
        leases
            .patch(&lease_name, &PatchParams::default(), &Patch::Merge(&grab))
            .await
            .unwrap();
        let survivor = replicas.remove(last);
        survivor
            .wait_log("leaderelection lost", Duration::from_secs(30))
            .await;
        let status = survivor.stop();
        assert!(!status.success(), "a lost lease exits non-zero, got {status}");
    })
    .await;
    cluster.hack(&["mode", "reference"]);
}

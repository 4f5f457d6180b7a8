//! Changing kcm-rs's layout as a rolling update does it (a new replica started beside the old ones,
//! then the old ones stopped with SIGTERM), on the real control plane with `ShardedListAndWatch` on
//! (`make test`) or off (`make soak`; `KCM_RS_SHARD_GATES` picks): unsharded → `--shards=4` →
//! `--shards=6` → unsharded. At every step the layout that serves keeps
//! serving and the new one holds nothing until the old one is gone; then it takes every shard after
//! one handover. Meanwhile the six controllers' objects in 12 namespaces (`shard_workloads`) converge. Afterwards every
//! namespace saw exactly the pods its specs needed (a pod created twice, by two layouts acting on one
//! namespace, would show as one more), and the audit log shows every write of a sharded replica
//! inside one of its terms on a Lease covering the namespace.

use std::time::Duration;

use futures::future::join_all;
use informer::Layout;
use k8s_openapi::api::coordination::v1::Lease;
use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard,
    shard_workloads::{
        GateGuard, converged_exactly, create_workloads, delete_namespaces, gates, identity, pod_recorder,
        scale, writes_within_terms_or_lock,
    },
    wait_for,
};
use kube::{Api, ResourceExt as _, api::ListParams};

const NAMESPACES: usize = 12;
const ACQUIRED: &str = "successfully acquired lease";
/// Long enough for several manager rounds (retry period 2 s) and for a first-seen claim to be live.
const HOLD_BACK: Duration = Duration::from_secs(8);

#[tokio::test]
async fn disruptive_layout_changes_hand_over_without_two_writers() {
    for gate in gates("on") {
        layout_changes(&gate).await;
    }
}

async fn layout_changes(gate: &str) {
    let cluster = Cluster::connect().await;
    let _gate = GateGuard::set(&cluster, gate);
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    let tag = format!("layout-{gate}-{}", std::process::id());
    let lock = format!("--leader-elect-resource-name=kcm-rs-{tag}");
    let spawn = |name: &str, shards: u32| {
        let shards = format!("--shards={shards}");
        KcmRs::spawn(
            &cluster,
            &format!("{tag}-{name}"),
            &["--leader-elect=true", &lock, &shards],
            None,
        )
    };
    let names: Vec<String> = (0..NAMESPACES).map(|i| format!("{i}-{tag}")).collect();
    let seen = Default::default();
    let (pods, stop_pods) = pod_recorder(&cluster, &tag, std::sync::Arc::clone(&seen)).await;

    let unsharded = spawn("unsharded-1", 1);
    unsharded.wait_log(ACQUIRED, Duration::from_secs(60)).await;
    let first_leader = identity(&unsharded);
    join_all(names.iter().map(|ns| create_workloads(&cluster, ns))).await;

    // unsharded → 4: the sharded replica waits while the lock is held.
    let four = spawn("four", 4);
    tokio::time::sleep(HOLD_BACK).await;
    assert_eq!(
        held(&four),
        0,
        "a --shards=4 replica took shards beside the unsharded leader"
    );
    let t = tokio::time::Instant::now();
    assert!(unsharded.stop().success());
    holders(&cluster, 4, &[&four]).await;
    println!(
        "gate {gate}, unsharded → 4: every shard held after {:?}",
        t.elapsed()
    );
    join_all(names[..NAMESPACES / 2].iter().map(|ns| scale(&cluster, ns))).await;

    // 4 → 6: the serving layout keeps its shards, the new one waits for it to go.
    let six = spawn("six", 6);
    tokio::time::sleep(HOLD_BACK).await;
    assert_eq!(
        held(&six),
        0,
        "a --shards=6 replica took shards beside a serving --shards=4 one"
    );
    assert_eq!(held(&four), 4);
    let mut identities = vec![first_leader, identity(&four), identity(&six)];
    let t = tokio::time::Instant::now();
    assert!(four.stop().success());
    holders(&cluster, 6, &[&six]).await;
    println!("gate {gate}, 4 → 6: every shard held after {:?}", t.elapsed());
    join_all(names[NAMESPACES / 2..].iter().map(|ns| scale(&cluster, ns))).await;

    // 6 → unsharded: the unsharded candidate waits for the shard claims to end.
    let back = spawn("unsharded-2", 1);
    tokio::time::sleep(HOLD_BACK).await;
    assert!(
        !back.log_text().contains(ACQUIRED),
        "the unsharded candidate led beside a serving --shards=6 replica"
    );
    let t = tokio::time::Instant::now();
    assert!(six.stop().success());
    back.wait_log(ACQUIRED, Duration::from_secs(60)).await;
    println!("gate {gate}, 6 → unsharded: leading after {:?}", t.elapsed());

    converged_exactly(&cluster, &seen, &names).await;
    drop(pods);
    stop_pods.cancel();
    // Every replica's writes, the unsharded leaders' too (their lock covers every namespace).
    identities.push(identity(&back));
    let lock_name = lock.trim_start_matches("--leader-elect-resource-name=");
    let summary = writes_within_terms_or_lock(
        &cluster,
        &identities,
        &names,
        &[equal(4), equal(6)],
        Some(lock_name),
    );
    for (who, id) in ["unsharded-1", "four", "six"].iter().zip(&identities) {
        assert!(summary.writes.contains_key(id), "{who} wrote: {summary:?}");
    }

    drop(back);
    delete_namespaces(&cluster, &names).await;
}

fn equal(count: u32) -> Layout {
    Layout::equal(count).unwrap()
}

/// Shards the replica holds, by its `/debug/shards`.
fn held(replica: &KcmRs) -> usize {
    let (code, body) = replica.http_get("/debug/shards");
    assert_eq!(code, 200, "{body}");
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    status["held"].as_array().map_or(0, Vec::len)
}

/// Waits until every Lease of the `count`-shard layout is held by one of `by`.
async fn holders(cluster: &Cluster, count: u32, by: &[&KcmRs]) {
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-system");
    let ids: Vec<String> = by.iter().map(|r| identity(r)).collect();
    let suffix = format!("-of-{count}");
    wait_for(
        &format!("the {count} shards held by the new layout"),
        Duration::from_secs(60),
        || async {
            let list = leases
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let held: Vec<String> = list
                .items
                .iter()
                .filter(|l| l.name_any().starts_with("kcm-rs-shard-") && l.name_any().ends_with(&suffix))
                .filter_map(|l| l.spec.as_ref()?.holder_identity.clone())
                .filter(|h| ids.contains(h))
                .collect();
            if held.len() == count as usize {
                Ok(())
            } else {
                Err(format!("{} held", held.len()))
            }
        },
    )
    .await;
}

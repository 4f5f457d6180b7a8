//! An idle kcm-rs exports every workqueue series at 0, as kube-controller-manager does from the
//! moment a queue exists, so dashboards built for KCM show 0 rather than "no data".
//!
//! kcm-rs runs every controller read-only (`--shadow`, safe beside upstream in reference mode),
//! limited to an empty namespace so that nothing ever reaches its queues. Every metric family that
//! both it and the cluster's kube-controller-manager export is described alike: the same `# HELP`
//! text, stability level included, and the same `# TYPE`.

use std::{collections::BTreeMap, time::Duration};

use kcm_rs_e2e::{Cluster, KcmRs, with_namespace};

#[tokio::test]
async fn an_idle_kcm_rs_exports_every_workqueue_series_at_zero() {
    let cluster = Cluster::connect().await;
    with_namespace(cluster.clone(), "idle-metrics", |ns| async move {
        let namespace = format!("--namespace={}", ns.name);
        let args = ["--controllers=*", "--shadow", &namespace];
        let kcm = KcmRs::spawn(&cluster, "idle-metrics", &args, None);
        for controller in ["replicaset", "deployment", "job", "ttl-after-finished", "cronjob"] {
            kcm.wait_log(
                &format!("caches synced; starting workers controller=\"{controller}-controller\""),
                Duration::from_secs(60),
            )
            .await;
        }
        let (code, text) = kcm.http_get("/metrics");
        assert_eq!(code, 200);
        for queue in [
            "replicaset",
            "deployment",
            "job",
            "job_orphan_pod",
            "ttl_jobs_to_delete",
            "cronjob",
            "replicationmanager",
        ] {
            for series in [
                "workqueue_depth",
                "workqueue_adds_total",
                "workqueue_retries_total",
                "workqueue_unfinished_work_seconds",
                "workqueue_longest_running_processor_seconds",
                "workqueue_queue_duration_seconds_count",
                "workqueue_work_duration_seconds_count",
            ] {
                let prefix = format!("{series}{{name=\"{queue}\"}} ");
                let line = text.lines().find(|l| l.starts_with(&prefix));
                let value = line.and_then(|l| l[prefix.len()..].parse::<f64>().ok());
                assert_eq!(value, Some(0.0), "{prefix}… missing or not 0 in:\n{text}");
            }
        }
        let (code, upstream) = cluster.upstream_kcm_get("/metrics");
        assert_eq!(code, 200, "{upstream}");
        let ours = descriptions(&text);
        let theirs = descriptions(&upstream);
        let both: Vec<_> = ours.keys().filter(|k| theirs.contains_key(*k)).collect();
        for family in [
            "workqueue_adds_total",
            "workqueue_depth",
            "workqueue_unfinished_work_seconds",
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_network_receive_bytes_total",
            "rest_client_requests_total",
            "rest_client_request_duration_seconds",
            "rest_client_rate_limiter_duration_seconds",
        ] {
            assert!(
                both.contains(&&family.to_owned()),
                "{family} not on both pages: {both:?}"
            );
        }
        let differ: Vec<String> = both
            .iter()
            .filter(|k| ours[**k] != theirs[**k])
            .map(|k| format!("{k}:\n  kcm-rs:   {:?}\n  upstream: {:?}", ours[*k], theirs[*k]))
            .collect();
        assert!(
            differ.is_empty(),
            "described otherwise than upstream's:\n{}",
            differ.join("\n")
        );
    })
    .await;
}

/// Each family's `# HELP` and `# TYPE` lines, by family name.
fn descriptions(page: &str) -> BTreeMap<String, (String, String)> {
    let mut out: BTreeMap<String, (String, String)> = BTreeMap::new();
    for line in page.lines() {
        for (prefix, help) in [("# HELP ", true), ("# TYPE ", false)] {
            if let Some((name, rest)) = line.strip_prefix(prefix).and_then(|l| l.split_once(' ')) {
                let entry = out.entry(name.to_owned()).or_default();
                *(if help { &mut entry.0 } else { &mut entry.1 }) = rest.to_owned();
            }
        }
    }
    out
}

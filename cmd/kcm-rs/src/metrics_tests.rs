//! The exported names and labels, as dashboards built for KCM read them.

use std::time::Duration;

use controller::ControllerMetrics as _;
use informer::MetricsProvider as _;

use super::*;

#[test]
fn an_idle_queue_exports_every_series_at_zero() {
    let m = Metrics::new();
    let _q = m.queue_metrics("replicaset");
    let text = m.encode();
    for line in [
        "workqueue_depth{name=\"replicaset\"} 0",
        "workqueue_adds_total{name=\"replicaset\"} 0",
        "workqueue_retries_total{name=\"replicaset\"} 0",
        "workqueue_queue_duration_seconds_count{name=\"replicaset\"} 0",
        "workqueue_work_duration_seconds_count{name=\"replicaset\"} 0",
        "workqueue_unfinished_work_seconds{name=\"replicaset\"} 0",
        "workqueue_longest_running_processor_seconds{name=\"replicaset\"} 0",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
}

#[test]
fn a_shards_queues_reflectors_and_syncs_carry_the_shard_label() {
    let m = Metrics::new();
    let _plain = m.queue_metrics("job");
    let shard = m.for_shard("3-of-12".into());
    let _q = shard.queue_metrics("job");
    shard.reflector_metrics("pods").watch_events(2);
    m.reflector_metrics("pods").watch_events(1);
    shard.sync_metrics("job").sync(Duration::from_millis(1), true);
    let text = m.encode();
    for line in [
        "workqueue_depth{name=\"job\"} 0",
        "workqueue_depth{name=\"job\",shard=\"3-of-12\"} 0",
        "kcm_rs_reflector_watch_events_total{resource=\"pods\"} 1",
        "kcm_rs_reflector_watch_events_total{resource=\"pods\",shard=\"3-of-12\"} 2",
        "kcm_rs_controller_sync_duration_seconds_count{controller=\"job\",result=\"success\",shard=\"3-of-12\"} 1",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
}

#[test]
fn a_released_shards_series_go_and_the_others_stay() {
    let m = Metrics::new();
    let _plain = m.queue_metrics("job");
    let shard = m.for_shard("3-of-12".into());
    let other = m.for_shard("4-of-12".into());
    shard.queue_metrics("job").add(5);
    let _other = other.queue_metrics("job");
    shard.reflector_metrics("pods").watch_events(2);
    let sync = shard.sync_metrics("job");
    sync.sync(Duration::from_millis(1), false);
    sync.stale_sync_skip("", "pods");
    sync.stale_sync_skip("", "pods");
    assert!(
        m.encode()
            .contains("workqueue_depth{name=\"job\",shard=\"3-of-12\"} 5")
    );
    shard.remove_shard_series();
    let text = m.encode();
    assert!(
        !text.contains("3-of-12"),
        "a series of the released shard stayed:\n{text}"
    );
    for line in [
        "workqueue_depth{name=\"job\"} 0",
        "workqueue_depth{name=\"job\",shard=\"4-of-12\"} 0",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
}

#[test]
fn exposes_upstreams_workqueue_names() {
    let m = Metrics::new();
    let q = m.queue_metrics("replicaset");
    q.add(1);
    q.get(0, Duration::from_millis(3));
    q.retry();
    let text = m.encode();
    for name in [
        "workqueue_depth{name=\"replicaset\"}",
        "workqueue_adds_total{name=\"replicaset\"}",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_retries_total{name=\"replicaset\"}",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
}

/// The whole page a classic Prometheus parser reads: every family of a type the 0.0.4 text format
/// has, and each counter's TYPE line named as its samples.
#[test]
fn the_whole_page_is_prometheus_text() {
    let m = Metrics::new();
    let _q = m.queue_metrics("replicaset");
    let _jobs = m.job_metrics();
    let text = m.encode();
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        let mut words = line.split(' ').skip(2);
        let (name, kind) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
        assert!(
            ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
            "{line}"
        );
        if kind == "counter" {
            assert!(name.ends_with("_total"), "{line}");
        }
    }
    assert!(!text.contains("# EOF") && !text.contains("# UNIT"), "{text}");
}

/// Help texts as KCM's page shows them: the stability level first for every family KCM has (only
/// kcm-rs's own `kcm_rs_*` and client_golang's `process_*` go without), no `.` added, and a Go help text written over several
/// source lines kept on one line with its newlines escaped and its indentation. The e2e test
/// `metrics_idle` compares the families an idle KCM shows with its page.
#[test]
fn help_texts_are_kcms() {
    use job::JobMetrics as _;
    let m = Metrics::new();
    let _q = m.queue_metrics("replicaset");
    // A family is on the page once it has a sample, as in KCM.
    let jobs = m.job_metrics();
    jobs.job_sync("NonIndexed", "success", "reconciling", Duration::from_millis(3));
    jobs.pod_failures_handled_by_policy("Ignore", 1);
    let text = m.encode();
    for line in text.lines().filter(|l| l.starts_with("# HELP ")) {
        let (name, help) = line[7..].split_once(' ').expect("a name and a text");
        if !name.starts_with("kcm_rs_") && !name.starts_with("process_") {
            assert!(
                ["[ALPHA] ", "[BETA] ", "[STABLE] "]
                    .iter()
                    .any(|l| help.starts_with(l)),
                "{line}"
            );
        }
        assert!(!help.ends_with(".."), "{line}");
    }
    let policy = "# HELP job_controller_pod_failures_handled_by_failure_policy_total [BETA] The number of \
                  failed Pods handled by failure policy with\\n\t\t\trespect to the failure policy action \
                  applied based on the matched\\n\t\t\trule.";
    assert!(text.lines().any(|l| l.starts_with(policy)), "{text}");
    assert!(
        text.contains("# HELP job_controller_job_syncs_total [STABLE] The number of job syncs\n"),
        "{text}"
    );
}

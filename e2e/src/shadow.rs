//! Shadow mode's e2e harness: kcm-rs read-only beside upstream's controllers (reference mode) under
//! the shipped read-only roles, checked to disagree with nothing in a set of scenarios, and to
//! report a deliberate disagreement on the right object, counted and logged.

use std::{path::PathBuf, time::Duration};

use crate::{Cluster, KcmRs, TestNamespace, differential::Scenario, wait_for, with_namespace};

/// Settle time given to kcm-rs; the checks wait a multiple of it.
pub const SETTLE: &str = "--shadow-settle-time=3s";
/// How long a scenario's objects stay after it ends before the divergences are read.
const AFTER_SCENARIO: Duration = Duration::from_secs(8);

/// The cluster in reference mode, the shipped RBAC applied, and the shadow ServiceAccount's kubeconfig.
pub async fn reference_cluster() -> (Cluster, PathBuf) {
    let cluster = Cluster::connect().await;
    cluster.hack(&["mode", "reference"]);
    cluster.apply_shipped_rbac();
    let kubeconfig = cluster.service_account_kubeconfig("kcm-rs", "kcm-rs-shadow");
    (cluster, kubeconfig)
}

/// kcm-rs in shadow mode (`args` say so) as the shadow ServiceAccount of `kubeconfig`, once every
/// controller it runs has synced.
pub async fn start_shadow(cluster: &Cluster, name: &str, args: &[&str], kubeconfig: PathBuf) -> KcmRs {
    let shadow = KcmRs::spawn(cluster, name, args, Some(kubeconfig));
    shadow.wait_ready().await;
    shadow
}

/// Runs the scenarios (the heavy ones left out) concurrently under upstream's controllers; after each,
/// nothing may stand against its namespace.
pub async fn assert_no_divergence(cluster: &Cluster, shadow: &KcmRs, scenarios: Vec<Scenario>) {
    futures::future::join_all(scenarios.iter().filter(|s| !s.solo).map(|s| {
        let cluster = cluster.clone();
        async move {
            with_namespace(cluster, &format!("shadow-{}", s.name), |ns| async move {
                (s.run)(ns.clone()).await;
                tokio::time::sleep(AFTER_SCENARIO).await;
                let (code, body) = shadow.http_get("/debug/shadow");
                assert_eq!(code, 200, "{body}");
                let prefix = format!("\"{}/", ns.name);
                assert!(
                    !body.contains(&prefix),
                    "[{}] shadow mode disagreed with upstream: {body}",
                    s.name
                );
            })
            .await;
        }
    }))
    .await;
    let (_, metrics) = shadow.http_get("/metrics");
    assert!(
        !metrics.contains("kcm_rs_shadow_divergences_total{"),
        "no divergence counted:\n{metrics}"
    );
}

/// A kcm-rs running `controller` made wrong on purpose (`--shadow-perturb=<perturbation>`) reports
/// each of `lines` for the object `name` that `create` makes ([`assert_reported`]), under the
/// controller's events component (`controller` but for the ReplicationController controller's
/// `replication-controller`).
pub async fn assert_perturbation_reported<F, Fut>(
    cluster: &Cluster,
    kubeconfig: PathBuf,
    controller: &str,
    perturbation: &str,
    object: (&str, F),
    lines: &[&str],
) where
    F: FnOnce(TestNamespace) -> Fut,
    Fut: Future<Output = ()>,
{
    let component = match controller {
        "replicationcontroller-controller" => "replication-controller",
        c => c,
    };
    let report = Report {
        label: &format!("shadow-{perturbation}"),
        args: &[
            &format!("--controllers={controller}"),
            "--shadow",
            SETTLE,
            &format!("--shadow-perturb={perturbation}"),
        ],
        component,
        lines,
        unreported: &[],
        within: Duration::from_secs(60),
    };
    assert_reported(cluster, kubeconfig, report, object).await;
}

/// A shadow instance, and what it must report.
#[derive(Debug)]
pub struct Report<'a> {
    /// Names its log and its namespace.
    pub label: &'a str,
    pub args: &'a [&'a str],
    /// The events component the divergence is counted under.
    pub component: &'a str,
    /// Each a part of what `/debug/shadow` says of the object.
    pub lines: &'a [&'a str],
    /// Objects of the namespace (by name) that must not be reported beside it.
    pub unreported: &'a [&'a str],
    pub within: Duration,
}

/// A kcm-rs started in shadow mode with `report.args` reports each of `report.lines` for the object
/// `name` that `create` makes, within `report.within`; counts it under `report.component` and logs
/// the object's key.
pub async fn assert_reported<F, Fut>(
    cluster: &Cluster,
    kubeconfig: PathBuf,
    report: Report<'_>,
    (name, create): (&str, F),
) where
    F: FnOnce(TestNamespace) -> Fut,
    Fut: Future<Output = ()>,
{
    let shadow = start_shadow(cluster, report.label, report.args, kubeconfig).await;
    let shadow = &shadow;
    let report = &report;
    with_namespace(cluster.clone(), report.label, |ns| async move {
        create(ns.clone()).await;
        let key = format!("{}/{name}", ns.name);
        let body = wait_for("the divergence to be reported", report.within, || async {
            let (_, body) = shadow.http_get("/debug/shadow");
            if body.contains(&key) { Ok(body) } else { Err(body) }
        })
        .await;
        for line in report.lines {
            assert!(body.contains(line), "field-level diff {line:?}: {body}");
        }
        for other in report.unreported {
            let other = format!("\"{}/{other}", ns.name);
            assert!(!body.contains(&other), "{other} reported as well: {body}");
        }
        let (_, metrics) = shadow.http_get("/metrics");
        let series = format!(
            "kcm_rs_shadow_divergences_total{{controller=\"{}\"}} ",
            report.component
        );
        let counted = metrics
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .and_then(|n| n.trim().parse::<f64>().ok());
        assert!(
            counted.is_some_and(|n| n >= 1.0),
            "the divergence is counted:\n{metrics}"
        );
        assert!(shadow.log_text().contains(&key), "and logged with the object key");
    })
    .await;
}

//! Differential e2e: the same scenarios run with upstream's controller acting (reference mode) and
//! with kcm-rs acting (upstream's controller disabled), on the same control plane, and their
//! normalized outcomes are compared.

use std::{
    collections::{BTreeMap, BTreeSet},
    future::Future,
    panic::AssertUnwindSafe,
    pin::Pin,
    sync::Arc,
};

use futures::{FutureExt as _, future::join_all};
use informer::{HandlerFns, InformerOptions, SharedInformerFactory, wait_for_cache_sync};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::ListParams;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::{Cluster, KcmRs, Mode, ModeGuard, TestNamespace, with_namespace};

/// A normalized outcome: named facts, compared one by one.
pub type Outcome = BTreeMap<String, String>;

/// What a scenario's run returns: the outcome it observed.
pub type ScenarioFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

type ScenarioFn = fn(TestNamespace) -> ScenarioFuture;

/// One scenario: a name and what it does in its namespace, returning what it observed.
#[derive(Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub run: ScenarioFn,
    /// Runs alone, after the others: it loads the control plane enough (hundreds of pods) to delay
    /// other scenarios' events behind the client rate limits.
    pub solo: bool,
}

impl Scenario {
    /// A scenario that runs beside the others.
    pub const fn new(name: &'static str, run: ScenarioFn) -> Self {
        Self {
            name,
            run,
            solo: false,
        }
    }

    /// One that runs alone, after the others.
    pub const fn solo(name: &'static str, run: ScenarioFn) -> Self {
        Self {
            name,
            run,
            solo: true,
        }
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The scenarios named in `KCM_RS_SCENARIOS` (comma-separated), or all when it is unset or empty.
/// A suite whose list holds only some of the names runs those (one variable can name the
/// ReplicaSet scenario `quota` and its ReplicationController twin `rc-quota`); one that holds none
/// of them fails, so that a mistyped name does not pass by running nothing.
pub fn selected(all: Vec<Scenario>) -> Vec<Scenario> {
    let wanted = std::env::var("KCM_RS_SCENARIOS").unwrap_or_default();
    let wanted: Vec<&str> = wanted
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if wanted.is_empty() {
        return all;
    }
    let chosen: Vec<Scenario> = all.into_iter().filter(|s| wanted.contains(&s.name)).collect();
    assert!(
        !chosen.is_empty(),
        "KCM_RS_SCENARIOS names no scenario of this suite: {wanted:?}"
    );
    let others: Vec<&&str> = wanted
        .iter()
        .filter(|w| !chosen.iter().any(|s| s.name == **w))
        .collect();
    if !others.is_empty() {
        println!("KCM_RS_SCENARIOS: not in this suite: {others:?}");
    }
    chosen
}

/// Runs every scenario under upstream (reference mode), then under kcm-rs started with `kcm_rs_args`
/// (replace mode), restores reference mode, and panics with a readable report if any outcome differs
/// or any scenario failed.
pub async fn run_differential(cluster: &Cluster, suite: &str, kcm_rs_args: &[&str], scenarios: &[Scenario]) {
    run_differential_as(cluster, suite, kcm_rs_args, None, scenarios).await;
}

/// [`run_differential`] with kcm-rs using `kubeconfig` (for example a ServiceAccount's token bound to
/// the shipped ClusterRole) instead of the cluster admin's.
pub async fn run_differential_as(
    cluster: &Cluster,
    suite: &str,
    kcm_rs_args: &[&str],
    kubeconfig: Option<std::path::PathBuf>,
    scenarios: &[Scenario],
) {
    let both = under_both(cluster, suite, kcm_rs_args, kubeconfig, |actor| {
        run_scenarios(cluster, scenarios, actor)
    })
    .await;
    assert_agree(suite, scenarios, &both);
}

/// Fails unless kcm-rs exited cleanly and each scenario's outcome under it is upstream's; the
/// message lists every scenario that differs, then kcm-rs's log.
pub fn assert_agree(suite: &str, scenarios: &[Scenario], both: &UnderBoth<Vec<Result<Outcome, String>>>) {
    let mut report = String::new();
    for (s, (want, got)) in scenarios.iter().zip(both.upstream.iter().zip(&both.kcm_rs)) {
        match (want, got) {
            (Err(e), _) => report.push_str(&format!(
                "\n[{}] failed under upstream (the scenario is wrong?): {e}\n",
                s.name
            )),
            (_, Err(e)) => report.push_str(&format!("\n[{}] failed under kcm-rs: {e}\n", s.name)),
            (Ok(want), Ok(got)) if want != got => {
                report.push_str(&format!("\n[{}] differs:\n{}", s.name, diff(want, got)))
            }
            _ => {}
        }
    }
    let tail = &both.log_tail;
    assert!(
        both.exit.success(),
        "kcm-rs did not exit cleanly on SIGTERM ({}); its log:\n{tail}",
        both.exit
    );
    assert!(
        report.is_empty(),
        "{suite}: kcm-rs and upstream disagree:{report}\n--- kcm-rs log (tail) ---\n{tail}"
    );
}

/// What [`under_both`] gives back: the result under each actor, and how kcm-rs ended.
#[derive(Debug)]
pub struct UnderBoth<T> {
    pub upstream: T,
    pub kcm_rs: T,
    /// kcm-rs's exit status on SIGTERM.
    pub exit: std::process::ExitStatus,
    pub log_tail: String,
    /// Panic lines in kcm-rs's log ([`crate::soak::panics`]).
    pub panics: Vec<String>,
}

/// Runs `run("upstream")` in reference mode, then `run("kcm-rs")` in replace mode with kcm-rs started
/// with `kcm_rs_args` (and `kubeconfig`, else the admin's), and leaves the cluster in reference mode,
/// also when `run` panics: the one place that knows how to hand the controllers from one actor to
/// the other.
pub async fn under_both<T, F, Fut>(
    cluster: &Cluster,
    suite: &str,
    kcm_rs_args: &[&str],
    kubeconfig: Option<std::path::PathBuf>,
    run: F,
) -> UnderBoth<T>
where
    F: Fn(&'static str) -> Fut,
    Fut: Future<Output = T>,
{
    under_both_in(cluster, Mode::Replace, suite, kcm_rs_args, kubeconfig, run).await
}

/// [`under_both`], with upstream kube-controller-manager in `mode` while kcm-rs acts: `Bare` for a
/// controller kcm-rs runs where there is no kube-controller-manager at all (the namespace
/// controller).
pub async fn under_both_in<T, F, Fut>(
    cluster: &Cluster,
    mode: Mode,
    suite: &str,
    kcm_rs_args: &[&str],
    kubeconfig: Option<std::path::PathBuf>,
    run: F,
) -> UnderBoth<T>
where
    F: Fn(&'static str) -> Fut,
    Fut: Future<Output = T>,
{
    under_both_flagged(cluster, &[], mode, suite, kcm_rs_args, kubeconfig, run).await
}

/// [`under_both_in`], with `upstream_flags` on kube-controller-manager's command line while upstream
/// acts: a setting compared on both sides (kcm-rs's in `kcm_rs_args`), such as
/// `--terminated-pod-gc-threshold`.
pub async fn under_both_flagged<T, F, Fut>(
    cluster: &Cluster,
    upstream_flags: &[&str],
    mode: Mode,
    suite: &str,
    kcm_rs_args: &[&str],
    kubeconfig: Option<std::path::PathBuf>,
    run: F,
) -> UnderBoth<T>
where
    F: Fn(&'static str) -> Fut,
    Fut: Future<Output = T>,
{
    // The flags never outlive upstream's run: the next switch drops them, and on a panic the guard
    // restores plain reference mode.
    let flagged = ModeGuard::enter_flagged(cluster, Mode::Reference, upstream_flags);
    let upstream = run("upstream").await;
    let mode = flagged.hand_over(mode);
    let replicas = crate::kcm_rs::spawn_replicas(cluster, suite, kcm_rs_args, kubeconfig).await;
    let ours = run("kcm-rs").await;
    let log_tail = replicas
        .iter()
        .map(KcmRs::log_tail)
        .collect::<Vec<_>>()
        .join("\n---\n");
    let panics = replicas.iter().flat_map(crate::soak::panics).collect();
    let exits: Vec<_> = replicas.into_iter().map(KcmRs::stop).collect();
    let exit = exits.iter().find(|e| !e.success()).copied().unwrap_or(exits[0]);
    drop(mode);
    UnderBoth {
        upstream,
        kcm_rs: ours,
        exit,
        log_tail,
        panics,
    }
}

/// Runs `scenarios` under `actor` (its name prefixes their namespaces): all at once, then the solo
/// ones one by one. Each result is the outcome, or the message of the panic that ended the scenario.
pub async fn run_scenarios(
    cluster: &Cluster,
    scenarios: &[Scenario],
    actor: &str,
) -> Vec<Result<Outcome, String>> {
    together_then_solo(scenarios, |s| run_one(cluster.clone(), s, actor)).await
}

/// `run` for every scenario: all but the solo ones at once, then those one by one; the results in
/// the scenarios' order.
pub async fn together_then_solo<F, Fut>(scenarios: &[Scenario], run: F) -> Vec<Result<Outcome, String>>
where
    F: Fn(Scenario) -> Fut,
    Fut: Future<Output = Result<Outcome, String>>,
{
    let together = join_all(scenarios.iter().filter(|s| !s.solo).map(|s| run(*s))).await;
    let mut together = together.into_iter();
    let mut out = Vec::with_capacity(scenarios.len());
    for s in scenarios {
        if s.solo {
            out.push(run(*s).await);
        } else {
            out.push(together.next().expect("one result per scenario"));
        }
    }
    out
}

async fn run_one(cluster: Cluster, scenario: Scenario, actor: &str) -> Result<Outcome, String> {
    let result: Arc<Mutex<Option<Outcome>>> = Arc::default();
    let slot = result.clone();
    let prefix = format!("{}-{actor}", scenario.name);
    let run = with_namespace(cluster.clone(), &prefix, move |ns| async move {
        let counter = PodCounter::start(&ns).await;
        let mut outcome = (scenario.run)(ns.clone()).await;
        outcome.insert("pods ever created".into(), counter.count().to_string());
        outcome.insert("event reasons".into(), event_reasons(&ns).await);
        counter.stop();
        *slot.lock() = Some(outcome);
    });
    match AssertUnwindSafe(run).catch_unwind().await {
        Ok(()) => Ok(result.lock().take().expect("outcome recorded")),
        Err(panic) => Err(panic_message(&*panic)),
    }
}

/// The message a caught panic carried.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "panicked".into())
}

/// The facts on which two outcomes differ, one per line with both values.
pub fn diff(want: &Outcome, got: &Outcome) -> String {
    let keys: BTreeSet<&String> = want.keys().chain(got.keys()).collect();
    let mut out = String::new();
    for k in keys {
        let (w, g) = (want.get(k), got.get(k));
        if w != g {
            out.push_str(&format!(
                "  {k}:\n    upstream: {}\n    kcm-rs:   {}\n",
                show(w),
                show(g)
            ));
        }
    }
    out
}

fn show(v: Option<&String>) -> &str {
    v.map_or("(absent)", String::as_str)
}

/// Counts the distinct pods that ever existed in a namespace, from a watch started before the scenario.
struct PodCounter {
    uids: Arc<Mutex<BTreeSet<String>>>,
    cancel: CancellationToken,
}

impl PodCounter {
    async fn start(ns: &TestNamespace) -> PodCounter {
        let factory =
            SharedInformerFactory::new(ns.cluster.client.clone()).with_namespaces(vec![ns.name.clone()]);
        let pods = factory.namespaced::<Pod>(InformerOptions::default());
        let uids: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        let seen = uids.clone();
        let reg = pods.add_event_handler(
            HandlerFns::new().on_add(move |p: &Arc<Pod>, _| {
                seen.lock().insert(p.metadata.uid.clone().unwrap_or_default());
            }),
            None,
        );
        let cancel = CancellationToken::new();
        factory.start(&cancel);
        assert!(wait_for_cache_sync(&cancel, &[&reg]).await);
        PodCounter { uids, cancel }
    }

    fn count(&self) -> usize {
        self.uids.lock().len()
    }

    fn stop(self) {
        self.cancel.cancel();
    }
}

/// The distinct reasons of events on ReplicaSets, Deployments, Jobs and CronJobs in the namespace, once they
/// have not changed for [`EVENTS_QUIET`]: controllers write events in the background, behind their
/// client's rate limiter, so under load they arrive seconds after the action.
pub(crate) async fn event_reasons(ns: &TestNamespace) -> String {
    let step = std::time::Duration::from_millis(500);
    let mut last = read_event_reasons(ns).await;
    let mut quiet = std::time::Duration::ZERO;
    let mut waited = std::time::Duration::ZERO;
    while quiet < EVENTS_QUIET && waited < EVENTS_MAX_WAIT {
        tokio::time::sleep(step).await;
        waited += step;
        let now = read_event_reasons(ns).await;
        if now == last {
            quiet += step;
        } else {
            quiet = std::time::Duration::ZERO;
            last = now;
        }
    }
    last
}

/// How long the event reasons must stay the same before they are taken.
const EVENTS_QUIET: std::time::Duration = std::time::Duration::from_secs(6);
/// The longest wait for events to settle.
const EVENTS_MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A CronJob's `FailedDelete` for a Job already gone: the controller deleted an old Job, then, its
/// cache not yet showing the deletion, tried again (upstream's CronJob controller keeps no
/// expectations, nor does kcm-rs's, which follows it). Either controller can hit it, depending
/// only on when its watch delivers the deletion, and what is left is the same; seen once from
/// upstream in `cron-history` ("Error deleting job from cronjob ... not found").
fn deleted_twice(e: &Event) -> bool {
    e.involved_object.kind.as_deref() == Some("CronJob")
        && e.reason.as_deref() == Some("FailedDelete")
        && e.message.as_deref().is_some_and(|m| m.contains("not found"))
}

async fn read_event_reasons(ns: &TestNamespace) -> String {
    let events = ns
        .api::<Event>()
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items;
    let reasons: BTreeSet<String> = events
        .iter()
        .filter(|e| {
            matches!(
                e.involved_object.kind.as_deref(),
                Some("ReplicaSet" | "Deployment" | "Job" | "CronJob")
            )
        })
        .filter(|e| !deleted_twice(e))
        .map(|e| {
            format!(
                "{}/{}",
                e.involved_object.kind.as_deref().unwrap_or(""),
                e.reason.as_deref().unwrap_or("")
            )
        })
        .collect();
    reasons.into_iter().collect::<Vec<_>>().join(", ")
}

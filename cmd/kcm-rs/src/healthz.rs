//! The health endpoints. `/healthz` answers as kube-controller-manager's (k8s.io/apiserver's healthz
//! handler over the checks KCM installs): `leaderElection` while electing, one check per running
//! controller, and `ping` only when there is no other; `?verbose` lists the checks, `?exclude=`
//! skips some, and every answer counts in the health SLIs at `/metrics/slis` (`kubernetes_healthcheck`,
//! `kubernetes_healthchecks_total`, with `DELETE` resetting them, as KCM's). `/healthz/<check>`
//! answers one. `/livez` (the same checks) and `/readyz` (every controller's caches synced) are
//! kcm-rs's own, for kubelet probes.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{Path, RawQuery, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use controller::Probe;
use leaderelection::LeaderElector;
use parking_lot::Mutex;

use crate::slis::{Slis, slis_delete, slis_text};

/// How long past the lease duration a leader may go without renewing before /healthz fails
/// (kube-controller-manager: 20 s).
pub const LEADER_ELECTION_HEALTH_TOLERANCE: Duration = Duration::from_secs(20);

/// A running controller as the checks see it.
struct Checked {
    name: String,
    synced: Probe,
    stopped: Probe,
}

/// Why a stopped controller's check fails (`/healthz/<controller>`).
const STOPPED: &str = "the controller stopped on a panic outside its syncs; see the log";

/// What the health endpoints look at. Filled in as the process starts.
#[derive(Default)]
pub struct Health {
    /// A Lease election is configured: its check is listed from the start, healthy until there is
    /// an elector to ask (KCM installs client-go's adaptor before it campaigns).
    electing: std::sync::atomic::AtomicBool,
    elector: Mutex<Option<Arc<LeaderElector>>>,
    /// Sharded: when the shard manager last completed a round, and how long it may go without.
    rounds: Mutex<Option<(tokio::time::Instant, Duration)>>,
    /// Controllers running in this process, with a check that their caches have synced and one
    /// that they stopped on a panic.
    controllers: Mutex<Vec<Checked>>,
    pub(crate) slis: Slis,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health").finish_non_exhaustive()
    }
}

/// One check's outcome: `Err` carries why, for `/healthz/<check>` (the list withholds it).
type Outcome = Result<(), String>;

impl Health {
    /// Lists the `leaderElection` check from now on, before there is an elector.
    pub fn expect_election(&self) {
        self.electing.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn set_elector(&self, e: Arc<LeaderElector>) {
        self.expect_election();
        *self.elector.lock() = Some(e);
    }

    /// The shard manager completed a round; `/healthz` and `/livez` fail once none has for `limit`
    /// (as the leaderElection check fails for an unrenewed lease).
    pub fn round_done(&self, limit: Duration) {
        *self.rounds.lock() = Some((tokio::time::Instant::now(), limit));
    }

    /// A running controller: ready once `synced` holds; its `/healthz` check fails once `stopped`
    /// does (`controller::Started`).
    pub fn add_controller(
        &self,
        name: &str,
        synced: impl Fn() -> bool + Send + Sync + 'static,
        stopped: impl Fn() -> bool + Send + Sync + 'static,
    ) {
        self.controllers.lock().push(Checked {
            name: name.to_owned(),
            synced: Arc::new(synced),
            stopped: Arc::new(stopped),
        });
    }

    /// The first controller that stopped on a panic, if one has.
    pub fn stopped(&self) -> Option<String> {
        self.controllers
            .lock()
            .iter()
            .find(|c| (c.stopped)())
            .map(|c| c.name.clone())
    }

    /// Forgets the controllers whose name ends with `suffix` (a released shard's, `/<shard>`).
    pub fn remove_controllers(&self, suffix: &str) {
        self.controllers.lock().retain(|c| !c.name.ends_with(suffix));
    }

    /// The named checks in KCM's order, and their outcomes (client-go's leader election check
    /// words its failure; a controller's check is a ping, failing only once it stopped on a panic,
    /// until the process exits).
    async fn checks(&self) -> Vec<(String, Outcome)> {
        let mut out = Vec::new();
        let elector = self.elector.lock().clone();
        if let Some(e) = elector {
            let healthy = e.healthy(LEADER_ELECTION_HEALTH_TOLERANCE).await;
            let why = || format!("failed election to renew leadership on lease {}", e.config().name);
            out.push(("leaderElection".to_owned(), healthy.then_some(()).ok_or_else(why)));
        } else if self.electing.load(std::sync::atomic::Ordering::Relaxed) {
            out.push(("leaderElection".to_owned(), Ok(())));
        }
        if let Some((last, limit)) = *self.rounds.lock() {
            let late = last.elapsed();
            let why = || format!("no shard manager round for {late:?}, longer than {limit:?}");
            out.push((
                "shardManager".to_owned(),
                (late <= limit).then_some(()).ok_or_else(why),
            ));
        }
        for c in self.controllers.lock().iter() {
            let outcome = if (c.stopped)() {
                Err(STOPPED.to_owned())
            } else {
                Ok(())
            };
            out.push((c.name.clone(), outcome));
        }
        // k8s.io/apiserver installs `ping` only when it is given no check.
        if out.is_empty() {
            out.push(("ping".to_owned(), Ok(())));
        }
        out
    }

    /// Ready when every running controller's caches have synced. A standby replica (not leading, so
    /// running no controller) is ready too, so that rollouts of a replicated Deployment proceed.
    fn ready(&self) -> (bool, String) {
        let controllers = self.controllers.lock();
        if controllers.is_empty() {
            return (true, "ok (no controller running here: standby)".into());
        }
        let (stopped, running): (Vec<&Checked>, Vec<&Checked>) =
            controllers.iter().partition(|c| (c.stopped)());
        let waiting: Vec<&str> = running
            .iter()
            .filter(|c| !(c.synced)())
            .map(|c| c.name.as_str())
            .collect();
        let mut why = Vec::new();
        if !stopped.is_empty() {
            let names: Vec<&str> = stopped.iter().map(|c| c.name.as_str()).collect();
            why.push(format!("stopped on a panic: {}", names.join(", ")));
        }
        if !waiting.is_empty() {
            why.push(format!("informers not synced: {}", waiting.join(", ")));
        }
        if why.is_empty() {
            (true, "ok".into())
        } else {
            (false, why.join("; "))
        }
    }
}

/// The health routes, over `health`.
pub fn routes<S: Clone + Send + Sync + 'static>(health: Arc<Health>) -> Router<S> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/livez", get(livez))
        .route("/healthz/{*check}", get(one_check))
        .route("/readyz", get(readyz))
        .route("/metrics/slis", get(slis_text).delete(slis_delete))
        .with_state(health)
}

async fn healthz(State(h): State<Arc<Health>>, RawQuery(q): RawQuery) -> Response {
    root(&h, "healthz", q.as_deref()).await
}

async fn livez(State(h): State<Arc<Health>>, RawQuery(q): RawQuery) -> Response {
    root(&h, "livez", q.as_deref()).await
}

/// k8s.io/apiserver's root health handler: every check not excluded, failures always listed
/// (their reasons withheld: the endpoint may be public), the list on success only when asked.
async fn root(h: &Health, name: &str, query: Option<&str>) -> Response {
    let pairs: Vec<(String, String)> = query
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let verbose = pairs.iter().any(|(k, _)| k == "verbose");
    let excluded: BTreeSet<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "exclude")
        .map(|(_, v)| v.as_str())
        .collect();
    let mut unknown = excluded.clone();
    let (mut listed, mut failed) = (String::new(), false);
    for (check, outcome) in h.checks().await {
        if excluded.contains(check.as_str()) {
            unknown.remove(check.as_str());
            listed.push_str(&format!("[+]{check} excluded: ok\n"));
            continue;
        }
        // KCM's SLIs count its one health endpoint; kcm-rs's own /livez leaves them alone.
        if name == "healthz" {
            h.slis.observe(&check, name, outcome.is_ok());
        }
        match outcome {
            Ok(()) => listed.push_str(&format!("[+]{check} ok\n")),
            Err(_) => {
                failed = true;
                listed.push_str(&format!("[-]{check} failed: reason withheld\n"));
            }
        }
    }
    if !unknown.is_empty() {
        let quoted: Vec<String> = unknown.iter().map(|u| format!("{u:?}")).collect();
        listed.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }
    if failed {
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{listed}{name} check failed\n"),
        );
    }
    if !verbose {
        return plain(StatusCode::OK, "ok".to_owned());
    }
    plain(StatusCode::OK, format!("{listed}{name} check passed\n"))
}

async fn one_check(State(h): State<Arc<Health>>, Path(check): Path<String>) -> Response {
    match h.checks().await.into_iter().find(|(n, _)| *n == check) {
        Some((_, Ok(()))) => plain(StatusCode::OK, "ok".to_owned()),
        Some((_, Err(why))) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error: {why}\n"),
        ),
        // Go's `http.NotFound`: the mux has no such path.
        None => secure_serving::not_found(),
    }
}

async fn readyz(State(h): State<Arc<Health>>) -> Response {
    let (ok, text) = h.ready();
    let code = if ok {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    plain(code, text)
}

/// Text as the healthz handler writes it: `http.Error`'s headers, the body as given.
fn plain(code: StatusCode, body: String) -> Response {
    let headers = [
        (header::CONTENT_TYPE, secure_serving::TEXT_PLAIN_UTF8),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ];
    (code, headers, body).into_response()
}

#[cfg(test)]
#[path = "healthz_tests.rs"]
mod tests;

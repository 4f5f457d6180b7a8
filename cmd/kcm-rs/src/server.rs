//! /healthz, /livez, /readyz, /metrics, /debug/shadow and /debug/shards (axum), served by `secure_serving` over
//! HTTPS behind delegated authentication and authorization.

use std::{sync::Arc, time::Duration};

use axum::{
    Json, Router,
    extract::{Path, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use controller::shadow::ShadowState;
use leaderelection::LeaderElector;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

/// How long past the lease duration a leader may go without renewing before /healthz fails
/// (kube-controller-manager: 20 s).
pub const LEADER_ELECTION_HEALTH_TOLERANCE: Duration = Duration::from_secs(20);

type SyncedFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// What the health endpoints look at. Filled in as the process starts.
#[derive(Default)]
pub struct Health {
    elector: Mutex<Option<Arc<LeaderElector>>>,
    /// Sharded: when the shard manager last completed a round, and how long it may go without.
    rounds: Mutex<Option<(tokio::time::Instant, Duration)>>,
    /// Controllers running in this process, with a check that their caches have synced.
    controllers: Mutex<Vec<(String, SyncedFn)>>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health").finish_non_exhaustive()
    }
}

impl Health {
    pub fn set_elector(&self, e: Arc<LeaderElector>) {
        *self.elector.lock() = Some(e);
    }

    /// The shard manager completed a round; `/healthz` and `/livez` fail once none has for `limit`
    /// (as the leaderElection check fails for an unrenewed lease).
    pub fn round_done(&self, limit: Duration) {
        *self.rounds.lock() = Some((tokio::time::Instant::now(), limit));
    }

    pub fn add_controller(&self, name: &str, synced: impl Fn() -> bool + Send + Sync + 'static) {
        self.controllers.lock().push((name.to_owned(), Arc::new(synced)));
    }

    /// Forgets the controllers whose name ends with `suffix` (a released shard's, `/<shard>`).
    pub fn remove_controllers(&self, suffix: &str) {
        self.controllers
            .lock()
            .retain(|(name, _)| !name.ends_with(suffix));
    }

    /// The named checks and their results, as kube-controller-manager's healthz lists them.
    async fn checks(&self) -> Vec<(String, bool)> {
        let mut out = vec![("ping".to_owned(), true)];
        let elector = self.elector.lock().clone();
        if let Some(e) = elector {
            out.push((
                "leaderElection".to_owned(),
                e.healthy(LEADER_ELECTION_HEALTH_TOLERANCE).await,
            ));
        }
        if let Some((last, limit)) = *self.rounds.lock() {
            out.push(("shardManager".to_owned(), last.elapsed() <= limit));
        }
        for (name, _) in self.controllers.lock().iter() {
            out.push((name.clone(), true));
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
        let waiting: Vec<&str> = controllers
            .iter()
            .filter(|(_, synced)| !synced())
            .map(|(n, _)| n.as_str())
            .collect();
        if waiting.is_empty() {
            (true, "ok".into())
        } else {
            (false, format!("informers not synced: {}", waiting.join(", ")))
        }
    }
}

#[derive(Clone)]
struct AppState {
    health: Arc<Health>,
    metrics: Metrics,
    shadow: Option<Arc<ShadowState>>,
    shards: Option<Arc<Mutex<sharding::Status>>>,
}

/// What the endpoints serve from.
pub struct Endpoints {
    pub health: Arc<Health>,
    pub metrics: Metrics,
    pub shadow: Option<Arc<ShadowState>>,
    pub shards: Option<Arc<Mutex<sharding::Status>>>,
    /// `--profiling`: `/debug/pprof/`, `/debug/pprof/profile` and `/debug/pprof/heap`.
    pub profiling: bool,
    /// With `--profiling`, as KCM: `PUT /debug/flags/v` (`crate::verbosity`).
    pub verbosity: Option<Arc<crate::verbosity::Verbosity>>,
}

/// Serves until `cancel` fires.
pub async fn serve(
    server: secure_serving::SecureServer,
    endpoints: Endpoints,
    cancel: CancellationToken,
) -> Result<(), secure_serving::ServingError> {
    let mut app = Router::new()
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/healthz/{check}", get(one_check))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .route("/debug/shadow", get(shadow_report))
        .route("/debug/shards", get(shards_report));
    if endpoints.profiling {
        app = app
            .route("/debug/pprof/", get(pprof_index))
            .route("/debug/pprof/profile", get(cpu_profile))
            .route("/debug/pprof/heap", get(heap_profile));
    }
    if let Some(v) = endpoints.verbosity {
        app = app.merge(crate::verbosity::routes(v));
    }
    let app = app.fallback(not_found).with_state(AppState {
        health: endpoints.health,
        metrics: endpoints.metrics,
        shadow: endpoints.shadow,
        shards: endpoints.shards,
    });
    server.serve(app, cancel).await
}

/// What `/debug/pprof/` lists: the two profiles kcm-rs takes.
async fn pprof_index() -> Response {
    let body = "<html><head><title>/debug/pprof/</title></head><body>/debug/pprof/<br><br>\n\
                Types of profiles available:<br>\n\
                <a href=\"heap?seconds=30\">heap</a>: A sampling of memory allocations of live objects. \
                kcm-rs samples only while asked: give the seconds GET parameter.<br>\n\
                <a href=\"profile\">profile</a>: CPU profile. You can specify the duration in the \
                seconds GET parameter. After you get the profile file, use the go tool pprof command \
                to investigate the profile.\n</body></html>\n";
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

/// Go's `pprof.Profile`: samples for `seconds` (default 30), answers the protobuf as a download.
async fn cpu_profile(uri: http::Uri) -> Response {
    let duration = crate::profiling::seconds(uri.query());
    let taken = crate::profiling::cpu_profile(duration).await;
    download("profile", taken, "Could not enable CPU profiling")
}

/// Go's heap profile handler: the live heap's sampled stacks as a gzipped protobuf download (see
/// `profiling/heap.rs` for what `seconds` means here).
async fn heap_profile(uri: http::Uri) -> Response {
    let taken = crate::profiling::heap_profile(crate::profiling::asked_seconds(uri.query())).await;
    download("heap", taken, "Could not take a heap profile")
}

/// A profile as Go's handlers answer it: a download named `file`, or a 500 with `failed` and why.
fn download(file: &str, taken: Result<Vec<u8>, impl std::fmt::Display>, failed: &str) -> Response {
    match taken {
        Ok(profile) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{file}\""),
                ),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            ],
            profile,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{failed}: {e}\n"),
        )
            .into_response(),
    }
}

/// Go's `http.NotFound`, which KCM answers unknown paths with (after authorization).
async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "404 page not found\n").into_response()
}

async fn healthz(State(s): State<AppState>) -> Response {
    let checks = s.health.checks().await;
    if checks.iter().all(|(_, ok)| *ok) {
        return (StatusCode::OK, "ok").into_response();
    }
    let mut body = String::new();
    for (name, ok) in &checks {
        body.push_str(&if *ok {
            format!("[+]{name} ok\n")
        } else {
            format!("[-]{name} failed: reason withheld\n")
        });
    }
    body.push_str("healthz check failed\n");
    (StatusCode::INTERNAL_SERVER_ERROR, body).into_response()
}

async fn one_check(State(s): State<AppState>, Path(check): Path<String>) -> Response {
    match s.health.checks().await.into_iter().find(|(n, _)| *n == check) {
        Some((_, true)) => (StatusCode::OK, "ok").into_response(),
        Some((_, false)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error: {check} failed"),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, format!("no check named {check:?}")).into_response(),
    }
}

async fn readyz(State(s): State<AppState>) -> Response {
    let (ok, text) = s.health.ready();
    (
        if ok {
            StatusCode::OK
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        },
        text,
    )
        .into_response()
}

async fn metrics_text(State(s): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        s.metrics.encode(),
    )
        .into_response()
}

async fn shadow_report(State(s): State<AppState>) -> Response {
    match &s.shadow {
        Some(state) => Json(state.current()).into_response(),
        None => (StatusCode::NOT_FOUND, "shadow mode is off (--shadow)").into_response(),
    }
}

async fn shards_report(State(s): State<AppState>) -> Response {
    match &s.shards {
        Some(status) => Json(status.lock().clone()).into_response(),
        None => (StatusCode::NOT_FOUND, "not sharded (--shards=1)").into_response(),
    }
}

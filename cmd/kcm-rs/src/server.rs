//! /metrics, /debug/shadow, /debug/shards, the profiles, the health endpoints (`crate::healthz`),
//! the z-pages (`crate::zpages`) and /configz (`crate::configz`),
//! routed by axum and served by `secure_serving` over HTTPS behind delegated authentication and
//! authorization.

use std::{collections::BTreeMap, sync::Arc, time::SystemTime};

use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use controller::shadow::ShadowState;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::{healthz::Health, metrics::Metrics};

#[derive(Clone)]
struct AppState {
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
    /// What `/flagz` lists (`Args::flag_values`).
    pub flags: BTreeMap<String, String>,
    /// What `/configz` answers (`crate::configz::answer`).
    pub configz: Result<axum::body::Bytes, String>,
    /// When the process started, for `/statusz`.
    pub started: SystemTime,
}

/// The header `net/http/pprof` marks its failures with, so that `go tool pprof` prints the text
/// rather than trying to read it as a profile.
const PPROF_ERROR_HEADER: http::HeaderName = http::HeaderName::from_static("x-go-pprof");

/// The top-level paths `/statusz` lists: every one this server answers but `/statusz` itself.
const LISTED_PATHS: [&str; 7] = [
    "/configz", "/debug", "/flagz", "/healthz", "/livez", "/metrics", "/readyz",
];

/// Serves until `cancel` fires.
pub async fn serve(
    server: secure_serving::SecureServer,
    endpoints: Endpoints,
    cancel: CancellationToken,
) -> Result<(), secure_serving::ServingError> {
    let mut app = Router::new()
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
    let zpages = crate::zpages::ZPages::new(
        endpoints.flags,
        endpoints.started,
        LISTED_PATHS.map(str::to_owned).to_vec(),
    );
    let app = app
        .merge(crate::healthz::routes(endpoints.health))
        .merge(crate::zpages::routes(Arc::new(zpages)))
        .merge(crate::configz::routes(endpoints.configz))
        .fallback(not_found)
        .with_state(AppState {
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
    let headers = [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
    ];
    (headers, body).into_response()
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
        // `net/http/pprof`'s `serveError`, after its handlers' nosniff: plain text and the marker.
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::CONTENT_TYPE, secure_serving::TEXT_PLAIN_UTF8),
                (PPROF_ERROR_HEADER, "1"),
            ],
            format!("{failed}: {e}\n"),
        )
            .into_response(),
    }
}

/// Go's `http.NotFound`, which KCM answers unknown paths with (after authorization).
async fn not_found() -> Response {
    secure_serving::not_found()
}

async fn metrics_text(State(s): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, crate::prom_text::CONTENT_TYPE)],
        s.metrics.encode(),
    )
        .into_response()
}

async fn shadow_report(State(s): State<AppState>) -> Response {
    match &s.shadow {
        Some(state) => Json(state.current()).into_response(),
        None => secure_serving::http_error(StatusCode::NOT_FOUND, "shadow mode is off (--shadow)"),
    }
}

async fn shards_report(State(s): State<AppState>) -> Response {
    match &s.shards {
        Some(status) => Json(status.lock().clone()).into_response(),
        None => secure_serving::http_error(StatusCode::NOT_FOUND, "not sharded (--shards=1)"),
    }
}

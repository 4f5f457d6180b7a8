//! `--v` changed while running: `PUT /debug/flags/v` with a number sets the log verbosity, as
//! kube-controller-manager's does (component-base's `GlogSetter`, installed with `--profiling`), so
//! a replica in trouble can be asked for debug logs without a restart. kcm-rs's levels are
//! tracing's, mapped from `--v` as at start ([`level_of`]); a filter set by `RUST_LOG` is replaced.

use std::sync::Arc;

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::{any, put},
};
use tracing_subscriber::EnvFilter;

/// The tracing level `--v` means: 0-2 info, 3-4 debug, 5 and more trace.
pub fn level_of(v: u32) -> &'static str {
    match v {
        0..=2 => "info",
        3..=4 => "debug",
        _ => "trace",
    }
}

/// Sets the process's log filter.
pub struct Verbosity {
    reload: Box<dyn Fn(EnvFilter) -> Result<(), String> + Send + Sync>,
}

impl std::fmt::Debug for Verbosity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verbosity").finish_non_exhaustive()
    }
}

impl Verbosity {
    /// A setter that hands each new filter to `reload` (a `tracing_subscriber` reload handle's).
    pub fn new(reload: impl Fn(EnvFilter) -> Result<(), String> + Send + Sync + 'static) -> Self {
        Self {
            reload: Box::new(reload),
        }
    }

    /// Sets the verbosity `body` names: a whole number, nothing around it (as `GlogSetter` parses
    /// it). The answer is KCM's, whose flag is klog's.
    pub fn set(&self, body: &str) -> Result<String, String> {
        let refused = || format!("invalid verbosity {body:?}: want a whole number");
        if !body.bytes().all(|b| b.is_ascii_digit()) {
            return Err(refused()); // Rust's parse takes a leading '+', Go's ParseUint does not
        }
        let v: u32 = body.parse().map_err(|_| refused())?;
        (self.reload)(EnvFilter::new(level_of(v)))?;
        Ok(format!("successfully set klog.logging.verbosity to {body}"))
    }
}

/// `/debug/flags` (an index of the one flag) and `/debug/flags/v` (PUT only), as KCM's routes.
pub fn routes<S: Clone + Send + Sync + 'static>(verbosity: Arc<Verbosity>) -> Router<S> {
    Router::new()
        .route("/debug/flags", any(index))
        .route("/debug/flags/", any(index))
        .route("/debug/flags/v", put(set).fallback(unsupported))
        .with_state(verbosity)
}

async fn index() -> Response {
    let body = "<html>\n<head>\n<title>/debug/flags/</title>\n</head>\n<body>\n/debug/flags/<br>\n<br>\n\
                flags:<br>\n<table>\n<tr>v<br>\n</table>\n<br>\nfull flags configurable<br>\n</body>\n</html>\n";
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

async fn set(State(v): State<Arc<Verbosity>>, body: Bytes) -> Response {
    let body = String::from_utf8_lossy(&body);
    match v.set(&body) {
        Ok(said) => plain(StatusCode::OK, &said),
        Err(e) => plain(StatusCode::BAD_REQUEST, &e),
    }
}

async fn unsupported() -> Response {
    plain(StatusCode::NOT_ACCEPTABLE, "unsupported http method")
}

fn plain(code: StatusCode, text: &str) -> Response {
    let headers = [
        (header::CONTENT_TYPE, "text/plain"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ];
    (code, headers, format!("{text}\n")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn a_number_sets_the_level_and_anything_else_is_refused() {
        let set: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = set.clone();
        let v = Verbosity::new(move |f| {
            seen.lock().push(f.to_string());
            Ok(())
        });
        for sent in ["4", "7", "1", "04"] {
            assert_eq!(
                v.set(sent).unwrap(),
                format!("successfully set klog.logging.verbosity to {sent}")
            );
        }
        for bad in ["", "x", "-1", "+4", "4\n", " 4"] {
            assert!(v.set(bad).is_err(), "{bad:?}");
        }
        assert_eq!(*set.lock(), ["debug", "trace", "info", "debug"]);
    }
}

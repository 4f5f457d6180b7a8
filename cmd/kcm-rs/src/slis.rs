//! The health SLIs kube-controller-manager serves at `/metrics/slis` (component-base
//! `metrics/prometheus/slis`): each `/healthz` answer sets `kubernetes_healthcheck{name,type}` to 1
//! or 0 per check and counts it in `kubernetes_healthchecks_total{name,status,type}`, beside
//! `process_start_time_seconds`. A registry of its own, as KCM's, so that a `DELETE` resets only
//! these.

use std::{
    sync::{Arc, atomic::AtomicU64},
    time::{SystemTime, UNIX_EPOCH},
};

use axum::{
    extract::State,
    http::header,
    response::{IntoResponse, Response},
};
use parking_lot::Mutex;
use prometheus_client::{
    encoding::text::encode,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use crate::healthz::Health;

/// `name` and `type`, in the order Prometheus's Go client writes them.
type CheckLabels = Vec<(&'static str, String)>;

pub struct Slis {
    registry: Mutex<Registry>,
    result: Family<CheckLabels, Gauge>,
    total: Family<CheckLabels, Counter>,
}

impl Default for Slis {
    fn default() -> Self {
        let result = Family::<CheckLabels, Gauge>::default();
        let total = Family::<CheckLabels, Counter>::default();
        let started = Gauge::<f64, AtomicU64>::default();
        let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        started.set(since_epoch.as_secs_f64());
        // The help texts are component-base's, with its stability prefix; the `.` prometheus-client
        // adds after each comes off in `prom_text`.
        let mut registry = Registry::default();
        registry.register(
            "kubernetes_healthcheck",
            "[STABLE] This metric records the result of a single healthcheck.",
            result.clone(),
        );
        registry.register(
            "kubernetes_healthchecks",
            "[STABLE] This metric records the results of all healthcheck.",
            total.clone(),
        );
        registry.register(
            "process_start_time_seconds",
            "[ALPHA] Start time of the process since unix epoch in seconds.",
            started,
        );
        Slis {
            registry: Mutex::new(registry),
            result,
            total,
        }
    }
}

impl Slis {
    /// One check's answer on the endpoint `kind` (`healthz`).
    pub fn observe(&self, check: &str, kind: &str, ok: bool) {
        let labels = vec![("name", check.to_owned()), ("type", kind.to_owned())];
        self.result.get_or_create(&labels).set(i64::from(ok));
        let status = if ok { "success" } else { "error" };
        let counted = vec![
            ("name", check.to_owned()),
            ("status", status.to_owned()),
            ("type", kind.to_owned()),
        ];
        self.total.get_or_create(&counted).inc();
    }

    fn reset(&self) {
        self.result.clear();
        self.total.clear();
    }

    fn text(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry.lock()).expect("writing to a String cannot fail");
        crate::prom_text::prometheus_text(&out)
    }
}

pub async fn slis_text(State(h): State<Arc<Health>>) -> Response {
    (
        [(header::CONTENT_TYPE, crate::prom_text::CONTENT_TYPE)],
        h.slis.text(),
    )
        .into_response()
}

/// component-base's `HandlerWithReset`: a DELETE empties the SLIs.
pub async fn slis_delete(State(h): State<Arc<Health>>) -> Response {
    h.slis.reset();
    "metrics reset\n".into_response()
}

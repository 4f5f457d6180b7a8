//! What the randomized soaks share: the ReplicaSet soak ([`replicaset`]), the Deployment soak
//! ([`deployment`]) and the Job soak ([`job`]) each drive their objects with
//! random operations from a seeded RNG at one pace ([`Ticks`]), keep a [`Tally`] of them, then require
//! convergence. Here: the seed and length from the environment, polling, the checks every soak ends
//! with (API errors, panics in kcm-rs's log, kcm-rs still healthy) and the failure that replays a run.

use std::{future::Future, time::Duration};

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::Value;
use tokio::time::Instant;

pub mod deployment;
pub mod job;
pub mod replicaset;
mod tally;

pub use tally::{OP_INTERVAL, Tally, Ticks, pick};

/// How long a converged state must hold, unchanged, to count.
pub const STABLE: Duration = Duration::from_secs(3);
/// The KWOK label that keeps a running pod from ever becoming Ready (hack/README.md).
pub const NOT_READY: &str = "kcm-rs.test/ready";

/// `KCM_RS_SOAK_SEED` if set (to replay a failure), else a fresh random seed.
pub fn seed_from_env() -> u64 {
    env_number("KCM_RS_SOAK_SEED").unwrap_or_else(rand::random)
}

/// `KCM_RS_SOAK_SECONDS` if set, else `default`.
pub fn duration_from_env(default: Duration) -> Duration {
    env_number("KCM_RS_SOAK_SECONDS").map_or(default, Duration::from_secs)
}

fn env_number(key: &str) -> Option<u64> {
    let s = std::env::var(key).ok()?;
    Some(s.trim().parse().unwrap_or_else(|e| panic!("{key}={s:?}: {e}")))
}

/// A pod that counts toward its owner's replicas: not being deleted and not finished.
pub fn is_active(p: &Pod) -> bool {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    p.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// kcm-rs's log lines that report a panic, each with the line after it (Rust's panic hook prints the
/// location on one line, "thread … panicked at …", and the message on the next). The controller
/// worker's "sync panicked" line matches too.
pub fn panics(kcm: &crate::KcmRs) -> Vec<String> {
    let text = kcm.log_text();
    let lines: Vec<&str> = text.lines().collect();
    (0..lines.len())
        .filter(|i| lines[*i].contains("panicked"))
        .map(|i| lines[i..lines.len().min(i + 2)].join(" | "))
        .collect()
}

/// Polls `check` every second until it returns `Ok`, for at most `timeout`: the value and how long it
/// took, or the last error. A `Result` instead of [`crate::wait_for`]'s panic, so that a caller can
/// add kcm-rs's panics to the failure.
pub async fn poll<T, F, Fut>(timeout: Duration, mut check: F) -> Result<(T, Duration), String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let start = Instant::now();
    loop {
        match check().await {
            Ok(v) => return Ok((v, start.elapsed())),
            Err(e) if start.elapsed() >= timeout => return Err(format!("after {timeout:?}: {e}")),
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

pub(crate) async fn merge<K>(api: &Api<K>, name: &str, patch: &Value) -> Result<(), kube::Error>
where
    K: Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map(drop)
}

/// Fails the soak test with every failure found and the environment that replays the run.
pub fn assert_passed(failures: &[String], seed: u64, duration: Duration) {
    assert!(
        failures.is_empty(),
        "the soak failed (replay: KCM_RS_SOAK_SEED={seed} KCM_RS_SOAK_SECONDS={}):\n{}",
        duration.as_secs(),
        failures.join("\n")
    );
}

/// What a soak reports besides convergence: API errors its operations met, panics in kcm-rs's log,
/// and kcm-rs gone or unhealthy.
pub fn failures(kcm: &mut crate::KcmRs, errors: &[String]) -> Vec<String> {
    let mut failures = Vec::new();
    if !errors.is_empty() {
        failures.push(format!("unexpected API errors: {errors:#?}"));
    }
    let panics = panics(kcm);
    if !panics.is_empty() {
        failures.push(format!("kcm-rs logged {} panic lines: {panics:#?}", panics.len()));
    }
    if kcm.is_running() {
        let (code, body) = kcm.http_get("/healthz");
        if code != 200 {
            failures.push(format!("kcm-rs /healthz answers {code}: {body}"));
        }
    } else {
        failures.push(format!("kcm-rs exited; its log ends:\n{}", kcm.log_tail()));
    }
    failures
}

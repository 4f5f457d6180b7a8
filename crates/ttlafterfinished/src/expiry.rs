//! Deciding: whether a Job is due for deletion, as a pure function of the Job and the time
//! (upstream `processTTL`, `needsCleanup`, `timeLeft`, `jobFinishTime`).

use std::time::Duration;

use k8s_openapi::{
    api::batch::v1::Job,
    jiff::{SignedDuration, Timestamp},
};

/// What to do with a Job now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Not finished, without a TTL, or already being deleted: nothing, and no need to look again
    /// (a later update of the Job brings it back).
    Nothing,
    /// Finished, its TTL not yet over: look again after this long.
    Later(Duration),
    /// Its TTL is over: delete it. `expired_at` is when it became due (the deletion metric
    /// measures from there).
    Delete { expired_at: Timestamp },
}

/// A finished Job whose finish time cannot be read. Upstream retries such a Job with backoff; only
/// a client that writes a finish condition without its time produces one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpiryError {
    #[error("unable to find the time when the Job finished")]
    NoFinishTime,
}

/// A Job is a candidate once it has a TTL and a finish condition (Complete or Failed, True); the
/// handlers enqueue only those.
pub fn needs_cleanup(job: &Job) -> bool {
    ttl(job).is_some() && finish_condition_time(job).is_some()
}

fn ttl(job: &Job) -> Option<i32> {
    job.spec.as_ref()?.ttl_seconds_after_finished
}

/// The first Complete or Failed condition that is True: `Some(None)` when it has no time.
fn finish_condition_time(job: &Job) -> Option<Option<Timestamp>> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let c = conditions
        .iter()
        .find(|c| matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True")?;
    // Go's zero time is what a missing time decodes to upstream; both mean "not known".
    Some(
        c.last_transition_time
            .as_ref()
            .map(|t| t.0)
            .filter(|t| *t != go_zero_time()),
    )
}

fn go_zero_time() -> Timestamp {
    "0001-01-01T00:00:00Z".parse().expect("a valid timestamp")
}

/// Whether to delete `job` at `now`, wait, or leave it alone.
pub fn decide(job: &Job, now: Timestamp) -> Result<Decision, ExpiryError> {
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(Decision::Nothing);
    }
    let (Some(ttl), Some(finished)) = (ttl(job), finish_condition_time(job)) else {
        return Ok(Decision::Nothing);
    };
    let finished = finished.ok_or(ExpiryError::NoFinishTime)?;
    if finished > now {
        tracing::info!(
            job = ?job.metadata.name,
            namespace = ?job.metadata.namespace,
            "found a Job finished in the future, likely clock skew in the cluster; its cleanup waits"
        );
    }
    // A TTL beyond the timestamp range never expires.
    let Ok(expires) = finished.checked_add(SignedDuration::from_secs(i64::from(ttl))) else {
        return Ok(Decision::Nothing);
    };
    let remaining = now.duration_until(expires);
    if remaining <= SignedDuration::ZERO {
        return Ok(Decision::Delete { expired_at: expires });
    }
    Ok(Decision::Later(
        Duration::try_from(remaining).unwrap_or(Duration::MAX),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(ttl: Option<i32>, condition: Option<(&str, &str, Option<&str>)>, deleting: bool) -> Job {
        let conditions: Vec<_> = condition
            .into_iter()
            .map(|(t, s, at)| json!({"type": t, "status": s, "lastTransitionTime": at}))
            .collect();
        let mut meta = json!({"name": "j", "namespace": "ns"});
        if deleting {
            meta["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        serde_json::from_value(json!({
            "metadata": meta,
            "spec": {"ttlSecondsAfterFinished": ttl, "template": {}},
            "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    const DONE: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn a_finished_job_waits_out_its_ttl_then_is_deleted() {
        let j = job(Some(10), Some(("Complete", "True", Some(DONE))), false);
        assert!(needs_cleanup(&j));
        assert_eq!(
            decide(&j, at("2026-01-01T00:00:04Z")),
            Ok(Decision::Later(Duration::from_secs(6)))
        );
        let due = Decision::Delete {
            expired_at: at("2026-01-01T00:00:10Z"),
        };
        assert_eq!(
            decide(&j, at("2026-01-01T00:00:10Z")),
            Ok(due),
            "due exactly at the TTL"
        );
        assert_eq!(decide(&j, at("2026-01-01T01:00:00Z")), Ok(due));
        let failed = job(Some(0), Some(("Failed", "True", Some(DONE))), false);
        assert_eq!(
            decide(&failed, at(DONE)),
            Ok(Decision::Delete { expired_at: at(DONE) }),
            "a TTL of 0 deletes at once, a failed Job as a complete one"
        );
    }

    #[test]
    fn only_finished_jobs_with_a_ttl_not_being_deleted_are_candidates() {
        let now = at("2026-02-01T00:00:00Z");
        for j in [
            job(None, Some(("Complete", "True", Some(DONE))), false),
            job(Some(1), None, false),
            job(Some(1), Some(("Complete", "False", Some(DONE))), false),
            job(Some(1), Some(("Suspended", "True", Some(DONE))), false),
            job(Some(1), Some(("Complete", "True", Some(DONE))), true),
        ] {
            assert_eq!(decide(&j, now), Ok(Decision::Nothing), "{j:?}");
        }
    }

    #[test]
    fn a_finish_without_a_time_is_an_error_and_the_future_waits() {
        let j = job(Some(1), Some(("Complete", "True", None)), false);
        assert!(needs_cleanup(&j));
        assert_eq!(decide(&j, at(DONE)), Err(ExpiryError::NoFinishTime));
        let zero = job(
            Some(1),
            Some(("Complete", "True", Some("0001-01-01T00:00:00Z"))),
            false,
        );
        assert_eq!(decide(&zero, at(DONE)), Err(ExpiryError::NoFinishTime));
        let skewed = job(
            Some(5),
            Some(("Complete", "True", Some("2026-01-01T00:01:00Z"))),
            false,
        );
        assert_eq!(
            decide(&skewed, at(DONE)),
            Ok(Decision::Later(Duration::from_secs(65)))
        );
        let forever = job(Some(i32::MAX), Some(("Complete", "True", Some(DONE))), false);
        assert!(matches!(decide(&forever, at(DONE)), Ok(Decision::Later(_))));
    }
}

//! The programs' vocabulary: the steps over one Deployment or one Job, and the JSON each writes.
//! `generate` draws them from a seed.

use serde_json::{Value, json};

/// A seeded program. Seeds 0 and 2 modulo 5 drive a Deployment, 1 a Job, 3 a ReplicationController
/// and 4 a CronJob, so that five consecutive seeds cover every kind and one seed alone replays one
/// program.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub seed: u64,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Deployment(DeploymentStep),
    Job(JobStep),
    ReplicationController(RcStep),
    CronJob(CronStep),
}

/// A CronJob's `concurrencyPolicy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Policy {
    Allow,
    Forbid,
    Replace,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Allow => "Allow",
            Policy::Forbid => "Forbid",
            Policy::Replace => "Replace",
        }
    }
}

/// The steps over a CronJob (`super::cronjob`). It stays suspended except in [`CronStep::Run`], so
/// that which minutes it starts Jobs in is the program's, not the clock's.
#[derive(Debug, Clone, PartialEq)]
pub enum CronStep {
    Create {
        policy: Policy,
        /// Its Jobs' pods: `Succeed`, `Fail` (with backoffLimit 0: the Job fails) or `Forever`.
        behaviour: Behaviour,
        /// successfulJobsHistoryLimit and failedJobsHistoryLimit; unset means upstream's defaults.
        limits: Option<(i32, i32)>,
        /// startingDeadlineSeconds: with 1, no slot is ever due (a run unsuspends seconds into the
        /// minute, and upstream counts no slot older than the deadline as missed: no Job, no event).
        deadline: Option<i64>,
        time_zone: Option<&'static str>,
    },
    /// Unsuspended early in a minute the CronJob has not scheduled yet, so that one slot (that
    /// minute's) is due, then suspended again once it is handled, before the next.
    Run,
    Policy(Policy),
    /// The oldest unfinished Job's running pod succeeds or fails.
    Finish {
        succeed: bool,
    },
    /// A Job deleted in the background, the newest or the oldest.
    DeleteJob {
        newest: bool,
    },
    Limits {
        successful: i32,
        failed: i32,
    },
    /// A Job made from the template as `kubectl create job --from=cronjob/...` makes it, named by the
    /// step's position: owned by the CronJob, not in its active list.
    Manual(usize),
}

/// The steps over a ReplicationController (`super::replication`).
#[derive(Debug, Clone, PartialEq)]
pub enum RcStep {
    Create {
        replicas: i32,
        min_ready_seconds: i32,
    },
    Scale(i32),
    MinReadySeconds(i32),
    /// Its first `n` running pods (by name) deleted.
    DeletePods(usize),
    /// The running pod picked by `which` relabelled out of the selector: released, then replaced.
    ReleasePod {
        which: usize,
    },
}

/// A count or a percentage of replicas (an IntOrString).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Amount {
    Count(i32),
    Percent(i32),
}

impl Amount {
    fn to_json(self) -> Value {
        match self {
            Amount::Count(n) => json!(n),
            Amount::Percent(p) => json!(format!("{p}%")),
        }
    }

    /// Upstream's `GetScaledValueFromIntOrPercent`.
    pub fn scaled(self, replicas: i32, round_up: bool) -> i32 {
        match self {
            Amount::Count(n) => n,
            Amount::Percent(p) if round_up => (p * replicas + 99) / 100,
            Amount::Percent(p) => p * replicas / 100,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Strategy {
    Recreate,
    Rolling { surge: Amount, unavailable: Amount },
}

impl Strategy {
    /// The `spec.strategy` to merge; Recreate must drop `rollingUpdate` or the API server refuses it.
    pub fn to_json(self) -> Value {
        match self {
            Strategy::Recreate => json!({"type": "Recreate", "rollingUpdate": null}),
            Strategy::Rolling { surge, unavailable } => json!({
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": surge.to_json(), "maxUnavailable": unavailable.to_json()}
            }),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum DeploymentStep {
    Create {
        replicas: i32,
        strategy: Strategy,
        min_ready_seconds: i32,
        history_limit: Option<i32>,
    },
    Scale(i32),
    /// A new template: image `nginx:<n>`.
    Image(u32),
    Strategy(Strategy),
    Pause(bool),
    /// `kubectl rollout undo --to-revision` of the `back`-th newest older revision.
    Rollback {
        back: usize,
    },
    MinReadySeconds(i32),
    RevisionHistoryLimit(i32),
    DeletePods(usize),
    DeleteReplicaSet {
        newest: bool,
    },
}

impl DeploymentStep {
    /// Whether the step changes only the pod template of an unpaused Deployment: the steps on which
    /// a rollout's availability floor is checked.
    pub fn template_only(&self, paused: bool) -> bool {
        !paused && matches!(self, DeploymentStep::Image(_) | DeploymentStep::Rollback { .. })
    }
}

/// What a Job's pods do, through the container commands the KWOK stages read (hack/README.md,
/// "Simulated pod behaviour").
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behaviour {
    Succeed,
    Fail(i32),
    Forever,
    FailOddIndexes,
}

impl Behaviour {
    /// The container command KWOK's stages read, as the fixed Job scenarios write it.
    pub fn command(self) -> Vec<String> {
        use crate::job_scenarios::{FAIL_ODD_INDEXES, FOREVER, SUCCEED};
        let owned = |c: &[&str]| c.iter().map(|s| (*s).to_owned()).collect();
        match self {
            Behaviour::Succeed => owned(SUCCEED),
            Behaviour::Fail(code) => vec!["sh".into(), "-c".into(), format!("exit {code}")],
            Behaviour::Forever => owned(FOREVER),
            Behaviour::FailOddIndexes => owned(FAIL_ODD_INDEXES),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailureRule {
    FailJobOnExit42,
    IgnoreDisruption,
    /// Needs backoffLimitPerIndex.
    FailIndexOnExit1,
}

impl FailureRule {
    fn to_json(self) -> Value {
        match self {
            FailureRule::FailJobOnExit42 => json!({"action": "FailJob",
                "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}),
            FailureRule::IgnoreDisruption => {
                json!({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]})
            }
            FailureRule::FailIndexOnExit1 => {
                json!({"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}})
            }
        }
    }
}

/// A Job's shape, drawn from a small menu whose every combination the API server accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct JobShape {
    pub indexed: bool,
    pub completions: i32,
    pub parallelism: i32,
    pub behaviour: Behaviour,
    pub backoff_limit: Option<i32>,
    /// backoffLimitPerIndex and maxFailedIndexes (Indexed only).
    pub per_index: Option<(i32, Option<i32>)>,
    pub failure_rules: Vec<FailureRule>,
    /// successPolicy: succeededIndexes "0" (true) or succeededCount 1 (false); Indexed only.
    pub success_on_index_0: Option<bool>,
    /// Only without podFailurePolicy, which allows `Failed` alone.
    pub replacement: Option<&'static str>,
    pub suspend: bool,
}

impl JobShape {
    pub fn spec(&self) -> Value {
        let mut s = json!({
            "completions": self.completions,
            "parallelism": self.parallelism,
            "suspend": self.suspend,
        });
        if self.indexed {
            s["completionMode"] = json!("Indexed");
        }
        if let Some(b) = self.backoff_limit {
            s["backoffLimit"] = json!(b);
        }
        if let Some((per_index, max_failed)) = self.per_index {
            s["backoffLimitPerIndex"] = json!(per_index);
            if let Some(m) = max_failed {
                s["maxFailedIndexes"] = json!(m);
            }
        }
        if !self.failure_rules.is_empty() {
            let rules: Vec<Value> = self.failure_rules.iter().map(|r| r.to_json()).collect();
            s["podFailurePolicy"] = json!({"rules": rules});
        }
        match self.success_on_index_0 {
            Some(true) => s["successPolicy"] = json!({"rules": [{"succeededIndexes": "0"}]}),
            Some(false) => s["successPolicy"] = json!({"rules": [{"succeededCount": 1}]}),
            None => {}
        }
        if let Some(r) = self.replacement {
            s["podReplacementPolicy"] = json!(r);
        }
        s
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Propagation {
    Foreground,
    Background,
    Orphan,
}

#[derive(Debug, Clone, PartialEq)]
pub enum JobStep {
    Create(JobShape),
    Suspend(bool),
    Parallelism(i32),
    /// The running pod picked by `which` fails, as through the ignore-disruption scenario's label
    /// patch, with `exit_code` and, if `disruption`, the DisruptionTarget condition.
    FailPod {
        which: usize,
        exit_code: i32,
        disruption: bool,
    },
    SucceedPod {
        which: usize,
    },
    DeletePod {
        which: usize,
    },
    /// The Job deleted: always a program's last step.
    Delete(Propagation),
    /// `ttlSecondsAfterFinished` set: a finished Job is deleted that long after it finished (by the
    /// TTL-after-finished controller), so this too is always a program's last step.
    Ttl(i32),
}

/// The Deployment's largest size: small enough for a step to settle in seconds.
pub const MAX_REPLICAS: i32 = 8;

impl Program {
    pub fn kind(&self) -> Kind {
        kind_of(self.seed)
    }
}

pub(super) fn kind_of(seed: u64) -> Kind {
    match seed % 5 {
        0 | 2 => Kind::Deployment,
        1 => Kind::Job,
        3 => Kind::ReplicationController,
        _ => Kind::CronJob,
    }
}

/// Which object a program drives (one per program, named [`DEPLOYMENT`], [`JOB`], [`RC`] or [`CRON`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Deployment,
    Job,
    ReplicationController,
    CronJob,
}

pub const DEPLOYMENT: &str = "web";
pub const JOB: &str = "job";
pub const RC: &str = "rc";
pub const CRON: &str = "cron";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_as_upstream_does() {
        assert_eq!(Amount::Percent(25).scaled(3, true), 1);
        assert_eq!(Amount::Percent(25).scaled(3, false), 0);
        assert_eq!(Amount::Percent(50).scaled(5, false), 2);
        assert_eq!(Amount::Count(2).scaled(0, true), 2);
    }
}

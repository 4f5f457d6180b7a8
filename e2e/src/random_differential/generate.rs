//! Drawing a program from a seed. Everything random is drawn here, before anything runs, so that
//! both controllers get the same steps and a seed replays them; which pod a step acts on is decided
//! later from the cluster's state, by rules that pick equivalent pods under both controllers
//! (`execute`). The menus keep to what validation accepts: the suite counts every 422 as a
//! controller's.

use rand::{Rng as _, SeedableRng as _, rngs::StdRng, seq::IndexedRandom as _};

use super::program::*;
use crate::soak::pick;

impl Program {
    /// The program of `seed`, `steps` long (a Job program ends early if it deletes its Job).
    pub fn generate(seed: u64, steps: usize) -> Program {
        let mut rng = StdRng::seed_from_u64(seed);
        let steps = match kind_of(seed) {
            Kind::Deployment => deployment_steps(&mut rng, steps),
            Kind::Job => job_steps(&mut rng, steps),
            Kind::ReplicationController => super::replication::steps(&mut rng, steps),
            Kind::CronJob => super::cronjob::steps(&mut rng, steps),
        };
        Program { seed, steps }
    }
}

fn amount(rng: &mut StdRng, counts: &[i32], percents: &[i32]) -> Amount {
    let n = counts.len() + percents.len();
    let i = rng.random_range(0..n);
    if i < counts.len() {
        Amount::Count(counts[i])
    } else {
        Amount::Percent(percents[i - counts.len()])
    }
}

fn strategy(rng: &mut StdRng) -> Strategy {
    if rng.random_bool(0.2) {
        return Strategy::Recreate;
    }
    let surge = amount(rng, &[0, 1, 2], &[25, 50]);
    let mut unavailable = amount(rng, &[0, 1], &[25, 50]);
    if surge == Amount::Count(0) && unavailable == Amount::Count(0) {
        // Both zero is refused by validation.
        unavailable = Amount::Count(1);
    }
    Strategy::Rolling { surge, unavailable }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum DeploymentOp {
    Scale,
    Image,
    Strategy,
    Pause,
    Rollback,
    MinReadySeconds,
    HistoryLimit,
    DeletePods,
    DeleteReplicaSet,
}

const DEPLOYMENT_WEIGHTS: &[(DeploymentOp, u32)] = &[
    (DeploymentOp::Scale, 18),
    (DeploymentOp::Image, 22),
    (DeploymentOp::Strategy, 10),
    (DeploymentOp::Pause, 10),
    (DeploymentOp::Rollback, 12),
    (DeploymentOp::MinReadySeconds, 6),
    (DeploymentOp::HistoryLimit, 6),
    (DeploymentOp::DeletePods, 10),
    (DeploymentOp::DeleteReplicaSet, 6),
];

fn deployment_steps(rng: &mut StdRng, n: usize) -> Vec<Step> {
    let mut out = vec![DeploymentStep::Create {
        replicas: rng.random_range(1..=6),
        strategy: strategy(rng),
        min_ready_seconds: rng.random_range(0..=1),
        history_limit: rng.random_bool(0.4).then(|| rng.random_range(0..=3)),
    }];
    let (mut image, mut paused) = (1, false);
    while out.len() < n {
        let step = match pick(rng, DEPLOYMENT_WEIGHTS) {
            DeploymentOp::Scale => DeploymentStep::Scale(rng.random_range(0..=MAX_REPLICAS)),
            DeploymentOp::Image => {
                image += 1;
                DeploymentStep::Image(image)
            }
            DeploymentOp::Strategy => DeploymentStep::Strategy(strategy(rng)),
            DeploymentOp::Pause => {
                paused = !paused;
                DeploymentStep::Pause(paused)
            }
            DeploymentOp::Rollback => DeploymentStep::Rollback {
                back: rng.random_range(1..=2),
            },
            DeploymentOp::MinReadySeconds => DeploymentStep::MinReadySeconds(rng.random_range(0..=1)),
            DeploymentOp::HistoryLimit => DeploymentStep::RevisionHistoryLimit(rng.random_range(0..=3)),
            DeploymentOp::DeletePods => DeploymentStep::DeletePods(rng.random_range(1..=2)),
            DeploymentOp::DeleteReplicaSet => DeploymentStep::DeleteReplicaSet {
                newest: rng.random_bool(0.5),
            },
        };
        out.push(step);
    }
    out.truncate(n);
    out.into_iter().map(Step::Deployment).collect()
}

/// A Job shape. Failure budgets stay at 0 or 1 because every failure that is retried costs a
/// re-creation backoff of 10 s, then 20 s, and a step waits for them.
fn job_shape(rng: &mut StdRng) -> JobShape {
    let indexed = rng.random_bool(0.5);
    let completions = rng.random_range(1..=4);
    let behaviours: &[(Behaviour, u32)] = &[
        (Behaviour::Forever, 45),
        (Behaviour::Succeed, 20),
        (Behaviour::Fail(1), 10),
        (Behaviour::Fail(42), 5),
        (Behaviour::FailOddIndexes, 20),
    ];
    let mut behaviour = pick(rng, behaviours);
    if behaviour == Behaviour::FailOddIndexes && !indexed {
        behaviour = Behaviour::Forever;
    }
    let per_index = (indexed && rng.random_bool(0.35)).then(|| {
        let max_failed = rng
            .random_bool(0.5)
            .then(|| rng.random_range(0..=completions.min(2)));
        (rng.random_range(0..=1), max_failed)
    });
    let mut failure_rules = Vec::new();
    if rng.random_bool(0.4) {
        let mut menu = vec![FailureRule::FailJobOnExit42, FailureRule::IgnoreDisruption];
        if per_index.is_some() {
            menu.push(FailureRule::FailIndexOnExit1);
        }
        let n = rng.random_range(1..=2);
        for _ in 0..n {
            let r = *menu.choose(rng).expect("rules");
            if !failure_rules.contains(&r) {
                failure_rules.push(r);
            }
        }
    }
    let replacement = if failure_rules.is_empty() {
        *[None, Some("TerminatingOrFailed"), Some("Failed")]
            .choose(rng)
            .expect("policies")
    } else {
        None
    };
    // A Job whose pods end on their own has finished before a second step unless it starts
    // suspended; its later steps would all be no-ops.
    let ends_alone = behaviour != Behaviour::Forever;
    JobShape {
        indexed,
        completions,
        parallelism: rng.random_range(1..=3),
        behaviour,
        backoff_limit: per_index.is_none().then(|| rng.random_range(0..=1)),
        per_index,
        failure_rules,
        success_on_index_0: (indexed && rng.random_bool(0.25)).then(|| rng.random_bool(0.5)),
        replacement,
        suspend: rng.random_bool(if ends_alone { 0.7 } else { 0.25 }),
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum JobOp {
    Suspend,
    Parallelism,
    FailPod,
    SucceedPod,
    DeletePod,
    Delete,
    Ttl,
}

const JOB_WEIGHTS: &[(JobOp, u32)] = &[
    (JobOp::Suspend, 18),
    (JobOp::Parallelism, 16),
    (JobOp::FailPod, 20),
    (JobOp::SucceedPod, 16),
    (JobOp::DeletePod, 16),
    (JobOp::Delete, 6),
    (JobOp::Ttl, 6),
];

fn job_steps(rng: &mut StdRng, n: usize) -> Vec<Step> {
    let shape = job_shape(rng);
    let mut suspended = shape.suspend;
    let mut out = vec![JobStep::Create(shape)];
    while out.len() < n {
        let step = match pick(rng, JOB_WEIGHTS) {
            JobOp::Suspend => {
                suspended = !suspended;
                JobStep::Suspend(suspended)
            }
            JobOp::Parallelism => JobStep::Parallelism(rng.random_range(0..=3)),
            JobOp::FailPod => JobStep::FailPod {
                which: rng.random_range(0..4),
                exit_code: *[1, 42, 137].choose(rng).expect("codes"),
                disruption: rng.random_bool(0.4),
            },
            JobOp::SucceedPod => JobStep::SucceedPod {
                which: rng.random_range(0..4),
            },
            JobOp::DeletePod => JobStep::DeletePod {
                which: rng.random_range(0..4),
            },
            JobOp::Delete => {
                let p = *[
                    Propagation::Foreground,
                    Propagation::Background,
                    Propagation::Orphan,
                ]
                .choose(rng)
                .expect("policies");
                out.push(JobStep::Delete(p));
                break;
            }
            JobOp::Ttl => {
                out.push(JobStep::Ttl(rng.random_range(0..=2)));
                break;
            }
        };
        out.push(step);
    }
    out.truncate(n);
    out.into_iter().map(Step::Job).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_program_every_time() {
        for seed in 0..50 {
            assert_eq!(Program::generate(seed, 8), Program::generate(seed, 8));
        }
        assert_ne!(Program::generate(2, 8), Program::generate(4, 8));
    }

    #[test]
    fn five_consecutive_seeds_drive_every_kind() {
        let d = Program::generate(10, 5);
        assert!(matches!(
            d.steps[0],
            Step::Deployment(DeploymentStep::Create { .. })
        ));
        assert_eq!(d.steps.len(), 5);
        assert!(matches!(
            Program::generate(12, 5).steps[0],
            Step::Deployment(DeploymentStep::Create { .. })
        ));
        let j = Program::generate(11, 5);
        assert!(matches!(j.steps[0], Step::Job(JobStep::Create(_))));
        assert!(j.steps.len() <= 5);
        let rc = Program::generate(13, 5);
        assert!(matches!(
            rc.steps[0],
            Step::ReplicationController(RcStep::Create { .. })
        ));
        assert_eq!(rc.steps.len(), 5);
        let cron = Program::generate(14, 5);
        assert_eq!(cron.kind(), Kind::CronJob);
        assert_eq!(cron.steps.len(), 5);
    }

    /// The combinations validation refuses never come out of the generator: the suite counts every
    /// 422 as a controller's.
    #[test]
    fn job_shapes_stay_within_what_validation_accepts() {
        for seed in (1..2000).step_by(5) {
            let p = Program::generate(seed, 1);
            let Step::Job(JobStep::Create(s)) = &p.steps[0] else {
                panic!("a Job program starts with its Job")
            };
            if !s.indexed {
                assert!(s.per_index.is_none() && s.success_on_index_0.is_none());
                assert_ne!(s.behaviour, Behaviour::FailOddIndexes);
            }
            if s.failure_rules.contains(&FailureRule::FailIndexOnExit1) {
                assert!(s.per_index.is_some());
            }
            if !s.failure_rules.is_empty() {
                assert_ne!(s.replacement, Some("TerminatingOrFailed"));
            }
            if let Some((_, Some(m))) = s.per_index {
                assert!(m <= s.completions);
            }
        }
        for seed in (0..2000).step_by(2) {
            for step in Program::generate(seed, 12).steps {
                if let Step::Deployment(
                    DeploymentStep::Strategy(Strategy::Rolling { surge, unavailable })
                    | DeploymentStep::Create {
                        strategy: Strategy::Rolling { surge, unavailable },
                        ..
                    },
                ) = step
                {
                    assert!(surge != Amount::Count(0) || unavailable != Amount::Count(0));
                }
            }
        }
    }

    #[test]
    fn a_deleted_job_or_a_ttl_ends_its_program() {
        for seed in (1..400).step_by(5) {
            let steps = Program::generate(seed, 12).steps;
            let at = steps
                .iter()
                .position(|s| matches!(s, Step::Job(JobStep::Delete(_) | JobStep::Ttl(_))));
            if let Some(i) = at {
                assert_eq!(i, steps.len() - 1);
            }
        }
    }
}

use rand::SeedableRng as _;

use super::*;
use crate::random_differential::program::{Kind, Program};

#[test]
fn every_program_creates_its_cron_job_suspended_then_runs_a_slot() {
    for seed in (4..2000).step_by(5) {
        let p = Program::generate(seed, 8);
        assert_eq!(p.kind(), Kind::CronJob);
        let Step::CronJob(create) = &p.steps[0] else {
            panic!("a CronJob program");
        };
        let cj = manifest(create).expect("the first step creates the CronJob");
        assert_eq!(cj.spec.suspend, Some(true));
        assert_eq!(p.steps[1], Step::CronJob(CronStep::Run));
        let runs = p
            .steps
            .iter()
            .filter(|s| **s == Step::CronJob(CronStep::Run))
            .count();
        assert!(runs <= MAX_RUNS, "{runs} runs");
        let manual: Vec<&Step> = p
            .steps
            .iter()
            .filter(|s| matches!(s, Step::CronJob(CronStep::Manual(_))))
            .collect();
        let mut names: Vec<String> = manual.iter().map(|s| format!("{s:?}")).collect();
        names.dedup();
        assert_eq!(names.len(), manual.len(), "manual Jobs' names are unique");
    }
    let mut rng = StdRng::seed_from_u64(1);
    assert_eq!(steps(&mut rng, 1).len(), 1);
}

/// What a run waits for, as upstream's sync decides it: nothing with a deadline of 1 s, the
/// skip under Forbid with a Job listed active, otherwise the slot recorded (Replace and Allow alike).
#[test]
fn a_run_waits_for_what_upstream_makes_of_its_slot() {
    let cj = |policy: &str, deadline: Option<i64>, active: bool| -> CronJob {
        let active: Vec<serde_json::Value> = if active {
            vec![json!({"name": "cron-1", "uid": "1"})]
        } else {
            vec![]
        };
        serde_json::from_value(json!({
            "metadata": {"name": CRON},
            "spec": {"schedule": SCHEDULE, "concurrencyPolicy": policy,
                     "startingDeadlineSeconds": deadline, "jobTemplate": {"spec": {"template": {}}}},
            "status": {"active": active}
        }))
        .unwrap()
    };
    assert_eq!(expect(&cj("Forbid", Some(1), true)), Expect::NotDue);
    assert_eq!(expect(&cj("Forbid", None, true)), Expect::Skipped);
    assert_eq!(expect(&cj("Forbid", Some(300), false)), Expect::Recorded);
    assert_eq!(expect(&cj("Replace", None, true)), Expect::Recorded);
    assert_eq!(expect(&cj("Allow", None, true)), Expect::Recorded);
}

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

//! A seeded, randomized differential suite: the fixed scenarios only reach the orders of operations
//! their authors thought of, so here a seed generates multi-step programs over a Deployment, a Job
//! (which may end with a TTL after finishing), a ReplicationController or a CronJob ([`program`],
//! [`generate`], [`replication`], [`cronjob`], [`cronjob_outcome`]), each program runs under upstream's controllers (reference mode)
//! and then under kcm-rs's (replace mode), and the two runs are compared step by step on a
//! projection taken once each step has settled ([`projection`], [`settle`]). Throughout, invariants
//! are checked on each watch event under both controllers ([`invariants`]), and the API server's
//! count of refused writes is read around each step ([`metrics`]). An invariant broken under kcm-rs
//! fails the run; one broken under upstream is printed and does not: upstream is the reference.
//! maxSurge bounds the ReplicaSets' specs, which is checked; live pods above it are only printed,
//! under either controller, because a scaled-down ReplicaSet's pod can still be waiting for its
//! delete when the new ReplicaSet's pod is created, on a loaded machine, under upstream as well.
//! An Indexed Job's scale-down may remove different indexes under the two controllers when the
//! pods' timestamps differ: see [`ranking`].
//!
//! Knobs: `KCM_RS_RANDOM_SEED` (the first program's seed; program `i` of a round uses seed + i, so
//! one program's seed with `KCM_RS_RANDOM_PROGRAMS=1` replays it alone), `KCM_RS_RANDOM_PROGRAMS`
//! (programs per round, run side by side), `KCM_RS_RANDOM_STEPS` (steps per program),
//! `KCM_RS_RANDOM_SECONDS` (keep running rounds, with fresh seeds, until that long has passed).

pub mod cronjob;
pub mod cronjob_outcome;
pub mod execute;
pub mod generate;
pub mod invariants;
pub mod metrics;
pub mod program;
pub mod projection;
pub mod ranking;
pub mod replication;
pub mod runner;
pub mod settle;

use std::time::Duration;

use futures::future::join_all;
use tokio::time::Instant;

use crate::{
    Cluster,
    differential::{UnderBoth, diff, under_both},
};
use program::Program;
use runner::Run;

/// kcm-rs runs the six controllers the programs need: a Deployment's rollout goes through its
/// ReplicaSet controller, a Job's TTL through the TTL-after-finished controller, a CronJob's Jobs
/// through the Job controller.
const KCM_RS_ARGS: &[&str] = &[
    "--controllers=deployment-controller,replicaset-controller,replicationcontroller-controller,\
     job-controller,ttl-after-finished-controller,cronjob-controller",
];
/// The short run's size (`make test`): five programs side by side (five consecutive seeds: two
/// Deployments, a Job, a ReplicationController and a CronJob), each step taking 3 to 15 s to
/// settle except a CronJob's runs, which wait for a minute they have not scheduled: about two and
/// a half minutes per mode.
const PROGRAMS: usize = 5;
const STEPS: usize = 6;

/// The run's configuration, from the environment.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub seed: u64,
    pub programs: usize,
    pub steps: usize,
    /// Keep running rounds until this long has passed; one round when unset.
    pub duration: Option<Duration>,
}

fn env_number(key: &str) -> Option<u64> {
    let s = std::env::var(key).ok()?;
    Some(s.trim().parse().unwrap_or_else(|e| panic!("{key}={s:?}: {e}")))
}

impl Config {
    pub fn from_env() -> Config {
        Self::from_env_with(PROGRAMS, STEPS)
    }

    /// [`Self::from_env`] with other defaults for the numbers of programs and steps (another suite's
    /// programs, with the same knobs).
    pub fn from_env_with(programs: usize, steps: usize) -> Config {
        let count = |key, default| env_number(key).map_or(default, |n| usize::try_from(n).unwrap_or(default));
        Config {
            seed: env_number("KCM_RS_RANDOM_SEED").unwrap_or_else(rand::random),
            programs: count("KCM_RS_RANDOM_PROGRAMS", programs).max(1),
            steps: count("KCM_RS_RANDOM_STEPS", steps).max(1),
            duration: env_number("KCM_RS_RANDOM_SECONDS").map(Duration::from_secs),
        }
    }

    /// The environment that replays `programs` programs from `seed`.
    pub fn replay(&self, seed: u64, programs: usize) -> String {
        format!(
            "KCM_RS_RANDOM_SEED={seed} KCM_RS_RANDOM_PROGRAMS={programs} KCM_RS_RANDOM_STEPS={} \
             hack/e2e.sh random_differential   (on a running cluster: the same variables before \
             `cargo test -p kcm-rs-e2e --test random_differential`)",
            self.steps
        )
    }
}

/// Runs rounds of programs under both actors until the configuration says stop; panics with a report
/// (seeds, the first differing step with both projections, the replay command) on the first round
/// that fails.
pub async fn run(cluster: &Cluster) {
    let config = Config::from_env();
    println!(
        "random differential: seed {}, {} programs of {} steps per round{}; replay: {}",
        config.seed,
        config.programs,
        config.steps,
        config
            .duration
            .map_or(String::new(), |d| format!(", rounds for {d:?}")),
        config.replay(config.seed, config.programs)
    );
    let start = Instant::now();
    for round in 0u64.. {
        let first = config
            .seed
            .wrapping_add(round.wrapping_mul(config.programs as u64));
        let programs: Vec<Program> = (0..config.programs as u64)
            .map(|i| Program::generate(first.wrapping_add(i), config.steps))
            .collect();
        let both = under_both(cluster, "random-differential", KCM_RS_ARGS, None, |actor| {
            join_all(
                programs
                    .iter()
                    .map(|p| runner::run(cluster.clone(), p.clone(), actor)),
            )
        })
        .await;
        let report = report(&config, first, &programs, &both);
        assert!(report.is_empty(), "{report}");
        println!(
            "round {round}: {} programs from seed {first} agree ({:?} so far)",
            programs.len(),
            start.elapsed()
        );
        if config.duration.is_none_or(|d| start.elapsed() >= d) {
            break;
        }
    }
}

/// Everything wrong with a round, or nothing.
fn report(config: &Config, first: u64, programs: &[Program], both: &UnderBoth<Vec<Run>>) -> String {
    let mut out = String::new();
    for (p, (up, ours)) in programs.iter().zip(both.upstream.iter().zip(&both.kcm_rs)) {
        let problems = compare(up, ours);
        if problems.is_empty() {
            continue;
        }
        let steps: Vec<String> = p
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| format!("    {i}: {s:?}"))
            .collect();
        out.push_str(&format!(
            "\n=== program seed {} ({:?}), replay: {}\n  steps:\n{}\n{}",
            p.seed,
            p.kind(),
            config.replay(p.seed, 1),
            steps.join("\n"),
            problems
        ));
    }
    if !both.exit.success() {
        out.push_str(&format!(
            "\nkcm-rs did not exit cleanly on SIGTERM ({})\n",
            both.exit
        ));
    }
    if !both.panics.is_empty() {
        out.push_str(&format!("\nkcm-rs logged panics: {:#?}\n", both.panics));
    }
    if out.is_empty() {
        return out;
    }
    format!(
        "random differential failed (round seed {first}, replay the round: {}):{out}\n--- kcm-rs log (tail) ---\n{}",
        config.replay(first, programs.len()),
        both.log_tail
    )
}

fn show(o: &crate::differential::Outcome) -> String {
    o.iter()
        .map(|(k, v)| format!("      {k}: {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first step at which the two runs part, and whatever else either run reports.
pub fn compare(up: &Run, ours: &Run) -> String {
    let mut out = String::new();
    for (who, r) in [("upstream", up), ("kcm-rs", ours)] {
        if let Some(f) = &r.failure {
            out.push_str(&format!("  the harness failed under {who}: {f}\n"));
        }
        for v in &r.violations {
            if who == "upstream" {
                println!("note: invariant broken under upstream (the reference; not a failure): {v}");
            } else {
                out.push_str(&format!("  invariant broken under {who}: {v}\n"));
            }
        }
        for n in &r.notes {
            println!("note: under {who} (upstream does not keep this bound either): {n}");
        }
        for v in &r.refusals {
            // The counter is the API server's: with programs side by side, the write may be
            // another program's of the same round.
            out.push_str(&format!("  a write refused as invalid under {who}: {v}\n"));
        }
        // Both stuck the same way would otherwise compare equal.
        for (k, e) in r
            .steps
            .iter()
            .enumerate()
            .filter_map(|(k, s)| Some((k, s.as_ref().err()?)))
        {
            out.push_str(&format!("  step {k} did not settle under {who}: {e}\n"));
        }
    }
    let n = up.steps.len().max(ours.steps.len());
    for k in 0..n {
        let (a, b) = (up.steps.get(k), ours.steps.get(k));
        if a == b {
            continue;
        }
        if let Some(why) = parted_by_ranking(k, up, ours) {
            println!("note: the runs part at step {k}, compared up to there: {why}");
            return out;
        }
        out.push_str(&format!("  first difference at step {k}:\n"));
        for (who, r) in [("upstream", up), ("kcm-rs", ours)] {
            if let Some(m) = r.removals.get(&k) {
                out.push_str(&format!(
                    "    {who} deleted indexes {:?}; the ranking on its pods picks {:?}\n",
                    m.deleted, m.expected
                ));
            }
        }
        match (a, b) {
            (Some(Ok(a)), Some(Ok(b))) => out.push_str(&format!(
                "    upstream:\n{}\n    kcm-rs:\n{}\n    differing:\n{}",
                show(a),
                show(b),
                diff(a, b)
            )),
            _ => out.push_str(&format!("    upstream: {a:?}\n    kcm-rs:   {b:?}\n")),
        }
        return out;
    }
    if up.events != ours.events && up.failure.is_none() && ours.failure.is_none() {
        out.push_str(&format!(
            "  event reasons at the end:\n    upstream: {}\n    kcm-rs:   {}\n",
            up.events, ours.events
        ));
    }
    out
}

/// Why the runs may part at step `k`: each removed, on an Indexed Job's scale-down, exactly the
/// indexes upstream's ranking picks on its own pods, and those differ (the ranking's timestamps have
/// a resolution of a second, and the two runs' pods were not created and made Ready in the same
/// seconds). What follows the step depends on which indexes are left, so there is no comparing it.
fn parted_by_ranking(k: usize, up: &Run, ours: &Run) -> Option<String> {
    let (a, b) = (up.removals.get(&k)?, ours.removals.get(&k)?);
    (a.follows_ranking() && b.follows_ranking() && a.deleted != b.deleted).then(|| {
        format!(
            "upstream deleted indexes {:?}, kcm-rs {:?}, each what the ranking picks on its own pods",
            a.deleted, b.deleted
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::differential::Outcome;

    fn outcome(pairs: &[(&str, &str)]) -> Outcome {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn only_an_invariant_broken_under_kcm_rs_fails_the_run() {
        let broken = Run {
            violations: vec!["step 5: 4 live pods, above parallelism 3".into()],
            ..Run::default()
        };
        assert_eq!(compare(&broken, &Run::default()), "");
        assert!(compare(&Run::default(), &broken).contains("invariant broken under kcm-rs: step 5"));
    }

    #[test]
    fn the_first_differing_step_is_reported_with_both_projections() {
        let same = outcome(&[("status.active", "2")]);
        let up = Run {
            steps: vec![Ok(same.clone()), Ok(outcome(&[("status.active", "1")]))],
            ..Run::default()
        };
        let ours = Run {
            steps: vec![Ok(same.clone()), Ok(outcome(&[("status.active", "3")]))],
            ..Run::default()
        };
        let r = compare(&up, &ours);
        assert!(r.contains("first difference at step 1"), "{r}");
        assert!(r.contains("upstream: 1") && r.contains("kcm-rs:   3"), "{r}");
        let stuck = Run {
            steps: vec![Err("not settled".into())],
            ..Run::default()
        };
        let stuck_too = Run {
            steps: stuck.steps.clone(),
            ..Run::default()
        };
        assert!(compare(&stuck, &stuck_too).contains("step 0 did not settle under upstream"));
        let agree = Run {
            steps: vec![Ok(same)],
            ..Run::default()
        };
        let agree_too = Run {
            steps: agree.steps.clone(),
            ..Run::default()
        };
        assert_eq!(compare(&agree, &agree_too), "");
    }

    #[test]
    fn runs_part_without_failing_only_where_each_follows_the_ranking() {
        use ranking::Removal;
        let run = |index: &str, picked: &str| Run {
            steps: vec![Ok(outcome(&[("pods", index)]))],
            removals: [(
                0,
                Removal {
                    deleted: vec![index.into()],
                    expected: Some(vec![picked.into()]),
                },
            )]
            .into(),
            ..Run::default()
        };
        assert_eq!(compare(&run("0", "0"), &run("1", "1")), "");
        let r = compare(&run("0", "0"), &run("1", "0"));
        assert!(r.contains("first difference at step 0"), "{r}");
        assert!(
            r.contains("kcm-rs deleted indexes [\"1\"]; the ranking on its pods picks Some([\"0\"])"),
            "{r}"
        );
    }
}

use std::time::Duration;

use super::*;
use crate::flags::Args;

fn parse(flags: &[&str]) -> Args {
    let argv = std::iter::once("kcm-rs").chain(flags.iter().copied());
    Args::try_parse_flags_from(argv).expect("the flags parse")
}

#[test]
fn the_defaults_are_upstreams_waits() {
    let args = parse(&[]);
    assert_eq!(args.test_speed.check(false).unwrap(), JobDelays::UPSTREAM);
    assert_eq!(args.test_speed.check(true).unwrap(), JobDelays::UPSTREAM);
}

#[test]
fn a_test_shortens_the_waits_as_upstreams_integration_tests_do() {
    let args = parse(&[
        "--job-pod-failure-backoff=100ms",
        "--job-max-pod-failure-backoff=100ms",
        "--job_sync_batch_period=100ms",
    ]);
    let delays = args.test_speed.check(false).unwrap();
    assert_eq!(delays.pod_failure_backoff(), Duration::from_millis(100));
    assert_eq!(delays.max_pod_failure_backoff(), Duration::from_millis(100));
    assert_eq!(delays.sync_batch_period(), Duration::from_millis(100));
    assert_eq!(
        args.flag_values["job-pod-failure-backoff"], "100ms",
        "/flagz shows them"
    );
}

#[test]
fn a_cap_below_the_first_step_is_refused() {
    let flags = |first: u64| TestSpeedFlags {
        job_pod_failure_backoff: Duration::from_secs(first * 60),
        ..parse(&[]).test_speed
    };
    assert!(flags(1).check(false).is_ok(), "1m is below the 10m cap");
    let err = flags(11).check(false).unwrap_err();
    assert!(matches!(err, TestSpeedError::JobDelays(_)), "{err}");
    assert!(err.to_string().contains("--job-max-pod-failure-backoff"), "{err}");
}

#[test]
fn the_parsed_flags_carry_the_checked_waits_or_do_not_parse() {
    let args = parse(&["--job-pod-failure-backoff=1s", "--job-max-pod-failure-backoff=2s"]);
    assert_eq!(args.job_delays.pod_failure_backoff(), Duration::from_secs(1));
    assert_eq!(args.job_delays.max_pod_failure_backoff(), Duration::from_secs(2));
    for refused in [
        &["--job-pod-failure-backoff=2s", "--job-max-pod-failure-backoff=1s"][..],
        &["--shadow", "--job-sync-batch-period=100ms"][..],
    ] {
        let argv = std::iter::once("kcm-rs").chain(refused.iter().copied());
        let err = Args::try_parse_flags_from(argv).unwrap_err();
        assert_eq!(
            err.kind(),
            clap::error::ErrorKind::ArgumentConflict,
            "{refused:?}: {err}"
        );
    }
}

#[test]
fn shadow_mode_runs_on_upstreams_waits_only() {
    for flag in [
        "--job-pod-failure-backoff=1s",
        "--job-max-pod-failure-backoff=1h",
        "--job-sync-batch-period=0s",
    ] {
        let args = parse(&[flag]);
        assert!(args.test_speed.check(false).is_ok(), "{flag}");
        let err = args.test_speed.check(true).unwrap_err();
        assert!(matches!(err, TestSpeedError::WithShadow), "{flag}: {err}");
    }
}

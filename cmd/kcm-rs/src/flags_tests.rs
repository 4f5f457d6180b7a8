//! The command line as KCM reads it: defaults, ranges, feature gates, flag names.

use super::*;

fn parse(args: &[&str]) -> Result<Args, String> {
    Args::try_parse_flags_from(std::iter::once("kcm-rs").chain(args.iter().copied()))
        .map_err(|e| e.to_string())
}

#[test]
fn underscores_in_flag_names_read_as_dashes_as_in_kcm() {
    let a = parse(&[
        "--concurrent_rc_syncs=7",
        "--kube_api_qps",
        "33",
        "--namespace",
        "my_ns",
    ])
    .unwrap();
    assert_eq!(a.concurrent_rc_syncs, 7);
    assert_eq!(a.kube_api_qps, 33.0);
    assert_eq!(a.namespaces, ["my_ns"], "values keep their underscores");
    let a = parse(&["--namespace=team_a"]).unwrap();
    assert_eq!(a.namespaces, ["team_a"]);
    // A value that looks like a flag is still a value, as pflag takes the word after a flag.
    let a = parse(&["--kubeconfig", "--my_file", "--namespace", "--a_b"]).unwrap();
    assert_eq!(a.kubeconfig.as_deref(), Some(std::path::Path::new("--my_file")));
    assert_eq!(a.namespaces, ["--a_b"]);
    // After `--` nothing is a flag, so nothing is renamed (and KCM takes no positional arguments).
    let err = parse(&["--", "--kube_api_qps=3"]).unwrap_err();
    assert!(err.contains("--kube_api_qps=3"), "{err}");
}

#[test]
fn durations_out_of_range_are_errors_naming_the_flag() {
    let err = parse(&["--leader-elect-lease-duration=99999999999999999999h"]).unwrap_err();
    assert!(err.contains("--leader-elect-lease-duration"), "{err}");
    assert!(err.contains("out of range"), "{err}");
    for bad in ["-1s", "NaNs", "inf", "1e400s"] {
        let err = parse(&[&format!("--min-resync-period={bad}")]).unwrap_err();
        assert!(err.contains("--min-resync-period"), "{bad}: {err}");
    }
    let a = parse(&["--leader-elect-renew-deadline=1m30s", "--min-resync-period=0"]).unwrap();
    assert_eq!(a.leader_elect_renew_deadline, Duration::from_secs(90));
    assert_eq!(a.min_resync_period, Duration::ZERO);
}

#[test]
fn feature_gates_with_kcms_syntax() {
    let a = parse(&[]).unwrap();
    assert_eq!(a.feature_gates, FeatureGates::default());
    let a = parse(&[
        "--feature-gates=PodDeletionCost=false,DeploymentReplicaSetTerminatingReplicas=false",
        "--feature-gates",
        "PodDeletionCost=true",
    ])
    .unwrap();
    assert!(a.feature_gates.pod_deletion_cost, "a later occurrence wins");
    assert!(
        !a.feature_gates.deployment_replica_set_terminating_replicas,
        "occurrences merge"
    );
    let err = parse(&["--feature-gates=PodDeletionCost=true,Bogus=true"]).unwrap_err();
    assert!(err.contains("--feature-gates") && err.contains("Bogus"), "{err}");
    let err = parse(&["--feature-gates=JobManagedBy=false"]).unwrap_err();
    assert!(err.contains("locked to true"), "{err}");
    let err = parse(&["--feature-gates=AtomicFIFO=false"]).unwrap_err();
    assert!(
        err.contains("--feature-gates") && err.contains("AtomicFIFO"),
        "{err}"
    );
}

#[test]
fn content_type_is_protobuf_or_json() {
    let json = parse(&["--kube-api-content-type=application/json"]).unwrap();
    assert_eq!(json.kube_api_content_type, ContentType::Json);
    let err = parse(&["--kube-api-content-type=application/yaml"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("application/vnd.kubernetes.protobuf"), "{err}");
}

#[test]
fn resync_is_between_one_and_two_min_periods() {
    let min = Duration::from_secs(12 * 3600);
    assert_eq!(resync_period(min, 0.0), Some(min));
    assert_eq!(resync_period(min, 0.5), Some(min * 3 / 2));
    assert!(resync_period(min, 0.999_999).unwrap() < 2 * min);
    assert_eq!(resync_period(Duration::ZERO, 0.5), None);
    assert_eq!(parse(&[]).unwrap().min_resync_period, min);
}

#[test]
fn defaults_are_kube_controller_managers() {
    let a = parse(&[]).unwrap();
    assert_eq!((a.kube_api_qps, a.kube_api_burst), (20.0, 30));
    assert_eq!(a.kube_api_content_type, ContentType::Protobuf);
    assert_eq!(
        (
            a.concurrent_replicaset_syncs,
            a.concurrent_deployment_syncs,
            a.concurrent_job_syncs,
            a.concurrent_ttl_after_finished_syncs,
            a.concurrent_rc_syncs
        ),
        (5, 5, 5, 5, 5)
    );
    assert!(a.leader_elect);
    assert_eq!(a.leader_elect_lease_duration, Duration::from_secs(15));
    assert_eq!(a.serving.secure_port, 10257);
    assert_eq!(
        a.serving.authorization_always_allow_paths,
        ["/healthz", "/readyz", "/livez"]
    );
    assert_eq!(
        a.serving.authentication_token_webhook_cache_ttl,
        Duration::from_secs(10)
    );
    assert_eq!(
        a.serving.authorization_webhook_cache_authorized_ttl,
        Duration::from_secs(10)
    );
    assert_eq!(
        a.serving.authorization_webhook_cache_unauthorized_ttl,
        Duration::from_secs(10)
    );
    assert!(!a.serving.authentication_skip_lookup);
}

#[test]
fn bad_values_name_the_flag() {
    let err = parse(&["--concurrent-job-syncs=0"]).unwrap_err();
    assert!(err.contains("--concurrent-job-syncs"), "{err}");
    let err = parse(&["--concurrent-cron-job-syncs=-1"]).unwrap_err();
    assert!(err.contains("--concurrent-cron-job-syncs"), "{err}");
    let err = parse(&["--concurrent-replicaset-syncs=many"]).unwrap_err();
    assert!(err.contains("--concurrent-replicaset-syncs"), "{err}");
    let err = parse(&["--kube-api-qps=1e39"]).unwrap_err();
    assert!(err.contains("--kube-api-qps"), "{err}");
    // Just above halfway between 1 and the next float32: rounded once, as Go's ParseFloat(s, 32),
    // it is that next float; rounded to a float64 first, it would be the halfway point, then 1.
    let a = parse(&["--kube-api-qps=1.00000005960464477539062500001"]).unwrap();
    assert_eq!(a.kube_api_qps, f64::from(1.0000001_f32));
    let err = parse(&["--kube-api-burst=2147483648"]).unwrap_err();
    assert!(err.contains("--kube-api-burst"), "{err}");
    let a = parse(&["--leader-elect=false", "--namespace=a", "--namespace=b"]).unwrap();
    assert!(!a.leader_elect);
    assert_eq!(a.namespaces, ["a", "b"]);
}

/// KCM validates only the Job and CronJob controllers' worker counts; the others start no worker
/// at zero or less.
#[test]
fn worker_counts_below_one_start_no_worker_where_kcm_takes_them() {
    let a = parse(&[
        "--concurrent-deployment-syncs=0",
        "--concurrent-replicaset-syncs=-3",
        "--concurrent-rc-syncs=0",
        "--concurrent-ttl-after-finished-syncs=-1",
    ])
    .unwrap();
    assert_eq!(a.concurrent_deployment_syncs, 0);
    assert_eq!(a.concurrent_replicaset_syncs, 0);
    assert_eq!(a.concurrent_rc_syncs, 0);
    assert_eq!(a.concurrent_ttl_after_finished_syncs, 0);
}

/// KCM's command lines may name the lock type; `leases` is the only one left, and KCM checks it
/// only where it elects.
#[test]
fn the_resource_lock_is_leases_where_kcm_rs_elects() {
    let a = parse(&[]).unwrap();
    assert_eq!(a.leader_elect_resource_lock, "leases");
    assert_eq!(a.resource_lock_error(), None);
    let a = parse(&["--leader-elect-resource-lock=endpointsleases"]).unwrap();
    assert_eq!(
        a.resource_lock_error(),
        Some(r#"resourceLock value must be "leases""#)
    );
    let a = parse(&[
        "--leader-elect=false",
        "--leader-elect-resource-lock=endpointsleases",
    ])
    .unwrap();
    assert_eq!(a.resource_lock_error(), None);
}

#[test]
fn the_garbage_collectors_flags_read_as_kcms() {
    let a = parse(&[]).unwrap();
    assert_eq!(a.concurrent_gc_syncs, 20);
    assert!(a.enable_garbage_collector);
    let a = parse(&["--enable-garbage-collector=false", "--concurrent-gc-syncs=3"]).unwrap();
    assert!(!a.enable_garbage_collector);
    assert_eq!(a.concurrent_gc_syncs, 3);
    assert!(
        parse(&["--enable-garbage-collector"])
            .unwrap()
            .enable_garbage_collector
    );
}

/// KCM's integer flags are pflag `Int32`s, read by `strconv.ParseInt(s, 0, 32)`.
#[test]
fn integer_flags_read_go_integer_syntax() {
    let a = parse(&[
        "--concurrent-deployment-syncs=0x10",
        "--concurrent-job-syncs=010",
        "--kube-api-burst=1_000",
        "--concurrent-gc-syncs",
        "-1",
    ])
    .unwrap();
    assert_eq!(a.concurrent_deployment_syncs, 16);
    assert_eq!(a.concurrent_job_syncs, 8);
    assert_eq!(a.kube_api_burst, 1000);
    assert_eq!(a.concurrent_gc_syncs, 0, "no worker, as in KCM");
    for refused in [
        "--concurrent-job-syncs=0",
        "--kube-api-burst=0x80000000",
        "--concurrent-rc-syncs=08",
        "--concurrent-replicaset-syncs=2147483648",
    ] {
        assert!(parse(&[refused]).is_err(), "{refused}");
    }
}

/// KCM hands `--kube-api-qps` and `--kube-api-burst` to client-go unchecked: 0 is its default, a
/// negative QPS no limit (`crate::client` applies both).
#[test]
fn the_client_flags_take_what_client_go_takes() {
    let a = parse(&["--kube-api-qps=0", "--kube-api-burst=0"]).unwrap();
    assert_eq!((a.kube_api_qps, a.kube_api_burst), (0.0, 0));
    let a = parse(&["--kube-api-qps", "-1", "--kube-api-burst", "-1"]).unwrap();
    assert_eq!((a.kube_api_qps, a.kube_api_burst), (-1.0, -1));
    // pflag's Float32 rounds to a 32-bit float: the largest one is taken, a tiny one is 0.
    let a = parse(&["--kube-api-qps=3.4028235e38"]).unwrap();
    assert_eq!(a.kube_api_qps, f64::from(f32::MAX));
    let a = parse(&["--kube-api-qps=1e-50"]).unwrap();
    assert_eq!(a.kube_api_qps, 0.0);
    let a = parse(&["--kube-api-qps=0.1"]).unwrap();
    assert_eq!(a.kube_api_qps, f64::from(0.1_f32));
}

/// `-v` is component-base's (`ParseUint(s, 10, 31)`); `--secure-port` a pflag `Int` that
/// k8s.io/apiserver then checks against 0 to 65535.
#[test]
fn verbosity_and_the_secure_port_read_as_kcms() {
    assert_eq!(parse(&["-v=300"]).unwrap().verbosity, 300);
    assert_eq!(parse(&["--v=2147483647"]).unwrap().verbosity, 2_147_483_647);
    for refused in ["-v=+2", "-v=2147483648", "-v=0x2", "-v="] {
        assert!(parse(&[refused]).is_err(), "{refused}");
    }
    assert_eq!(
        parse(&["--secure-port=0x2001"]).unwrap().serving.secure_port,
        8193
    );
    assert_eq!(parse(&["--secure-port=0"]).unwrap().serving.secure_port, 0);
    let err = parse(&["--secure-port=70000"]).unwrap_err();
    assert!(err.contains("between 0 and 65535"), "{err}");
    assert!(parse(&["--secure-port=-1"]).is_err());
}

/// pflag's rules for values: a flag that takes one takes the next word whatever it starts with, and
/// a boolean flag takes one only after `=`, so a stray word after it is refused as KCM refuses it.
#[test]
fn values_are_read_as_pflag_reads_them() {
    let a = parse(&["--terminated-pod-gc-threshold", "-0x10", "--kubeconfig", "--v=2"]).unwrap();
    assert_eq!(a.terminated_pod_gc_threshold, -16);
    assert_eq!(a.kubeconfig.as_deref(), Some(std::path::Path::new("--v=2")));
    let a = parse(&["--kube-api-burst", "-1", "--kube-api-qps", "-1"]).unwrap();
    assert_eq!((a.kube_api_qps, a.kube_api_burst), (-1.0, -1));
    for (args, on) in [
        (&["--leader-elect"][..], true),
        (&["--leader-elect=false"], false),
        (&["--profiling=false", "--leader-elect=true"], true),
    ] {
        assert_eq!(parse(args).unwrap().leader_elect, on, "{args:?}");
    }
    for args in [&["--leader-elect", "false"][..], &["--profiling", "false"]] {
        let err = parse(args).unwrap_err();
        assert!(err.contains("'false'"), "{args:?}: {err}");
    }
}

/// Booleans take what Go's `strconv.ParseBool` takes, and an empty `--master` or `--kubeconfig` is
/// not given, as clientcmd reads them.
#[test]
fn booleans_and_empty_connection_flags_as_kcm_reads_them() {
    for (value, on) in [
        ("1", true),
        ("T", true),
        ("True", true),
        ("0", false),
        ("F", false),
        ("FALSE", false),
    ] {
        let a = parse(&[
            &format!("--leader-elect={value}"),
            &format!("--profiling={value}"),
        ])
        .unwrap();
        assert_eq!((a.leader_elect, a.profiling), (on, on), "{value}");
    }
    for bad in ["yes", "on", "tRUE", ""] {
        let err = parse(&[&format!("--leader-elect={bad}")]).unwrap_err();
        assert!(err.contains("--leader-elect"), "{bad}: {err}");
    }
    let a = parse(&["--master=", "--kubeconfig="]).unwrap();
    assert_eq!((a.master, a.kubeconfig), (None, None));
}

use super::*;

/// Parsed as `kcm-rs ARGS`.
fn args(flags: &[&str]) -> Args {
    Args::try_parse_flags_from(std::iter::once("kcm-rs").chain(flags.iter().copied())).expect("flags")
}

fn answer_to(flags: &[&str]) -> String {
    let body = answer(&args(flags)).expect("JSON");
    String::from_utf8(body.to_vec()).expect("UTF-8")
}

/// The flags both were started with in [`UPSTREAM_DEFAULTS`] and [`UPSTREAM_GIVEN`], on top of which
/// each case sets its own.
const COMMON: [&str; 3] = [
    "--kubeconfig=/tmp/kcm-rs-conformance/kubeconfig",
    "--leader-elect=false",
    "--controllers=bootstrap-signer-controller",
];

/// KCM 1.36.3's `/configz` with [`COMMON`] and otherwise its defaults, less the sections of the
/// controllers kcm-rs does not implement (recorded from the binary).
const UPSTREAM_DEFAULTS: &str = r#"{"kubecontrollermanager.config.k8s.io":{"kind":"KubeControllerManagerConfiguration","apiVersion":"kubecontrollermanager.config.k8s.io/v1alpha1","Generic":{"Port":0,"Address":"0.0.0.0","MinResyncPeriod":"12h0m0s","ClientConnection":{"kubeconfig":"/tmp/kcm-rs-conformance/kubeconfig","acceptContentTypes":"","contentType":"application/vnd.kubernetes.protobuf","qps":20,"burst":30},"ControllerStartInterval":"0s","LeaderElection":{"leaderElect":false,"leaseDuration":"15s","renewDeadline":"10s","retryPeriod":"2s","resourceLock":"leases","resourceName":"kube-controller-manager","resourceNamespace":"kube-system"},"Controllers":["bootstrap-signer-controller"],"Debugging":{"enableProfiling":true,"enableContentionProfiling":false},"LeaderMigrationEnabled":false,"LeaderMigration":{"leaderName":"","resourceLock":"","controllerLeaders":null}},"DeploymentController":{"ConcurrentDeploymentSyncs":5},"GarbageCollectorController":{"EnableGarbageCollector":true,"ConcurrentGCSyncs":20,"GCIgnoredResources":[{"Group":"","Resource":"events"},{"Group":"events.k8s.io","Resource":"events"}]},"JobController":{"ConcurrentJobSyncs":5},"CronJobController":{"ConcurrentCronJobSyncs":5},"NamespaceController":{"NamespaceSyncPeriod":"5m0s","ConcurrentNamespaceSyncs":10},"PodGCController":{"TerminatedPodGCThreshold":12500},"ReplicaSetController":{"ConcurrentRSSyncs":5},"ReplicationController":{"ConcurrentRCSyncs":5},"TTLAfterFinishedController":{"ConcurrentTTLSyncs":5}}}"#;

/// The flags of [`UPSTREAM_GIVEN`]: a float QPS, negative integers, durations with fractions and
/// hours, the booleans the other way, two controllers.
const GIVEN: [&str; 15] = [
    "--kubeconfig=/tmp/kcm-rs-conformance/kubeconfig",
    "--leader-elect=false",
    "--controllers=bootstrap-signer-controller,-cronjob-controller",
    "--kube-api-qps=33.3",
    "--kube-api-burst=7",
    "--concurrent-deployment-syncs=-3",
    "--concurrent-gc-syncs=0",
    "--min-resync-period=90m",
    "--namespace-sync-period=1.5s",
    "--leader-elect-lease-duration=1m30.25s",
    "--enable-garbage-collector=false",
    "--profiling=false",
    "--contention-profiling=true",
    "--kube-api-content-type=application/json",
    "--terminated-pod-gc-threshold=-5",
];

/// KCM 1.36.3's `/configz` with [`GIVEN`], `--concurrent-rc-syncs=7` and
/// `--leader-elect-resource-name=x`, the same sections.
const UPSTREAM_GIVEN: &str = r#"{"kubecontrollermanager.config.k8s.io":{"kind":"KubeControllerManagerConfiguration","apiVersion":"kubecontrollermanager.config.k8s.io/v1alpha1","Generic":{"Port":0,"Address":"0.0.0.0","MinResyncPeriod":"1h30m0s","ClientConnection":{"kubeconfig":"/tmp/kcm-rs-conformance/kubeconfig","acceptContentTypes":"","contentType":"application/json","qps":33.3,"burst":7},"ControllerStartInterval":"0s","LeaderElection":{"leaderElect":false,"leaseDuration":"1m30.25s","renewDeadline":"10s","retryPeriod":"2s","resourceLock":"leases","resourceName":"x","resourceNamespace":"kube-system"},"Controllers":["bootstrap-signer-controller","-cronjob-controller"],"Debugging":{"enableProfiling":false,"enableContentionProfiling":true},"LeaderMigrationEnabled":false,"LeaderMigration":{"leaderName":"","resourceLock":"","controllerLeaders":null}},"DeploymentController":{"ConcurrentDeploymentSyncs":-3},"GarbageCollectorController":{"EnableGarbageCollector":false,"ConcurrentGCSyncs":0,"GCIgnoredResources":[{"Group":"","Resource":"events"},{"Group":"events.k8s.io","Resource":"events"}]},"JobController":{"ConcurrentJobSyncs":5},"CronJobController":{"ConcurrentCronJobSyncs":5},"NamespaceController":{"NamespaceSyncPeriod":"1.5s","ConcurrentNamespaceSyncs":10},"PodGCController":{"TerminatedPodGCThreshold":-5},"ReplicaSetController":{"ConcurrentRSSyncs":5},"ReplicationController":{"ConcurrentRCSyncs":7},"TTLAfterFinishedController":{"ConcurrentTTLSyncs":5}}}"#;

#[test]
fn the_same_flags_give_kcms_answer() {
    // kcm-rs's Lease is its own by default (`kcm-rs`); given KCM's name, the answers are the same.
    let mut defaults = COMMON.to_vec();
    defaults.push("--leader-elect-resource-name=kube-controller-manager");
    assert_eq!(answer_to(&defaults), UPSTREAM_DEFAULTS);

    let mut given = GIVEN.to_vec();
    given.extend(["--concurrent-rc-syncs=7", "--leader-elect-resource-name=x"]);
    assert_eq!(answer_to(&given), UPSTREAM_GIVEN);
}

#[test]
fn without_flags_kcm_rs_answers_with_its_defaults() {
    let all: serde_json::Value = serde_json::from_str(&answer_to(&[])).expect("JSON");
    let generic = &all[NAME]["Generic"];
    // kcm-rs's Lease is its own; the rest are KCM's defaults too.
    assert_eq!(generic["LeaderElection"]["resourceName"], "kcm-rs");
    assert_eq!(generic["LeaderElection"]["leaderElect"], true);
    assert_eq!(generic["ClientConnection"]["kubeconfig"], "");
    assert_eq!(generic["Controllers"], serde_json::json!(["*"]));
}

#[test]
fn controllers_are_named_as_kcm_names_them() {
    let all: serde_json::Value =
        serde_json::from_str(&answer_to(&["--controllers=*,-job,cronjob"])).expect("JSON");
    assert_eq!(
        all[NAME]["Generic"]["Controllers"],
        serde_json::json!(["*", "-job-controller", "cronjob-controller"])
    );
}

#[test]
fn qps_is_written_as_go_writes_a_float32() {
    for (qps, want) in [
        ("20", "20"),
        ("0.5", "0.5"),
        ("-1", "-1"),
        ("1e-7", "1e-7"),
        ("123456789", "123456790"),
        ("3e21", "3e+21"),
    ] {
        let all = answer_to(&[&format!("--kube-api-qps={qps}")]);
        let written = all
            .split_once("\"qps\":")
            .and_then(|(_, rest)| rest.split_once(','))
            .map(|(value, _)| value);
        assert_eq!(written, Some(want), "--kube-api-qps={qps}");
    }
}

#[test]
fn a_qps_go_cannot_encode_is_the_encoders_error() {
    for (qps, named) in [("NaN", "NaN"), ("Inf", "+Inf"), ("-Inf", "-Inf")] {
        let refused = answer(&args(&[&format!("--kube-api-qps={qps}")])).expect_err(qps);
        assert_eq!(
            refused,
            format!("error marshaling json: json: unsupported value: {named}")
        );
    }
}

#[test]
fn strings_are_escaped_as_go_escapes_them() {
    let all = answer_to(&["--kubeconfig=/tmp/a&b/<kube>config"]);
    assert!(
        all.contains(r#""kubeconfig":"/tmp/a\u0026b/\u003ckube\u003econfig""#),
        "{all}"
    );
}

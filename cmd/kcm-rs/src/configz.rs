//! `/configz`: the configuration the process runs with, as kube-controller-manager serves it
//! (component-base `configz`): one JSON object keyed by `kubecontrollermanager.config.k8s.io`, a
//! `v1alpha1` `KubeControllerManagerConfiguration` with its fields' own names, Go's where the type
//! has no JSON tags (`Generic`, `ConcurrentRSSyncs`) and the tags' where it has (`qps`,
//! `leaderElect`), durations as Go writes them (`12h0m0s`).
//!
//! Why: scripts that read KCM's `/configz` to learn a controller manager's QPS, workers or election
//! timing read kcm-rs's the same way. kcm-rs answers with the generic section and the sections of the
//! controllers it implements, every field in them; KCM's other sections (node IPAM, HPA, volumes, the
//! cloud) describe controllers kcm-rs does not have, and are left out rather than filled with values
//! it does not use. kcm-rs's own flags (`--shards`, `--shadow`) are in `/flagz`.
//!
//! As KCM, integers are the values given, negative ones included, and the fields of the insecure
//! server and of leader migration, which neither has, keep their zero values. The whole object is
//! made once at start: the flags do not change while the process runs.

use axum::{
    Router,
    body::Bytes,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::any,
};
use clap::ValueEnum as _;
use serde::{Serialize, Serializer};
use std::{collections::BTreeMap, time::Duration};

use crate::{
    controllers::canonical_entries,
    duration::go_string,
    flags::Args,
    go_int::parse_i32,
    go_json::{self, Float32},
};

/// The name KCM registers its configuration under (`ConfigzName`, kube-controller-manager's
/// `app/controllermanager.go`), which is also the group of the object's `apiVersion`.
const NAME: &str = "kubecontrollermanager.config.k8s.io";
/// The version KCM 1.36 converts its configuration to before serving it.
const API_VERSION: &str = "kubecontrollermanager.config.k8s.io/v1alpha1";
/// The kind KCM sets on the object before serving it.
const KIND: &str = "KubeControllerManagerConfiguration";
/// `Generic.Address`: the address of the insecure server neither has, at its default
/// (controller-manager's `config/v1alpha1/defaults.go`; `Generic.Port` stays 0).
const INSECURE_ADDRESS: &str = "0.0.0.0";

/// What `/configz` answers for these flags: the JSON, or why Go's encoder would refuse it (a QPS of
/// NaN or an infinity, which both accept as flags).
pub fn answer(args: &Args) -> Result<Bytes, String> {
    let int = |flag: &str, typed: usize| given_i32(&args.flag_values, flag, typed);
    let configuration = Configuration {
        kind: KIND,
        api_version: API_VERSION,
        generic: Generic {
            port: 0,
            address: INSECURE_ADDRESS,
            min_resync_period: GoDuration(args.min_resync_period),
            client_connection: ClientConnection {
                kubeconfig: args
                    .kubeconfig
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                accept_content_types: "",
                // The flag's value, as its parser names it (both are media types).
                content_type: args
                    .kube_api_content_type
                    .to_possible_value()
                    .map(|v| v.get_name().to_owned())
                    .unwrap_or_default(),
                qps: Float32(qps(args.kube_api_qps)),
                burst: args.kube_api_burst,
            },
            controller_start_interval: GoDuration(Duration::ZERO),
            leader_election: LeaderElection {
                leader_elect: args.leader_elect,
                lease_duration: GoDuration(args.leader_elect_lease_duration),
                renew_deadline: GoDuration(args.leader_elect_renew_deadline),
                retry_period: GoDuration(args.leader_elect_retry_period),
                resource_lock: &args.leader_elect_resource_lock,
                resource_name: &args.leader_elect_resource_name,
                resource_namespace: &args.leader_elect_resource_namespace,
            },
            controllers: canonical_entries(&args.controllers),
            debugging: Debugging {
                enable_profiling: args.profiling,
                enable_contention_profiling: args.contention_profiling,
            },
            leader_migration_enabled: false,
            leader_migration: LeaderMigration::default(),
        },
        deployment_controller: DeploymentController {
            concurrent_deployment_syncs: int("concurrent-deployment-syncs", args.concurrent_deployment_syncs),
        },
        garbage_collector_controller: GarbageCollectorController {
            enable_garbage_collector: args.enable_garbage_collector,
            concurrent_gc_syncs: int("concurrent-gc-syncs", args.concurrent_gc_syncs),
            gc_ignored_resources: garbagecollector::IGNORED
                .map(|(group, resource)| GroupResource { group, resource }),
        },
        job_controller: JobController {
            concurrent_job_syncs: int("concurrent-job-syncs", args.concurrent_job_syncs),
        },
        cron_job_controller: CronJobController {
            concurrent_cron_job_syncs: int("concurrent-cron-job-syncs", args.concurrent_cron_job_syncs),
        },
        namespace_controller: NamespaceController {
            namespace_sync_period: GoDuration(args.namespace_sync_period),
            concurrent_namespace_syncs: int("concurrent-namespace-syncs", args.concurrent_namespace_syncs),
        },
        pod_gc_controller: PodGcController {
            terminated_pod_gc_threshold: args.terminated_pod_gc_threshold,
        },
        replica_set_controller: ReplicaSetController {
            concurrent_rs_syncs: int("concurrent-replicaset-syncs", args.concurrent_replicaset_syncs),
        },
        replication_controller: ReplicationController {
            concurrent_rc_syncs: int("concurrent-rc-syncs", args.concurrent_rc_syncs),
        },
        ttl_after_finished_controller: TtlAfterFinishedController {
            concurrent_ttl_syncs: int(
                "concurrent-ttl-after-finished-syncs",
                args.concurrent_ttl_after_finished_syncs,
            ),
        },
    };
    go_json::to_vec(&BTreeMap::from([(NAME, configuration)]))
        .map(Bytes::from)
        .map_err(|e| format!("error marshaling json: {e}"))
}

/// Served at `/configz` for any method, as KCM's handler is.
pub fn routes<S: Clone + Send + Sync + 'static>(answer: Result<Bytes, String>) -> Router<S> {
    Router::new().route("/configz", any(move || respond(answer.clone())))
}

/// The JSON, or, as Go's `http.Error`, a 500 with the encoder's error.
async fn respond(answer: Result<Bytes, String>) -> Response {
    match answer {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            body,
        )
            .into_response(),
        Err(e) => secure_serving::http_error(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

/// `--kube-api-qps` as the `float32` it was read as.
fn qps(given: f64) -> f32 {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the flag was read as a float32 (pflag's Float32), so this is exact"
    )]
    let qps = given as f32;
    qps
}

/// An integer flag as given, negative values included (kcm-rs keeps worker counts as unsigned and
/// reads a negative one as 0, while KCM's configuration keeps the `int32`).
fn given_i32(flags: &BTreeMap<String, String>, flag: &str, typed: usize) -> i32 {
    flags
        .get(flag)
        .and_then(|v| parse_i32(v))
        .unwrap_or_else(|| i32::try_from(typed).unwrap_or(i32::MAX))
}

/// A `metav1.Duration`, which marshals as Go's `time.Duration.String`.
struct GoDuration(Duration);

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&go_string(self.0))
    }
}

#[derive(Serialize)]
struct Configuration<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    #[serde(rename = "Generic")]
    generic: Generic<'a>,
    #[serde(rename = "DeploymentController")]
    deployment_controller: DeploymentController,
    #[serde(rename = "GarbageCollectorController")]
    garbage_collector_controller: GarbageCollectorController,
    #[serde(rename = "JobController")]
    job_controller: JobController,
    #[serde(rename = "CronJobController")]
    cron_job_controller: CronJobController,
    #[serde(rename = "NamespaceController")]
    namespace_controller: NamespaceController,
    #[serde(rename = "PodGCController")]
    pod_gc_controller: PodGcController,
    #[serde(rename = "ReplicaSetController")]
    replica_set_controller: ReplicaSetController,
    #[serde(rename = "ReplicationController")]
    replication_controller: ReplicationController,
    #[serde(rename = "TTLAfterFinishedController")]
    ttl_after_finished_controller: TtlAfterFinishedController,
}

/// controller-manager's `GenericControllerManagerConfiguration` (no JSON tags).
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Generic<'a> {
    port: i32,
    address: &'static str,
    min_resync_period: GoDuration,
    client_connection: ClientConnection,
    controller_start_interval: GoDuration,
    leader_election: LeaderElection<'a>,
    controllers: Vec<String>,
    debugging: Debugging,
    leader_migration_enabled: bool,
    leader_migration: LeaderMigration,
}

/// component-base's `ClientConnectionConfiguration` (tagged).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClientConnection {
    kubeconfig: String,
    accept_content_types: &'static str,
    content_type: String,
    qps: Float32,
    burst: i32,
}

/// component-base's `LeaderElectionConfiguration` (tagged).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LeaderElection<'a> {
    leader_elect: bool,
    lease_duration: GoDuration,
    renew_deadline: GoDuration,
    retry_period: GoDuration,
    resource_lock: &'a str,
    resource_name: &'a str,
    resource_namespace: &'a str,
}

/// component-base's `DebuggingConfiguration` (tagged).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Debugging {
    enable_profiling: bool,
    enable_contention_profiling: bool,
}

/// controller-manager's `LeaderMigrationConfiguration`, unused by both: its zero value.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct LeaderMigration {
    leader_name: &'static str,
    resource_lock: &'static str,
    controller_leaders: Option<Vec<()>>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DeploymentController {
    concurrent_deployment_syncs: i32,
}

#[derive(Serialize)]
struct GarbageCollectorController {
    #[serde(rename = "EnableGarbageCollector")]
    enable_garbage_collector: bool,
    #[serde(rename = "ConcurrentGCSyncs")]
    concurrent_gc_syncs: i32,
    #[serde(rename = "GCIgnoredResources")]
    gc_ignored_resources: [GroupResource; garbagecollector::IGNORED.len()],
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct GroupResource {
    group: &'static str,
    resource: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct JobController {
    concurrent_job_syncs: i32,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct CronJobController {
    concurrent_cron_job_syncs: i32,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct NamespaceController {
    namespace_sync_period: GoDuration,
    concurrent_namespace_syncs: i32,
}

#[derive(Serialize)]
struct PodGcController {
    #[serde(rename = "TerminatedPodGCThreshold")]
    terminated_pod_gc_threshold: i32,
}

#[derive(Serialize)]
struct ReplicaSetController {
    #[serde(rename = "ConcurrentRSSyncs")]
    concurrent_rs_syncs: i32,
}

#[derive(Serialize)]
struct ReplicationController {
    #[serde(rename = "ConcurrentRCSyncs")]
    concurrent_rc_syncs: i32,
}

#[derive(Serialize)]
struct TtlAfterFinishedController {
    #[serde(rename = "ConcurrentTTLSyncs")]
    concurrent_ttl_syncs: i32,
}

#[cfg(test)]
#[path = "configz_tests.rs"]
mod tests;

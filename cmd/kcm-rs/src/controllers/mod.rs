//! The controllers this binary runs, each registered once in [`CONTROLLERS`] with its name, its
//! alias and how to start it, as kube-controller-manager registers a `ControllerDescriptor` per
//! controller (`cmd/kube-controller-manager/app`). `--controllers`, its `--help` text, the gates
//! refused at start and the start-up itself all read this table; adding a controller is one entry.

mod selection;

use std::sync::Arc;

use anyhow::Context as _;
use controller::{
    Build, CommonOptions, Context, FeatureGates, KubePodControl, StartGate, Started, shadow::ShadowState,
    spawn_gated,
};
use cronjob::{CronJobController, CronJobOptions};
use deployment::{DeploymentController, DeploymentOptions};
use garbagecollector::GarbageCollector;
use informer::SharedInformerFactory;
use job::{JobController, JobOptions};
use namespace::{NamespaceController, NamespaceOptions};
use podgc::PodGarbageCollector;
use replicaset::{ReplicaKind, ReplicaSetController, ReplicaSetOptions};
use serviceaccount::ServiceAccountController;
use tokio_util::sync::CancellationToken;
use ttlafterfinished::{TtlAfterFinishedController, TtlAfterFinishedOptions};

pub use selection::{ControllersError, canonical_entries, check_gates, check_scope, enabled_controllers};

use crate::{
    client::{ClientSource, RateScale},
    flags::{Args, ContentType, ShadowPerturbation},
    metrics::Metrics,
};

/// How long in-flight syncs may take to finish after SIGTERM/SIGINT or a shard's release (a lost
/// lease does not wait).
pub const SHUTDOWN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// One controller kcm-rs implements.
#[derive(Debug)]
pub struct Descriptor {
    /// KCM's name, e.g. `replicaset-controller`.
    pub name: &'static str,
    /// The pre-1.29 short name KCM still accepts, e.g. `replicaset`.
    pub alias: &'static str,
    /// The upstream bootstrap role whose rules it needs (`system:controller:<role>`), also the name
    /// of its API client; deploy/rbac.yaml carries the rules of the controllers on by default.
    pub role: &'static str,
    /// Whether `*` in `--controllers` enables it. KCM runs every controller here by default; kcm-rs
    /// runs the ones KCM would also have to run without it (the namespace and ServiceAccount
    /// controllers) only when named, so that beside KCM no controller has two writers.
    pub on_by_default: bool,
    /// Its client's rate limits against `--kube-api-qps` and `--kube-api-burst`.
    pub rates: RateScale,
    /// Whether it acts on namespaces themselves, every one of them: refused where kcm-rs serves
    /// only some (`--namespace`, `--shards`).
    pub cluster_wide: bool,
    /// A feature gate that asks this controller for something kcm-rs does not do, if it is on:
    /// refused at start rather than silently ignored.
    pub unimplemented_gate: fn(&FeatureGates) -> Option<&'static str>,
    /// Its `--concurrent-*-syncs`.
    pub workers: fn(&Args) -> usize,
    /// Whether a flag of its own turns it off although enabled (`--enable-garbage-collector=false`):
    /// KCM then skips it, as it skips a controller whose constructor returns none.
    pub switched_off: fn(&Args) -> bool,
    /// Builds the controller from its context (the shared informers, its client: the role's, the
    /// common options) and the options that are its alone, and starts it, read-only in shadow mode:
    /// [`spawn`] for every one.
    pub start: fn(&StartContext<'_>, Context<'_>) -> Started,
}

/// The controllers kcm-rs reimplements, sorted by name; all are on by default in KCM.
pub const CONTROLLERS: &[Descriptor] = &[
    Descriptor {
        name: cronjob::COMPONENT,
        alias: "cronjob",
        role: cronjob::COMPONENT,
        on_by_default: true,
        rates: RateScale::ONE,
        cluster_wide: false,
        unimplemented_gate: |_| None,
        workers: |a| a.concurrent_cron_job_syncs,
        switched_off: |_| false,
        start: start_cron_job,
    },
    Descriptor {
        name: deployment::COMPONENT,
        alias: "deployment",
        role: deployment::COMPONENT,
        on_by_default: true,
        rates: RateScale::ONE,
        cluster_wide: false,
        unimplemented_gate: |_| None,
        workers: |a| a.concurrent_deployment_syncs,
        switched_off: |_| false,
        start: start_deployment,
    },
    Descriptor {
        name: garbagecollector::COMPONENT,
        alias: "garbagecollector",
        role: garbagecollector::ROLE,
        on_by_default: false,
        rates: RateScale::GARBAGE_COLLECTOR,
        cluster_wide: true,
        unimplemented_gate: |_| None,
        workers: |a| a.concurrent_gc_syncs,
        switched_off: |a| !a.enable_garbage_collector,
        start: start_garbage_collector,
    },
    Descriptor {
        name: job::COMPONENT,
        alias: "job",
        role: job::COMPONENT,
        on_by_default: true,
        rates: RateScale::ONE,
        cluster_wide: false,
        // WorkloadWithJob (alpha) has the Job controller create Workload and PodGroup objects and
        // gang-schedule Indexed Jobs' pods; running without them would schedule pods one by one.
        unimplemented_gate: |g| g.workload_with_job.then_some("WorkloadWithJob"),
        workers: |a| a.concurrent_job_syncs,
        switched_off: |_| false,
        start: start_job,
    },
    Descriptor {
        name: namespace::COMPONENT,
        alias: "namespace",
        role: namespace::ROLE,
        on_by_default: false,
        rates: RateScale::NAMESPACE_CONTROLLER,
        cluster_wide: true,
        unimplemented_gate: |_| None,
        workers: |a| a.concurrent_namespace_syncs,
        switched_off: |_| false,
        start: start_namespace,
    },
    Descriptor {
        name: podgc::COMPONENT,
        alias: "podgc",
        role: podgc::ROLE,
        on_by_default: false,
        rates: RateScale::ONE,
        cluster_wide: true,
        unimplemented_gate: |_| None,
        // One pass at a time, as upstream's loop.
        workers: |_| 1,
        switched_off: |_| false,
        start: start_pod_gc,
    },
    Descriptor {
        name: replicaset::COMPONENT,
        alias: "replicaset",
        role: replicaset::COMPONENT,
        on_by_default: true,
        rates: RateScale::ONE,
        cluster_wide: false,
        unimplemented_gate: |_| None,
        workers: |a| a.concurrent_replicaset_syncs,
        switched_off: |_| false,
        start: start_replica_kind::<k8s_openapi::api::apps::v1::ReplicaSet>,
    },
    // KCM's name differs from the role, its client's and its events' component
    // (`replication-controller`).
    Descriptor {
        name: "replicationcontroller-controller",
        alias: "replicationcontroller",
        role: <k8s_openapi::api::core::v1::ReplicationController as ReplicaKind>::COMPONENT,
        on_by_default: true,
        rates: RateScale::ONE,
        cluster_wide: false,
        unimplemented_gate: |_| None,
        workers: |a| a.concurrent_rc_syncs,
        switched_off: |_| false,
        start: start_replica_kind::<k8s_openapi::api::core::v1::ReplicationController>,
    },
    Descriptor {
        name: serviceaccount::COMPONENT,
        alias: "serviceaccount",
        role: serviceaccount::ROLE,
        on_by_default: false,
        rates: RateScale::ONE,
        cluster_wide: true,
        unimplemented_gate: |_| None,
        workers: |_| serviceaccount::WORKERS,
        switched_off: |_| false,
        start: start_service_account,
    },
    Descriptor {
        name: ttlafterfinished::COMPONENT,
        alias: "ttl-after-finished",
        role: ttlafterfinished::COMPONENT,
        on_by_default: true,
        rates: RateScale::ONE,
        cluster_wide: false,
        unimplemented_gate: |_| None,
        workers: |a| a.concurrent_ttl_after_finished_syncs,
        switched_off: |_| false,
        start: start_ttl_after_finished,
    },
];

/// What every controller is started from.
pub struct StartContext<'a> {
    pub args: &'a Args,
    pub factory: &'a SharedInformerFactory,
    pub clients: &'a dyn ClientSource,
    pub metrics: &'a Metrics,
    /// This process's identity, the reportingInstance of its events.
    pub identity: &'a str,
    /// KCM's resync period, drawn once for every informer of the process.
    pub resync_period: Option<std::time::Duration>,
    /// Set in shadow mode: controllers plan and compare instead of writing.
    pub shadow: Option<&'a Arc<ShadowState>>,
    /// Set on a replica sharing the work: the workers start once the shard's write fence opens.
    pub start_gate: Option<StartGate>,
    pub cancel: &'a CancellationToken,
}

/// Starts the enabled controllers, in the table's order.
pub fn start(enabled: &[&str], cx: &StartContext<'_>) -> anyhow::Result<Vec<Started>> {
    let mut started = Vec::new();
    for d in CONTROLLERS.iter().filter(|d| enabled.contains(&d.name)) {
        if (d.switched_off)(cx.args) {
            tracing::info!(
                controller = d.name,
                "controller switched off by its flag; skipping"
            );
            continue;
        }
        let client = cx
            .clients
            .client_scaled(d.role, d.rates)
            .with_context(|| format!("starting {}", d.name))?;
        let context = Context {
            factory: cx.factory,
            client,
            metrics: cx.metrics,
            options: CommonOptions {
                workers: (d.workers)(cx.args),
                instance: cx.identity.to_owned(),
                features: cx.args.feature_gates,
                resync_period: cx.resync_period,
            },
        };
        // KCM names its health checks and the started list by the table's name, which for the
        // ReplicationController controller is not its component's.
        let mut controller = (d.start)(cx, context);
        controller.name = d.name;
        started.push(controller);
        tracing::info!(shadow = cx.shadow.is_some(), "started {}", d.name);
    }
    Ok(started)
}

/// The shared informers every controller reads through; pods in protobuf unless told otherwise.
pub fn informer_factory(args: &Args, client: kube::Client, metrics: &Metrics) -> SharedInformerFactory {
    let mut factory = SharedInformerFactory::new(client)
        .with_namespaces(args.namespaces.clone())
        .with_metrics(Arc::new(metrics.clone()));
    if args.kube_api_content_type == ContentType::Protobuf {
        // Pods are most of what the informers receive; the other kinds stay on JSON.
        factory = factory.with_protobuf::<controller::CompactPod>();
    }
    factory
}

/// The `--controllers` help text, listing the table's names.
pub fn help() -> String {
    let names: Vec<_> = CONTROLLERS.iter().map(|d| d.name).collect();
    let aliases: Vec<_> = CONTROLLERS.iter().map(|d| d.alias).collect();
    format!(
        "A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the \
         controller named 'foo', '-foo' disables the controller named 'foo'. The first item for a \
         particular name wins. All controllers: {} (aliases {}).",
        names.join(", "),
        aliases.join(", ")
    )
}

fn perturbed(cx: &StartContext<'_>, p: ShadowPerturbation) -> bool {
    cx.args.shadow_perturb == Some(p)
}

/// Builds `B` from `context` and `options` (its read-only twin in shadow mode) and starts it behind
/// the shard's start gate: every controller's start ends here.
fn spawn<B: Build>(cx: &StartContext<'_>, context: Context<'_>, options: B::Options) -> Started {
    match cx.shadow {
        Some(state) => spawn_gated(
            B::shadow(context, state.clone(), options),
            cx.cancel,
            cx.start_gate.clone(),
        ),
        None => spawn_gated(B::build(context, options), cx.cancel, cx.start_gate.clone()),
    }
}

fn start_cron_job(cx: &StartContext<'_>, context: Context<'_>) -> Started {
    let options = CronJobOptions {
        metrics: Arc::new(cx.metrics.clone()),
        ignore_suspend: perturbed(cx, ShadowPerturbation::IgnoreSuspend),
        ..CronJobOptions::default()
    };
    spawn::<CronJobController>(cx, context, options)
}

fn start_deployment(cx: &StartContext<'_>, context: Context<'_>) -> Started {
    let options = DeploymentOptions {
        ignore_paused: perturbed(cx, ShadowPerturbation::IgnorePaused),
    };
    spawn::<DeploymentController>(cx, context, options)
}

fn start_job(cx: &StartContext<'_>, context: Context<'_>) -> Started {
    let options = JobOptions {
        metrics: cx.metrics.job_metrics(),
        ignore_suspend: perturbed(cx, ShadowPerturbation::IgnoreSuspend),
        delays: cx.args.job_delays,
    };
    spawn::<JobController<KubePodControl>>(cx, context, options)
}

/// The ReplicaSet controller over `K`: ReplicaSets, or ReplicationControllers as upstream's
/// replication manager ([`replicaset::ReplicationManager`]).
fn start_replica_kind<K: ReplicaKind>(cx: &StartContext<'_>, context: Context<'_>) -> Started {
    let options = ReplicaSetOptions {
        metrics: Arc::new(cx.metrics.clone()),
        ignore_min_ready_seconds: perturbed(cx, ShadowPerturbation::IgnoreMinReadySeconds),
        ..ReplicaSetOptions::default()
    };
    spawn::<ReplicaSetController<KubePodControl, K>>(cx, context, options)
}

fn start_namespace(cx: &StartContext<'_>, context: Context<'_>) -> Started {
    let options = NamespaceOptions {
        sync_period: cx.args.namespace_sync_period,
    };
    spawn::<NamespaceController>(cx, context, options)
}

fn start_garbage_collector(cx: &StartContext<'_>, context: Context<'_>) -> Started {
    spawn::<GarbageCollector>(cx, context, ())
}

fn start_pod_gc(cx: &StartContext<'_>, context: Context<'_>) -> Started {
    let options = podgc::Options {
        terminated_threshold: cx.args.terminated_pod_gc_threshold,
        metrics: cx.metrics.podgc_metrics(),
    };
    spawn::<PodGarbageCollector>(cx, context, options)
}

fn start_service_account(cx: &StartContext<'_>, context: Context<'_>) -> Started {
    spawn::<ServiceAccountController>(cx, context, ())
}

fn start_ttl_after_finished(cx: &StartContext<'_>, context: Context<'_>) -> Started {
    let options = TtlAfterFinishedOptions {
        metrics: Arc::new(cx.metrics.clone()),
        ignore_ttl_seconds: perturbed(cx, ShadowPerturbation::IgnoreTtlSeconds),
    };
    spawn::<TtlAfterFinishedController>(cx, context, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_names_are_unique() {
        let names: Vec<_> = CONTROLLERS.iter().map(|d| d.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
    }

    #[test]
    fn the_help_lists_every_controller_and_alias() {
        let help = help();
        for d in CONTROLLERS {
            assert!(help.contains(d.name) && help.contains(d.alias), "{help}");
        }
    }

    /// deploy/rbac.yaml names the upstream roles its rules are taken from, as
    /// `system:controller:{a,b,c}`: exactly the roles of the table's controllers on by default.
    #[test]
    fn the_shipped_rbac_is_written_for_exactly_these_controllers() {
        let rbac = include_str!("../../../../deploy/rbac.yaml");
        let start = rbac.find("system:controller:{").expect("the roles line") + "system:controller:{".len();
        let end = start + rbac[start..].find('}').expect("closing brace");
        let mut roles: Vec<_> = rbac[start..end]
            .split(',')
            .map(|r| r.trim().trim_start_matches('#').trim())
            .collect();
        roles.sort_unstable();
        let mut wanted: Vec<_> = CONTROLLERS
            .iter()
            .filter(|d| d.on_by_default)
            .map(|d| d.role)
            .collect();
        wanted.sort_unstable();
        assert_eq!(roles, wanted);
    }
}

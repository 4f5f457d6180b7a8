//! The controllers this binary runs, each registered once in [`CONTROLLERS`] with its name, its
//! alias and how to start it, as kube-controller-manager registers a `ControllerDescriptor` per
//! controller (`cmd/kube-controller-manager/app`). `--controllers`, its `--help` text, the gates
//! refused at start and the start-up itself all read this table; adding a controller is one entry.

mod selection;

use std::sync::Arc;

use anyhow::Context as _;
use controller::{Controller, FeatureGates, StartGate, Started, shadow::ShadowState, spawn_gated};
use cronjob::{CronJobController, CronJobOptions};
use deployment::{DeploymentController, DeploymentOptions};
use informer::SharedInformerFactory;
use job::{JobController, JobOptions};
use replicaset::{ReplicaKind, ReplicaSetController, ReplicaSetOptions};
use tokio_util::sync::CancellationToken;
use ttlafterfinished::{TtlAfterFinishedController, TtlAfterFinishedOptions};

pub use selection::{ControllersError, check_gates, enabled_controllers};

use crate::{
    client::ClientSource,
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
    /// The upstream bootstrap role whose rules deploy/rbac.yaml carries for it
    /// (`system:controller:<role>`), also the name of its API client.
    pub role: &'static str,
    /// A feature gate that asks this controller for something kcm-rs does not do, if it is on:
    /// refused at start rather than silently ignored.
    pub unimplemented_gate: fn(&FeatureGates) -> Option<&'static str>,
    /// Builds the controller on the shared informers and its client (the role's) and starts it
    /// (read-only in shadow mode).
    pub start: fn(&StartContext<'_>, kube::Client) -> Started,
}

/// The controllers kcm-rs reimplements, sorted by name; all are on by default in KCM.
pub const CONTROLLERS: &[Descriptor] = &[
    Descriptor {
        name: cronjob::COMPONENT,
        alias: "cronjob",
        role: cronjob::COMPONENT,
        unimplemented_gate: |_| None,
        start: start_cron_job,
    },
    Descriptor {
        name: deployment::COMPONENT,
        alias: "deployment",
        role: deployment::COMPONENT,
        unimplemented_gate: |_| None,
        start: start_deployment,
    },
    Descriptor {
        name: job::COMPONENT,
        alias: "job",
        role: job::COMPONENT,
        // WorkloadWithJob (alpha) has the Job controller create Workload and PodGroup objects and
        // gang-schedule Indexed Jobs' pods; running without them would schedule pods one by one.
        unimplemented_gate: |g| g.workload_with_job.then_some("WorkloadWithJob"),
        start: start_job,
    },
    Descriptor {
        name: replicaset::COMPONENT,
        alias: "replicaset",
        role: replicaset::COMPONENT,
        unimplemented_gate: |_| None,
        start: start_replicaset,
    },
    // KCM's name differs from the role, its client's and its events' component
    // (`replication-controller`).
    Descriptor {
        name: "replicationcontroller-controller",
        alias: "replicationcontroller",
        role: <k8s_openapi::api::core::v1::ReplicationController as ReplicaKind>::COMPONENT,
        unimplemented_gate: |_| None,
        start: start_replication_controller,
    },
    Descriptor {
        name: ttlafterfinished::COMPONENT,
        alias: "ttl-after-finished",
        role: ttlafterfinished::COMPONENT,
        unimplemented_gate: |_| None,
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
        let client = cx
            .clients
            .client_for(d.role)
            .with_context(|| format!("starting {}", d.name))?;
        // KCM names its health checks and the started list by the table's name, which for the
        // ReplicationController controller is not its component's.
        let mut controller = (d.start)(cx, client);
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

/// Starts the controller `live` builds from `client` and `options`, or in shadow mode the read-only
/// one `shadow` builds, with the shard's start gate: every controller's start ends here.
fn spawn_live_or_shadow<O, L: Controller, S: Controller>(
    cx: &StartContext<'_>,
    client: kube::Client,
    options: O,
    live: impl FnOnce(kube::Client, O) -> L,
    shadow: impl FnOnce(kube::Client, O, Arc<ShadowState>) -> S,
) -> Started {
    match cx.shadow {
        Some(s) => spawn_gated(
            shadow(client, options, s.clone()),
            cx.cancel,
            cx.start_gate.clone(),
        ),
        None => spawn_gated(live(client, options), cx.cancel, cx.start_gate.clone()),
    }
}

fn start_replicaset(cx: &StartContext<'_>, client: kube::Client) -> Started {
    start_replica_kind::<k8s_openapi::api::apps::v1::ReplicaSet>(
        cx,
        client,
        cx.args.concurrent_replicaset_syncs,
    )
}

fn start_replication_controller(cx: &StartContext<'_>, client: kube::Client) -> Started {
    start_replica_kind::<k8s_openapi::api::core::v1::ReplicationController>(
        cx,
        client,
        cx.args.concurrent_rc_syncs,
    )
}

/// The ReplicaSet controller over `K`: ReplicaSets, or ReplicationControllers as upstream's
/// replication manager ([`replicaset::ReplicationManager`]).
fn start_replica_kind<K: ReplicaKind>(
    cx: &StartContext<'_>,
    client: kube::Client,
    workers: usize,
) -> Started {
    let options = ReplicaSetOptions {
        workers,
        ignore_min_ready_seconds: perturbed(cx, ShadowPerturbation::IgnoreMinReadySeconds),
        instance: cx.identity.to_owned(),
        features: cx.args.feature_gates,
        resync_period: cx.resync_period,
        ..ReplicaSetOptions::default()
    };
    spawn_live_or_shadow(
        cx,
        client,
        options,
        |client, options| {
            ReplicaSetController::<_, K>::new(
                cx.factory,
                client,
                options,
                cx.metrics,
                Arc::new(cx.metrics.clone()),
            )
        },
        |client, options, s| ReplicaSetController::<_, K>::shadow(cx.factory, client, s, options, cx.metrics),
    )
}

fn start_deployment(cx: &StartContext<'_>, client: kube::Client) -> Started {
    let options = DeploymentOptions {
        workers: cx.args.concurrent_deployment_syncs,
        instance: cx.identity.to_owned(),
        resync_period: cx.resync_period,
        ignore_paused: perturbed(cx, ShadowPerturbation::IgnorePaused),
        features: cx.args.feature_gates,
    };
    spawn_live_or_shadow(
        cx,
        client,
        options,
        |client, options| DeploymentController::new(cx.factory, client, options, cx.metrics),
        |client, options, s| DeploymentController::shadow(cx.factory, client, s, options, cx.metrics),
    )
}

fn start_job(cx: &StartContext<'_>, client: kube::Client) -> Started {
    let options = JobOptions {
        workers: cx.args.concurrent_job_syncs,
        instance: cx.identity.to_owned(),
        features: cx.args.feature_gates,
        resync_period: cx.resync_period,
        ignore_suspend: perturbed(cx, ShadowPerturbation::IgnoreSuspend),
    };
    spawn_live_or_shadow(
        cx,
        client,
        options,
        |client, options| {
            JobController::new(cx.factory, client, options, cx.metrics, cx.metrics.job_metrics())
        },
        |client, options, s| JobController::shadow(cx.factory, client, s, options, cx.metrics),
    )
}

fn start_cron_job(cx: &StartContext<'_>, client: kube::Client) -> Started {
    let options = CronJobOptions {
        workers: cx.args.concurrent_cron_job_syncs,
        instance: cx.identity.to_owned(),
        resync_period: cx.resync_period,
        ..CronJobOptions::default()
    };
    spawn_live_or_shadow(
        cx,
        client,
        options,
        |client, options| {
            CronJobController::new(
                cx.factory,
                client,
                options,
                cx.metrics,
                Arc::new(cx.metrics.clone()),
            )
        },
        |client, options, s| CronJobController::shadow(cx.factory, client, s, options, cx.metrics),
    )
}

fn start_ttl_after_finished(cx: &StartContext<'_>, client: kube::Client) -> Started {
    let options = TtlAfterFinishedOptions {
        workers: cx.args.concurrent_ttl_after_finished_syncs,
        resync_period: cx.resync_period,
    };
    spawn_live_or_shadow(
        cx,
        client,
        options,
        |client, options| {
            TtlAfterFinishedController::new(
                cx.factory,
                client,
                options,
                cx.metrics,
                Arc::new(cx.metrics.clone()),
            )
        },
        |client, options, s| TtlAfterFinishedController::shadow(cx.factory, client, s, options, cx.metrics),
    )
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
    /// `system:controller:{a,b,c}`: exactly the table's controllers' roles.
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
        let mut wanted: Vec<_> = CONTROLLERS.iter().map(|d| d.role).collect();
        wanted.sort_unstable();
        assert_eq!(roles, wanted);
    }
}

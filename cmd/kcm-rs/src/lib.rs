//! kcm-rs: kube-controller-manager's workload controllers (Deployment, ReplicaSet,
//! ReplicationController, Job, CronJob, TTL-after-finished), in Rust.
//!
//! Two ways in:
//! - the `kcm-rs` command, with KCM's flags, Lease leader election, HTTPS health and metrics
//!   endpoints, shadow mode and `--shards`: start reading at [`cli`];
//! - [`ControllerManager`], the same controllers inside a test or tool of your own, on a
//!   [`kube::Client`] you already have: no flags, no endpoints, no election unless asked.
//!
//! The controllers themselves live in the `replicaset` (ReplicationControllers too), `deployment`,
//! `job`, `cronjob` and `ttlafterfinished` crates, on the shared skeleton of the `controller` crate;
//! `controllers` here is the table that registers them.
#![forbid(unsafe_code)]

#[doc(hidden)]
pub mod cli;
mod client;
mod configz;
mod connect_timeout;
mod controllers;
mod duration;
mod edit;
mod embed;
mod flags;
mod go_int;
mod go_json;
mod guard;
mod healthz;
mod job_metrics;
mod kubeconfig;
mod leader_events;
mod metric_labels;
mod metrics;
mod pflag_syntax;
mod podgc_metrics;
mod process_metrics;
mod profiling;
mod prom_text;
mod proxy;
mod qps;
mod rest_metrics;
mod retry;
mod review_retry;
mod server;
mod serving_flags;
mod shard_host;
mod shard_selector;
mod shard_series;
mod slis;
mod stall;
mod test_speed_flags;
mod transport;
mod verbosity;
mod zpages;

pub use controllers::ControllersError;
pub use embed::{ControllerManager, EmbedError, Running};
/// The Job controller's waits, for [`ControllerManager::job_delays`].
pub use job::{JobDelays, JobDelaysError};

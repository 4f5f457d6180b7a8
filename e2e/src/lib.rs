//! The e2e harness: connects to the control plane `hack/cluster.sh` started, gives each test its own
//! namespace, and turns an unreachable cluster into a loud failure that shows the components' logs.
#![forbid(unsafe_code)]

mod cluster;
mod counting;
pub mod cronjob_scenarios;
pub mod deployment_scenarios;
pub mod differential;
pub mod gc_scenarios;
pub mod job_scenarios;
pub mod json;
mod kcm_rs;
mod namespace;
pub mod namespace_scenarios;
pub mod podgc_scenarios;
pub mod podman;
pub mod pods;
mod port;
pub mod random_differential;
pub mod replicaset_scenarios;
pub mod serviceaccount_scenarios;
pub mod serving;
pub mod shadow;
mod shard_audit;
pub mod shard_workloads;
pub mod soak;
pub mod ttl_scenarios;
mod wait;

pub use cluster::{Cluster, Mode, ModeGuard};
pub use counting::{RequestCounter, counting_client};
pub use kcm_rs::KcmRs;
pub use namespace::{Observed, TestNamespace, with_namespace};
pub use port::free_port;
pub use shard_audit::{
    AuditSummary, check_writes_within_terms, check_writes_within_terms_or_unfenced, creates_in, lost_creates,
    timed_out_creates,
};
pub use wait::{DEFAULT_WAIT, wait_for, wait_quiet};

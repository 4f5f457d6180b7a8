//! The e2e harness: connects to the control plane `hack/cluster.sh` started, gives each test its own
//! namespace, and turns an unreachable cluster into a loud failure that shows the components' logs.
#![forbid(unsafe_code)]

mod cluster;
mod namespace;
mod wait;

pub use cluster::{Cluster, Mode};
pub use namespace::{TestNamespace, with_namespace};
pub use wait::{DEFAULT_WAIT, wait_for};

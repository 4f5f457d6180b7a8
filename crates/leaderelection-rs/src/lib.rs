//! Leader election for kcm-rs: client-go's `tools/leaderelection` with a Lease lock, and
//! leader-for-life.
//!
//! Why hand-written: the maintained Rust crates (kube-leader-election, kube-lease-manager, kubert's
//! lease) judge expiry by the remote `renewTime` or skip the resourceVersion guard, and none has a
//! renew deadline that stops the leader; client-go's rules are what kube-controller-manager's users
//! rely on (see `elector`).
#![forbid(unsafe_code)]

mod config;
mod elector;
mod for_life;

pub use config::{
    ConfigError, DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, JITTER_FACTOR,
    LeaderElectionConfig, MIN_FENCE_MARGIN,
};
pub use elector::{LeaderElector, LeadershipLost, duration_of};
pub use for_life::{FOR_LIFE_INITIAL_BACKOFF, FOR_LIFE_MAX_BACKOFF, ForLifeError, LeaderForLife};

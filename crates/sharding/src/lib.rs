//! Scale-out for a controller manager: with `--shards=N` (N > 1) its replicas share the work by
//! namespace hash, each shard owned through a Lease of its own (`kcm-rs-shard-<i>-of-<N>`), read
//! through Kubernetes 1.36's server-side sharded list and watch, and every write checked by a fence
//! against the shard's hold. The design, and the argument that two replicas never act on one shard
//! at once, are in `docs/scale-out.md`.
//!
//! The binary implements [`Host`] (its clients, the controllers to start on a shard, where to
//! report) and calls [`run`]; its controllers' clients carry the [`WriteFence`] as a middleware
//! ([`FenceLayer`]). Where to read:
//!
//! * `manager`: one round every retry period: renew the membership Lease, list the Leases, let
//!   every shard's elector observe its Lease, plan, act;
//! * `plan`: the fair-share rule, pure; `claims`: the claims of every layout, which exclude each
//!   other; `members`: the membership Leases and the live count;
//! * `held`: one held shard, from acquisition to release or loss;
//! * `fence`: the write fence; `suspended`: the clock it counts suspend with;
//! * `refit`: with `--shard-cuts=auto`, the record of the cuts and when to refit them; `weights`:
//!   the namespaces weighed by their pods;
//! * `unsharded`: the unsharded leader's side of the claims.

mod claims;
mod fence;
mod held;
mod host;
mod leases;
mod manager;
mod members;
mod names;
mod plan;
mod refit;
mod renewals;
mod status;
mod suspended;
mod unsharded;
mod weights;

pub use fence::{Closed, FenceLayer, Fenced, WriteFence};
pub use host::{Config, Host, HostError, Reads, Round, Running, ShardStart};
pub use manager::{Error, run};
pub use names::{shard_lease_name, shard_of_lease_name};
pub use status::{HeldStatus, Status};
pub use unsharded::Exclusion;
pub use weights::{PrintError, print_cuts};

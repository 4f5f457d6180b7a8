//! The unsharded leader (`--shards=1`, Lease `--leader-elect-resource-name`) and the shard Leases
//! exclude each other by the claim rule of `claims`: its lock is a claim on every shard. The
//! candidate acquires only while no shard Lease is live by its own clock, lists again once its
//! claim is committed, and gives the lock up if a shard claim appeared meanwhile. While it leads,
//! a watch of the Leases ends its term when a shard claim becomes live: that happens only if this
//! process was paused past its lease while sharded replicas took over (the unsharded controllers
//! have no write fence, so, as upstream's leader after such a pause, it may write until then).

use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, api::ListParams};
use leaderelection::LeaderElector;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::claims::Claims;

/// The Leases of the election namespace and what has been seen of them.
#[derive(Debug)]
pub struct Exclusion {
    leases: Api<Lease>,
    claims: Claims,
    identity: String,
    /// Listing Leases is forbidden: said once.
    forbidden: bool,
}

impl Exclusion {
    pub fn new(elector: &LeaderElector, client: kube::Client) -> Self {
        let cfg = elector.config();
        Self {
            leases: Api::namespaced(client, &cfg.namespace),
            claims: Claims::new(&cfg.name),
            identity: cfg.identity.clone(),
            forbidden: false,
        }
    }

    /// A live shard claim is seen now; `None` when the list failed.
    async fn shard_claimed(&mut self) -> Option<bool> {
        match self.leases.list(&ListParams::default()).await {
            Ok(list) => {
                let now = Instant::now();
                self.claims.observe(&list.items, now);
                Some(self.claims.any_shard_claim(&self.identity, now))
            }
            // RBAC written for upstream's lock alone (get, create, update): lead as upstream does,
            // without the exclusion, and say so.
            Err(kube::Error::Api(e)) if e.code == 403 => {
                if !self.forbidden {
                    tracing::warn!(
                        "cannot list Leases ({}): not checking for replicas running with --shards",
                        e.message
                    );
                    self.forbidden = true;
                }
                Some(false)
            }
            Err(e) => {
                tracing::warn!("listing the Leases: {e}");
                None
            }
        }
    }

    /// Tries until `elector` holds its lock with no shard claim live (true) or `cancel` fires.
    pub async fn acquire(&mut self, elector: &Arc<LeaderElector>, cancel: &CancellationToken) -> bool {
        let cfg = elector.config().clone();
        tracing::info!(lease = %format!("{}/{}", cfg.namespace, cfg.name), identity = %cfg.identity, "attempting to acquire leader lease");
        let mut logged = false;
        loop {
            match self.shard_claimed().await {
                Some(false) if elector.try_lead().await.is_some() => {
                    if self.shard_claimed().await == Some(false) {
                        tracing::info!(lease = %format!("{}/{}", cfg.namespace, cfg.name), "successfully acquired lease");
                        return true;
                    }
                    tracing::warn!("a shard Lease was claimed meanwhile; giving the lock up");
                    elector.release().await;
                }
                Some(true) if !logged => {
                    tracing::info!(
                        "replicas running with --shards hold live shard Leases; waiting for them to end"
                    );
                    logged = true;
                }
                _ => {}
            }
            let wait = cfg
                .retry_period
                .mul_f64(1.0 + rand::random::<f64>() * leaderelection::JITTER_FACTOR);
            tokio::select! {
                () = cancel.cancelled() => return false,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Returns when a shard claim becomes live while this process leads, checked every retry period.
    pub async fn shard_claim_appears(&mut self, retry_period: std::time::Duration) {
        loop {
            tokio::time::sleep(retry_period).await;
            if self.shard_claimed().await == Some(true) {
                return;
            }
        }
    }
}

//! Settings and their validation (client-go `LeaderElectionConfig`).

use std::time::Duration;

/// How long a lease is valid after the holder last renewed it (component-base default).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long the leader keeps trying to renew before it gives up leading (component-base default).
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How often candidates try to acquire and the leader renews (component-base default).
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// The least time a fenced holder keeps between the end of its write window (renew deadline) and
/// the earliest takeover by another clock (the lease duration as the record stores it, in whole
/// seconds): the budget for a write's flight and for observation lag (`docs/scale-out.md`).
pub const MIN_FENCE_MARGIN: Duration = Duration::from_secs(2);
/// Retry waits are jittered by up to this factor (client-go `JitterFactor`).
pub const JITTER_FACTOR: f64 = 1.2;

/// A Lease-based election.
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig {
    pub namespace: String,
    pub name: String,
    /// This candidate's identity, unique among candidates (KCM: `hostname_uuid`).
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    /// Give the lease up on shutdown so another candidate takes over at once.
    pub release_on_cancel: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("leaseDuration ({lease:?}) must be greater than renewDeadline ({renew:?})")]
    LeaseNotAboveRenew { lease: Duration, renew: Duration },
    #[error("renewDeadline ({renew:?}) must be greater than {JITTER_FACTOR} * retryPeriod ({retry:?})")]
    RenewNotAboveRetry { renew: Duration, retry: Duration },
    #[error("leaseDuration, renewDeadline and retryPeriod must all be positive")]
    NotPositive,
    #[error("the identity must not be empty")]
    NoIdentity,
    #[error("the lease name and namespace must not be empty")]
    NoLease,
    #[error(
        "whole seconds of leaseDuration ({lease:?}) minus renewDeadline ({renew:?}) must be at least {needed:?} when a fence relies on them"
    )]
    NoFenceMargin {
        lease: Duration,
        renew: Duration,
        needed: Duration,
    },
}

impl LeaderElectionConfig {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_duration.is_zero() || self.renew_deadline.is_zero() || self.retry_period.is_zero() {
            return Err(ConfigError::NotPositive);
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseNotAboveRenew {
                lease: self.lease_duration,
                renew: self.renew_deadline,
            });
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(ConfigError::RenewNotAboveRetry {
                renew: self.renew_deadline,
                retry: self.retry_period,
            });
        }
        if self.identity.is_empty() {
            return Err(ConfigError::NoIdentity);
        }
        if self.name.is_empty() || self.namespace.is_empty() {
            return Err(ConfigError::NoLease);
        }
        Ok(())
    }

    /// For a holder that fences its writes with the renew deadline (sharded kcm-rs): the record
    /// stores the lease duration truncated to whole seconds, and others may take over that long
    /// after a renewal, so floor(leaseDuration) − renewDeadline must be at least
    /// max([`MIN_FENCE_MARGIN`], leaseDuration / 4).
    pub fn validate_fence_margin(&self) -> Result<(), ConfigError> {
        let stored = Duration::from_secs(self.lease_duration.as_secs());
        let needed = MIN_FENCE_MARGIN.max(self.lease_duration / 4);
        if stored.saturating_sub(self.renew_deadline) < needed {
            return Err(ConfigError::NoFenceMargin {
                lease: self.lease_duration,
                renew: self.renew_deadline,
                needed,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_orders_are_refused() {
        let ok = LeaderElectionConfig::new("kube-system", "kcm-rs", "me");
        assert_eq!(ok.validate(), Ok(()));
        let mut c = ok.clone();
        c.renew_deadline = c.lease_duration;
        assert!(matches!(
            c.validate(),
            Err(ConfigError::LeaseNotAboveRenew { .. })
        ));
        let mut c = ok.clone();
        c.retry_period = Duration::from_secs(9);
        assert!(matches!(
            c.validate(),
            Err(ConfigError::RenewNotAboveRetry { .. })
        ));
        let mut c = ok.clone();
        c.identity.clear();
        assert_eq!(c.validate(), Err(ConfigError::NoIdentity));
    }

    #[test]
    fn a_fence_needs_a_margin_after_the_stored_lease_duration() {
        let ok = LeaderElectionConfig::new("kube-system", "kcm-rs", "me");
        assert_eq!(ok.validate_fence_margin(), Ok(()), "15 s and 10 s leave 5 s");
        let mut c = ok.clone();
        c.lease_duration = Duration::from_millis(15_500);
        c.renew_deadline = Duration::from_millis(15_200);
        assert!(c.validate().is_ok(), "valid for an election");
        assert!(matches!(
            c.validate_fence_margin(),
            Err(ConfigError::NoFenceMargin { .. })
        ));
        c.lease_duration = Duration::from_secs(11);
        c.renew_deadline = Duration::from_secs(10);
        assert!(c.validate_fence_margin().is_err(), "1 s is too little");
        c.lease_duration = Duration::from_secs(40);
        c.renew_deadline = Duration::from_secs(31);
        assert!(c.validate_fence_margin().is_err(), "below a quarter of 40 s");
    }
}

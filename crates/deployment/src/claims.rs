//! What the ReplicaSet claims of one sync come to (upstream `ClaimReplicaSets`, `ClaimObject`,
//! `AdoptReplicaSet`, `ReleaseReplicaSet`): every adoption and release is tried; an orphan found
//! gone when adopted is simply not the Deployment's; a release of a ReplicaSet that is gone, or
//! whose UID precondition fails (recreated under the same name), is done; any other failure, an
//! adoption refused because another controller took the ReplicaSet first among them, fails the
//! sync once every claim was tried, so that nothing is planned over a ReplicaSet that is not the
//! Deployment's.

use controller::ControlError;
use k8s_openapi::api::apps::v1::ReplicaSet;

/// The claims' results, gathered in the order they are made.
#[derive(Debug, Default)]
pub struct ClaimOutcome {
    /// UIDs of the orphans that were gone when adopted: the sync must be planned without them.
    pub gone: Vec<String>,
    /// The first failure that fails the sync.
    pub error: Option<ControlError>,
    /// How many failures there were in all (upstream aggregates them; the first is reported).
    pub failures: usize,
}

impl ClaimOutcome {
    /// An adoption's result.
    pub fn adopted(&mut self, rs: &ReplicaSet, result: Result<(), ControlError>) {
        match result {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {
                self.gone.push(rs.metadata.uid.clone().unwrap_or_default());
            }
            Err(e) => self.failed(e),
        }
    }

    /// A release's result.
    pub fn released(&mut self, result: Result<(), ControlError>) {
        match result {
            Err(e) if !e.is_not_found() && !e.is_invalid() => self.failed(e),
            _ => {}
        }
    }

    /// A failure that is not any one claim's (the Deployment may not adopt at all).
    pub fn failed(&mut self, e: ControlError) {
        self.failures += 1;
        self.error.get_or_insert(e);
    }

    /// The orphans found gone, or the first failure.
    pub fn finish(self) -> Result<Vec<String>, ControlError> {
        match self.error {
            Some(e) => {
                if self.failures > 1 {
                    tracing::warn!(
                        failures = self.failures,
                        "claiming replica sets failed more than once; reporting the first"
                    );
                }
                Err(e)
            }
            None => Ok(self.gone),
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::core::{Status, response::reason};

    use super::*;
    use crate::fixtures::rs;

    fn api(code: u16, why: &str) -> Result<(), ControlError> {
        let e = kube::Error::Api(Status::failure(why, why).with_code(code).boxed());
        Err(ControlError::api("patch replicaset", "ns/x", e))
    }

    #[test]
    fn only_a_gone_orphan_is_skipped_and_every_claim_is_tried() {
        let (a, b, c) = (
            rs("a", 1, 1).build(),
            rs("b", 1, 1).build(),
            rs("c", 1, 1).build(),
        );
        let mut o = ClaimOutcome::default();
        o.adopted(&a, api(404, reason::NOT_FOUND));
        o.adopted(&b, Ok(()));
        o.released(api(404, reason::NOT_FOUND));
        o.released(api(422, reason::INVALID));
        assert_eq!(o.finish().unwrap(), ["uid-a"]);

        // Another controller took it first: the sync fails, after the later claims were made.
        let mut o = ClaimOutcome::default();
        o.adopted(&a, api(422, reason::INVALID));
        o.adopted(&b, api(500, reason::INTERNAL_ERROR));
        o.adopted(&c, api(404, reason::NOT_FOUND));
        o.released(api(500, reason::INTERNAL_ERROR));
        assert_eq!(o.failures, 3);
        assert!(
            o.finish().unwrap_err().is_invalid(),
            "the first failure is reported"
        );
    }
}

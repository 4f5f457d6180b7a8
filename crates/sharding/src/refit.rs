//! `--shard-cuts=auto`: cuts refitted online as namespaces come and go.
//!
//! The cuts live in one versioned object, the Lease `kcm-rs-shard-cuts-<N>` in the leader-election
//! namespace (annotations: the cuts, a generation, who wrote them; no holder, so that nothing takes
//! it for a lock). A Lease because the replicas' role already reads and writes Leases there, and the
//! manager lists them every round anyway: a new version reaches every replica at its next round,
//! without a request of its own.
//!
//! One replica refits: the first live member by name, once the membership has been stable for a
//! lease duration, then every `--shard-refit-interval`. It lists the pods' metadata, weighs each
//! namespace as `--print-shard-cuts` does, and writes a new version only when the current cuts are
//! out of balance and the new ones are clearly better ([`decide`]: two thresholds, so that drift and
//! a fit no better than the last hand nothing over). The write carries the resourceVersion it read,
//! so two replicas that both think they refit cannot both write over one version.
//!
//! A version moves ownership through the claims, as any layout change does: every version shares
//! one tag ([`informer::AUTO_TAG`]), a shard Lease is named after its range, and a refit keeps each
//! cut that would put no namespace elsewhere ([`informer::Layout::refit`]). So a shard whose range
//! is unchanged keeps its Lease and holder; one whose range changed is released by its holder
//! (drained, fence closed) before any replica may claim an overlapping range of the new version
//! (`claims`): shrink before grow, one handover for the namespaces that moved.

use std::collections::BTreeMap;

use informer::{Layout, LayoutError};
use k8s_openapi::{api::coordination::v1::Lease, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::{Api, api::PostParams};

use crate::weights;

/// Every record's name starts with this; the shard count follows.
const RECORD_PREFIX: &str = "kcm-rs-shard-cuts-";
const CUTS: &str = "kcm-rs.io/shard-cuts";
const GENERATION: &str = "kcm-rs.io/shard-cuts-generation";
const WRITTEN_BY: &str = "kcm-rs.io/shard-cuts-written-by";

/// Refit only while the heaviest shard carries more than this times the mean. Below it, the
/// heaviest of 3 replicas holding 4 shards each stays within about 1.2× of the lightest in the
/// review's set, the balance the scale-out work aims at (`informer` layout tests).
pub const IMBALANCE_TRIGGER: f64 = 1.25;
/// …and only if the new cuts take at least this part off the heaviest shard's weight.
pub const MIN_GAIN: f64 = 0.1;

/// The record's name for `count` shards.
pub fn record_name(count: u32) -> String {
    format!("{RECORD_PREFIX}{count}")
}

/// A version of the refitted cuts, as read from the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub layout: Layout,
    pub generation: u64,
    resource_version: Option<String>,
}

/// The record could not be read: the replicas keep the cuts they have.
#[derive(Debug, thiserror::Error)]
#[error("the shard cuts record {name}: {reason}")]
pub struct RecordError {
    name: String,
    reason: String,
}

impl Record {
    /// The record of `count` shards among one list of the namespace's Leases.
    pub fn read(leases: &[Lease], count: u32) -> Result<Option<Self>, RecordError> {
        let name = record_name(count);
        let Some(lease) = leases
            .iter()
            .find(|l| l.metadata.name.as_deref() == Some(name.as_str()))
        else {
            return Ok(None);
        };
        let error = |reason: String| RecordError {
            name: name.clone(),
            reason,
        };
        let annotations = lease.metadata.annotations.clone().unwrap_or_default();
        let cuts = annotations
            .get(CUTS)
            .ok_or_else(|| error(format!("no annotation {CUTS}")))?;
        let layout = Layout::parse_cuts(cuts)
            .and_then(|l| Layout::auto(count, Some(l.cuts().to_vec())))
            .map_err(|e: LayoutError| error(e.to_string()))?;
        let generation = annotations
            .get(GENERATION)
            .and_then(|g| g.parse().ok())
            .ok_or_else(|| error(format!("annotation {GENERATION} is not a number")))?;
        Ok(Some(Self {
            layout,
            generation,
            resource_version: lease.metadata.resource_version.clone(),
        }))
    }
}

/// The next version for `current` given each namespace's hash and weight, if one is worth a
/// handover: the heaviest shard is above [`IMBALANCE_TRIGGER`] times the mean now, and the refit
/// takes at least [`MIN_GAIN`] off it.
pub fn decide(current: &Layout, weighted: &[(u64, u64)]) -> Option<Layout> {
    let next = current.refit(weighted).ok()?;
    if next == *current {
        return None;
    }
    let heaviest = |l: &Layout| l.loads(weighted).into_iter().max().unwrap_or(0) as f64;
    let total: u64 = weighted.iter().map(|(_, w)| *w).sum();
    let mean = total as f64 / f64::from(current.count());
    let (before, after) = (heaviest(current), heaviest(&next));
    (before > mean * IMBALANCE_TRIGGER && after <= before * (1.0 - MIN_GAIN)).then_some(next)
}

/// One refit: weighs the namespaces, and writes the next version over `current` (the layout the
/// replicas run, `record` the version it came from) if [`decide`] finds one worth it.
pub async fn run(
    client: kube::Client,
    leases: Api<Lease>,
    record: Option<Record>,
    current: Layout,
    identity: String,
) {
    let pods = match weights::pods_by_namespace(&client, false).await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!("weighing the namespaces to refit the shard cuts: {e}");
            return;
        }
    };
    let weighted = weights::weights(&pods);
    let next = match decide(&current, &weighted) {
        Some(next) => next,
        // The record is gone (deleted) while the replicas follow other cuts than the first ones:
        // write those back, so that a replica starting now follows them too.
        None if record.is_none() && Layout::auto(current.count(), None).ok() != Some(current.clone()) => {
            current.clone()
        }
        None => {
            tracing::debug!(loads = ?current.loads(&weighted), "the shard cuts are in balance");
            return;
        }
    };
    let generation = record.as_ref().map_or(1, |r| r.generation + 1);
    tracing::info!(
        generation,
        cuts = %next.cuts_text(),
        before = ?current.loads(&weighted),
        after = ?next.loads(&weighted),
        "refitting the shard cuts to the namespaces"
    );
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(record_name(current.count())),
            resource_version: record.as_ref().and_then(|r| r.resource_version.clone()),
            annotations: Some(BTreeMap::from([
                (CUTS.to_owned(), next.cuts_text()),
                (GENERATION.to_owned(), generation.to_string()),
                (WRITTEN_BY.to_owned(), identity),
            ])),
            ..ObjectMeta::default()
        },
        spec: None,
    };
    let pp = PostParams::default();
    let written = match &record {
        Some(_) => leases.replace(&record_name(current.count()), &pp, &lease).await,
        None => leases.create(&pp, &lease).await,
    };
    if let Err(e) = written {
        // A conflict: another replica wrote a version meanwhile; the next round reads it.
        tracing::warn!(generation, "writing the refitted shard cuts: {e}");
    }
}

#[cfg(test)]
mod tests {
    use informer::fnv1a64;

    use super::*;

    fn weights(names: impl IntoIterator<Item = String>) -> Vec<(u64, u64)> {
        names.into_iter().map(|n| (fnv1a64(n.as_bytes()), 2)).collect()
    }

    fn record(cuts: &str, generation: &str) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(record_name(4)),
                resource_version: Some("7".into()),
                annotations: Some(BTreeMap::from([
                    (CUTS.to_owned(), cuts.to_owned()),
                    (GENERATION.to_owned(), generation.to_owned()),
                ])),
                ..ObjectMeta::default()
            },
            spec: None,
        }
    }

    #[test]
    fn crowded_names_are_refitted_once_and_then_left_alone() {
        let crowded = weights((b'a'..=b'h').map(|c| format!("cuts-x-{}", c as char)));
        let start = Layout::auto(4, None).unwrap();
        let loads = start.loads(&crowded);
        assert_eq!(loads.iter().filter(|l| **l > 0).count(), 1, "{loads:?}");
        let next = decide(&start, &crowded).expect("all in one shard: refit");
        assert_eq!(next.loads(&crowded), vec![4, 4, 4, 4]);
        assert_eq!(decide(&next, &crowded), None, "balanced: no second move");
        // One more namespace: the heaviest shard is 6 against a mean of 4.5, under the trigger.
        let mut more = crowded.clone();
        more.extend(weights(["cuts-x-i".to_owned()]));
        assert_eq!(decide(&next, &more), None, "drift below the trigger");
    }

    /// The scale-out review's set (team-a … team-z with 12 pods, app-1 … app-100 with 6, the four
    /// system namespaces with 3) over 12 shards and 3 replicas: the first refit from equal ranges
    /// leaves the most-loaded replica, in the worst assignment of 4 shards each, at most 1.2 times
    /// the least-loaded one.
    #[test]
    fn the_first_refit_balances_the_review_set_within_one_fifth() {
        let teams = (b'a'..=b'z').map(|c| (format!("team-{}", c as char), 12));
        let apps = (1..=100).map(|i| (format!("app-{i}"), 6));
        let system = ["kube-system", "default", "kube-public", "kube-node-lease"].map(|n| (n.to_owned(), 3));
        let pods: BTreeMap<String, u64> = teams.chain(apps).chain(system).collect();
        let weighted = weights::weights(&pods);
        let next = decide(&Layout::auto(12, None).unwrap(), &weighted).expect("crowded: refit");
        let mut loads = next.loads(&weighted);
        loads.sort_unstable();
        let (least, most): (u64, u64) = (loads[..4].iter().sum(), loads[8..].iter().sum());
        let ratio = most as f64 / least as f64;
        println!("refitted: pods+1 per shard {loads:?}, worst replica ratio {ratio:.3}");
        assert!(ratio <= 1.2, "worst replica ratio {ratio:.2}: {loads:?}");
        assert_eq!(decide(&next, &weighted), None, "and then stays");
    }

    #[test]
    fn a_fit_no_better_than_the_current_cuts_hands_nothing_over() {
        // One namespace outweighs the rest: no cut can help.
        let mut weighted = weights((0..6).map(|i| format!("ns-{i}")));
        weighted.push((fnv1a64(b"huge"), 1000));
        let fitted = Layout::auto(4, None).unwrap().refit(&weighted).unwrap();
        assert_eq!(decide(&fitted, &weighted), None);
    }

    #[test]
    fn the_record_is_read_back_and_a_bad_one_named() {
        let layout = Layout::auto(4, Some(vec![10, 20, 30])).unwrap();
        let list = [record(&layout.cuts_text(), "3")];
        let read = Record::read(&list, 4).unwrap().unwrap();
        assert_eq!((&read.layout, read.generation), (&layout, 3));
        assert_eq!(read.resource_version.as_deref(), Some("7"));
        assert!(
            Record::read(&list, 6).unwrap().is_none(),
            "another count's record"
        );
        for (cuts, generation) in [
            ("0x01", "1"),
            ("0x0000000000000001", "1"),
            (&*layout.cuts_text(), "x"),
        ] {
            let err = Record::read(&[record(cuts, generation)], 4).unwrap_err();
            assert!(err.to_string().contains("kcm-rs-shard-cuts-4"), "{err}");
        }
    }
}

//! Who else is sharing the work: each replica keeps a membership Lease, `kcm-rs-member-<layout>-<pod>`
//! (the layout: `12`, or `12c0a1b2c3d` with cuts of its own; outside a pod a hash of the identity),
//! renewed every retry period by an elector of its own; every replica lists them and counts the live
//! ones. A member is live while its record keeps changing, judged by the elector's rule (local time
//! since this replica saw the record change, plus the record's lease duration), never by the remote
//! `renewTime`, so clock offset between machines does not matter. A released member Lease (holder
//! emptied, on SIGTERM) is not live at once.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use tokio::time::{Duration, Instant};

/// Every membership Lease's name starts with this.
pub const MEMBER_PREFIX: &str = "kcm-rs-member-";

/// The longest object name the API server takes (a DNS subdomain).
const NAME_MAX: usize = 253;

/// The membership Lease of a replica running with `layout` (`informer::Layout`'s display): named
/// after its pod (`POD_NAME`, from the downward API) when it runs in one, so that `kubectl get
/// leases` says whose it is and a restarted container takes its pod's Lease back (once the last
/// container's record expires) instead of adding one; else after a hash of `identity`, which is
/// `hostname_<random>` and may not fit a Lease name (several processes on one host, as in the e2e
/// suites, each get their own).
pub fn member_lease_name(layout: &str, identity: &str, pod: Option<&str>) -> String {
    if let Some(pod) = pod.filter(|p| !p.is_empty()) {
        let name = format!("{MEMBER_PREFIX}{layout}-{pod}");
        if name.len() <= NAME_MAX {
            return name;
        }
    }
    format!(
        "{MEMBER_PREFIX}{layout}-{:016x}",
        informer::fnv1a64(identity.as_bytes())
    )
}

/// The layout a membership Lease name advertises.
fn layout_of(name: &str) -> Option<&str> {
    name.strip_prefix(MEMBER_PREFIX)?.split('-').next()
}

/// What this replica has seen of the membership Leases. Invariant: `live` holds exactly the names
/// that were live at the last [`Members::observe`], and `changed_at` is when that set last changed.
#[derive(Debug)]
pub struct Members {
    own: String,
    /// This replica's layout, as member names advertise it.
    layout: String,
    seen: HashMap<String, Seen>,
    live: BTreeSet<String>,
    changed_at: Instant,
}

#[derive(Debug)]
struct Seen {
    record: LeaseSpec,
    changed_at: Instant,
    resource_version: Option<String>,
}

/// A membership Lease unchanged for this many lease durations belonged to a process that is gone
/// (each start makes a Lease of its own): the others delete it.
pub const STALE_AFTER_LEASE_DURATIONS: u32 = 10;

impl Members {
    pub fn new(own: String, layout: &str, now: Instant) -> Self {
        let live = BTreeSet::from([own.clone()]);
        Self {
            own,
            layout: layout.to_owned(),
            seen: HashMap::new(),
            live,
            changed_at: now,
        }
    }

    /// Takes in one list of the namespace's Leases, read at `now`.
    pub fn observe(&mut self, leases: &[Lease], now: Instant) {
        let mut present = BTreeSet::new();
        for lease in leases {
            let Some(name) = lease.metadata.name.as_deref() else {
                continue;
            };
            if !name.starts_with(MEMBER_PREFIX) {
                continue;
            }
            present.insert(name.to_owned());
            let record = lease.spec.clone().unwrap_or_default();
            let resource_version = lease.metadata.resource_version.clone();
            match self.seen.get_mut(name) {
                Some(s) if s.record == record => s.resource_version = resource_version,
                Some(s) => {
                    s.record = record;
                    s.changed_at = now;
                    s.resource_version = resource_version;
                }
                None => {
                    self.seen.insert(
                        name.to_owned(),
                        Seen {
                            record,
                            changed_at: now,
                            resource_version,
                        },
                    );
                }
            }
        }
        self.seen.retain(|name, _| present.contains(name));
        let mut live: BTreeSet<String> = self
            .seen
            .iter()
            .filter(|(_, s)| is_live(s, now))
            .map(|(n, _)| n.clone())
            .collect();
        live.insert(self.own.clone());
        if live != self.live {
            self.live = live;
            self.changed_at = now;
        }
    }

    /// Live members, this one included.
    pub fn live(&self) -> usize {
        self.live.len()
    }

    /// This replica's place among the live members, by name.
    pub fn rank(&self) -> usize {
        self.live.iter().position(|n| *n == self.own).unwrap_or(0)
    }

    /// The live set has not changed for `lease_duration`.
    pub fn stable(&self, now: Instant, lease_duration: Duration) -> bool {
        now >= self.changed_at + lease_duration
    }

    /// A live member advertises another layout (shard count or cuts).
    pub fn mixed(&self) -> bool {
        self.live.iter().any(|n| layout_of(n) != Some(&self.layout))
    }

    /// Among the live members, the first by name runs with this replica's layout: when no layout
    /// serves, that one starts, and every replica agrees which.
    pub fn first_layout(&self) -> bool {
        self.live
            .first()
            .is_none_or(|n| layout_of(n) == Some(&self.layout))
    }

    /// Other members' Leases unchanged for [`STALE_AFTER_LEASE_DURATIONS`] lease durations, with the
    /// resourceVersion seen (a delete conditioned on it spares one renewed meanwhile).
    pub fn stale(&self, now: Instant, lease_duration: Duration) -> Vec<(String, Option<String>)> {
        self.seen
            .iter()
            .filter(|(name, s)| {
                **name != self.own && now >= s.changed_at + lease_duration * STALE_AFTER_LEASE_DURATIONS
            })
            .map(|(name, s)| (name.clone(), s.resource_version.clone()))
            .collect()
    }

    pub fn live_names(&self) -> impl Iterator<Item = &str> {
        self.live.iter().map(String::as_str)
    }
}

fn is_live(s: &Seen, now: Instant) -> bool {
    let holder = s.record.holder_identity.as_deref().unwrap_or_default();
    !holder.is_empty() && now < s.changed_at + leaderelection::duration_of(&s.record)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};

    use super::*;

    const LD: Duration = Duration::from_secs(15);

    fn lease(name: &str, holder: &str, renewed: i64) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: (!holder.is_empty()).then(|| holder.into()),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(
                    k8s_openapi::jiff::Timestamp::from_second(renewed).unwrap(),
                )),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn a_member_is_live_until_its_record_stops_changing_for_a_lease_duration() {
        let t = Instant::now();
        let own = member_lease_name("12", "a", None);
        let other = member_lease_name("12", "b", None);
        let mut m = Members::new(own.clone(), "12", t);
        m.observe(&[lease(&own, "a", 1), lease(&other, "b", 1)], t);
        assert_eq!(m.live(), 2);
        assert!(!m.stable(t + LD / 2, LD));
        // b renews: live; then stops renewing.
        m.observe(
            &[lease(&own, "a", 2), lease(&other, "b", 2)],
            t + Duration::from_secs(2),
        );
        m.observe(
            &[lease(&own, "a", 3), lease(&other, "b", 2)],
            t + Duration::from_secs(16),
        );
        assert_eq!(m.live(), 2);
        m.observe(
            &[lease(&own, "a", 4), lease(&other, "b", 2)],
            t + Duration::from_secs(18),
        );
        assert_eq!(m.live(), 1);
        assert!(!m.stable(t + Duration::from_secs(20), LD));
        assert!(m.stable(t + Duration::from_secs(33), LD));
    }

    #[test]
    fn a_released_member_leaves_at_once_and_a_vanished_one_is_forgotten() {
        let t = Instant::now();
        let own = member_lease_name("12", "a", None);
        let other = member_lease_name("12", "b", None);
        let mut m = Members::new(own.clone(), "12", t);
        m.observe(&[lease(&other, "b", 1)], t);
        assert_eq!(m.live(), 2);
        m.observe(&[lease(&other, "", 2)], t + Duration::from_secs(1));
        assert_eq!(m.live(), 1);
        m.observe(&[], t + Duration::from_secs(2));
        assert!(m.seen.is_empty());
    }

    #[test]
    fn a_member_lease_unchanged_for_ten_lease_durations_is_stale() {
        let t = Instant::now();
        let own = member_lease_name("12", "a", None);
        let gone = member_lease_name("12", "b", None);
        let mut m = Members::new(own.clone(), "12", t);
        m.observe(&[lease(&own, "a", 1), lease(&gone, "b", 1)], t);
        assert!(m.stale(t + LD * 9, LD).is_empty());
        m.observe(&[lease(&own, "a", 1), lease(&gone, "b", 1)], t + LD * 10);
        assert_eq!(m.stale(t + LD * 10, LD).len(), 1, "never one's own");
        assert_eq!(m.stale(t + LD * 10, LD)[0].0, gone);
    }

    #[test]
    fn a_live_member_with_another_count_is_seen() {
        let t = Instant::now();
        let mut m = Members::new(member_lease_name("12", "a", None), "12", t);
        assert!(!m.mixed());
        m.observe(&[lease(&member_lease_name("8", "b", None), "b", 1)], t);
        assert!(m.mixed());
        assert_eq!(layout_of(&member_lease_name("8", "b", None)), Some("8"));
        assert_eq!(
            layout_of(&member_lease_name("8c0a1b2c3d", "b", None)),
            Some("8c0a1b2c3d")
        );
        // Same count, other cuts: another layout too.
        let mut m = Members::new(member_lease_name("12", "a", None), "12", t);
        m.observe(&[lease(&member_lease_name("12c0a1b2c3d", "b", None), "b", 1)], t);
        assert!(m.mixed());
    }

    #[test]
    fn a_member_lease_is_named_after_its_pod_when_it_has_one() {
        assert_eq!(
            member_lease_name("12", "kcm-rs-7d9f_ab", Some("kcm-rs-7d9f-x2k")),
            "kcm-rs-member-12-kcm-rs-7d9f-x2k"
        );
        assert_eq!(
            layout_of(&member_lease_name("12c0000000a", "i", Some("kcm-rs-0"))),
            Some("12c0000000a")
        );
        let long = "p".repeat(250);
        for pod in [None, Some(""), Some(long.as_str())] {
            let name = member_lease_name("12", "host_1", pod);
            assert_eq!(name, member_lease_name("12", "host_1", None), "{pod:?}");
            assert!(name.len() <= NAME_MAX);
        }
    }
}

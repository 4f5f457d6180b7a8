//! The claim rule, case by case (`claims_search_tests.rs` walks every interleaving).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};

use super::*;

pub(super) const UNSHARDED: &str = "kcm-rs";

pub(super) fn lease(name: &str, holder: Option<&str>, renewed: i64, seconds: i32) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: holder.map(Into::into),
            lease_duration_seconds: Some(seconds),
            renew_time: Some(MicroTime(
                k8s_openapi::jiff::Timestamp::from_second(renewed).unwrap(),
            )),
            ..LeaseSpec::default()
        }),
    }
}

fn shard(i: u32, n: u32) -> Shard {
    Shard::new(i, n).unwrap()
}

#[test]
fn overlapping_claims_of_other_layouts_and_the_unsharded_lock_block() {
    let t = Instant::now();
    let mut c = Claims::new(UNSHARDED);
    c.observe(&[lease("kcm-rs-shard-0-of-12", Some("a"), 1, 15)], t);
    // 0-of-16 and 1-of-16 overlap 0-of-12 ([0, 1/12)); 2-of-16 starts at 1/8.
    assert!(c.blocks(shard(0, 16), "b", t));
    assert!(c.blocks(shard(1, 16), "b", t));
    assert!(!c.blocks(shard(2, 16), "b", t));
    assert!(!c.blocks(shard(0, 16), "a", t), "one's own claim");
    assert!(!c.blocks(shard(0, 12), "b", t), "the same Lease is the elector's");
    assert!(c.layout_serves(&equal(12), t) && !c.layout_serves(&equal(16), t));
    assert!(c.any_shard_claim("b", t));

    c.observe(&[lease(UNSHARDED, Some("u"), 1, 15)], t);
    assert!(
        c.blocks(shard(7, 12), "b", t),
        "the unsharded lock covers everything"
    );
    assert!(c.layout_serves(&equal(1), t));
}

#[test]
fn a_layout_with_cuts_of_its_own_is_another_layout_by_its_ranges() {
    let t = Instant::now();
    let cut = informer::Layout::parse_cuts("0x0000000000000010,0x8000000000000000").unwrap();
    let mut c = Claims::new(UNSHARDED);
    let name = crate::names::shard_lease_name(cut.shards()[1]);
    c.observe(&[lease(&name, Some("a"), 1, 15)], t);
    // [0x10, 2^63) overlaps both halves' first one only; the same count with equal cuts is not it.
    assert!(c.blocks(shard(0, 2), "b", t));
    assert!(!c.blocks(shard(1, 2), "b", t));
    assert!(c.blocks(shard(0, 3), "b", t), "same count, other cuts");
    assert!(
        !c.blocks(cut.shards()[1], "b", t),
        "the same Lease is the elector's"
    );
    assert!(c.layout_serves(&cut, t) && !c.layout_serves(&equal(3), t));
}

#[test]
fn a_claim_expires_by_this_clock_and_a_deleted_one_only_then() {
    let t = Instant::now();
    let mut c = Claims::new(UNSHARDED);
    let held = lease("kcm-rs-shard-0-of-2", Some("a"), 1, 15);
    c.observe(std::slice::from_ref(&held), t);
    c.observe(std::slice::from_ref(&held), t + Duration::from_secs(10));
    assert!(c.blocks(shard(0, 3), "b", t + Duration::from_secs(14)));
    assert!(!c.blocks(shard(0, 3), "b", t + Duration::from_secs(15)));

    let mut c = Claims::new(UNSHARDED);
    c.observe(std::slice::from_ref(&held), t);
    c.observe(&[], t + Duration::from_secs(1)); // deleted
    assert!(c.blocks(shard(0, 3), "b", t + Duration::from_secs(14)));
    assert!(!c.blocks(shard(0, 3), "b", t + Duration::from_secs(15)));
    c.observe(&[], t + Duration::from_secs(16));
    assert!(c.seen.is_empty(), "forgotten once expired and gone");

    let mut c = Claims::new(UNSHARDED);
    c.observe(&[lease("kcm-rs-shard-0-of-2", None, 2, 1)], t);
    assert!(!c.blocks(shard(0, 3), "b", t), "released");
}

fn equal(count: u32) -> informer::Layout {
    informer::Layout::equal(count).unwrap()
}

#[test]
fn one_range_under_another_index_blocks() {
    // Refitted cuts [c2, c3, x] after [c1, c2, c3]: the old shard 2 and the new shard 1 cover one
    // range under two Leases.
    let old = informer::Layout::auto(4, Some(vec![10, 20, 30])).unwrap();
    let new = informer::Layout::auto(4, Some(vec![20, 30, 40])).unwrap();
    let (held, wanted) = (old.shards()[2], new.shards()[1]);
    assert_eq!((held.start(), held.end()), (wanted.start(), wanted.end()));
    let t = Instant::now();
    let mut claims = Claims::new(UNSHARDED);
    let name = crate::names::shard_lease_name(held);
    claims.observe(&[lease(&name, Some("a"), 1, 15)], t);
    assert!(
        claims.blocks(wanted, "b", t),
        "a holds the range under the old Lease"
    );
    assert!(
        !claims.blocks(held, "b", t),
        "its own Lease is its elector's to judge"
    );
}

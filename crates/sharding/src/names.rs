//! The names of shard Leases, which carry what each claims: any replica, of any layout, reads the
//! range a claim covers from the name alone.

use informer::Shard;

/// Every shard Lease's name starts with this.
const SHARD_PREFIX: &str = "kcm-rs-shard-";

/// The Lease of shard `shard`: `kcm-rs-shard-3-of-12`; in a layout with cuts of its own the name
/// also carries the range (`kcm-rs-shard-3-of-12c0a1b2c3d-<start>-<end>`, hex), so that a replica
/// of any other layout reads from the name alone what the claim covers.
pub fn shard_lease_name(shard: Shard) -> String {
    if shard.tag() == 0 {
        format!("{SHARD_PREFIX}{shard}")
    } else {
        format!("{SHARD_PREFIX}{shard}-{:016x}-{:x}", shard.start(), shard.end())
    }
}

/// The shard a shard Lease name stands for, of whatever layout.
pub fn shard_of_lease_name(name: &str) -> Option<Shard> {
    let (index, rest) = name.strip_prefix(SHARD_PREFIX)?.split_once("-of-")?;
    let index = index.parse().ok()?;
    let mut parts = rest.split('-');
    let layout = parts.next()?;
    match (layout.split_once('c'), parts.next(), parts.next(), parts.next()) {
        (None, None, ..) => Shard::new(index, layout.parse().ok()?).ok(),
        (Some((count, tag)), Some(start), Some(end), None) => Shard::cut(
            index,
            count.parse().ok()?,
            u32::from_str_radix(tag, 16).ok()?,
            u128::from_str_radix(start, 16).ok()?,
            u128::from_str_radix(end, 16).ok()?,
        )
        .ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use informer::Layout;

    use super::*;

    #[test]
    fn a_lease_name_gives_back_its_shard_in_either_layout() {
        let cut = Layout::parse_cuts("0x0000000000000010,0x8000000000000000").unwrap();
        for shard in Shard::all(12).unwrap().chain(cut.shards()) {
            let name = shard_lease_name(shard);
            assert_eq!(shard_of_lease_name(&name), Some(shard), "{name}");
            assert!(name.len() <= 253, "a Lease name is a DNS subdomain: {name}");
        }
        assert_eq!(
            shard_lease_name(Shard::new(3, 12).unwrap()),
            "kcm-rs-shard-3-of-12"
        );
        assert!(shard_lease_name(cut.shards()[2]).ends_with("-8000000000000000-10000000000000000"));
        for bad in [
            "kcm-rs-shard-3-of-12-1-2",
            "kcm-rs-shard-1-of-3c1-2-1",
            "kcm-rs-shard-3-of-2",
        ] {
            assert_eq!(shard_of_lease_name(bad), None, "{bad}");
        }
    }
}

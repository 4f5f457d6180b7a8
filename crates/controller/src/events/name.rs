//! Event names, as client-go's recorder makes them (`tools/record/util.GenerateEventName`):
//! `<object name>.<nanoseconds in hex>`, or a UUID when that is not a DNS subdomain (an object name
//! longer than 236 characters leaves no room for the suffix), so that the event is still written
//! rather than refused by the API server.

use k8s_openapi::api::core::v1::ObjectReference;

use super::correlator::EventKey;

/// The longest DNS subdomain (apimachinery `DNS1123SubdomainMaxLength`).
const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

/// The name of the event first observed under `key` at `stamp` (nanoseconds since 1970).
///
/// client-go draws the fallback UUID at random and remembers the name for the repeats; this one is
/// the correlator's key (a hash seeded at random per process) mixed with the stamp, so a repeat,
/// which carries the first event's key and stamp, gets the same name without it being kept.
pub(super) fn event_name(object: &ObjectReference, key: EventKey, stamp: u64) -> String {
    let name = format!("{}.{stamp:x}", object.name.as_deref().unwrap_or_default());
    if is_dns1123_subdomain(&name) {
        return name;
    }
    let bits = key.bits() ^ u128::from(stamp);
    uuid::Builder::from_random_bytes(bits.to_le_bytes())
        .into_uuid()
        .to_string()
}

/// apimachinery's `IsDNS1123Subdomain`: at most 253 characters, dot-separated labels of lower-case
/// letters, digits and `-`, each starting and ending with a letter or digit.
fn is_dns1123_subdomain(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.len() <= DNS1123_SUBDOMAIN_MAX_LENGTH
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            match (b.first(), b.last()) {
                (Some(&first), Some(&last)) => {
                    alnum(first) && alnum(last) && b.iter().all(|&c| alnum(c) || c == b'-')
                }
                _ => false,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains_as_apimachinery_reads_them() {
        for ok in ["a", "web.18c0", "a-b.c-d", "0", &"a".repeat(253)] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        let too_long = "a".repeat(254);
        for bad in [
            "",
            "A.1",
            "a..b",
            "-a.1",
            "a-.1",
            "a_b.1",
            ".a",
            "a.",
            too_long.as_str(),
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad:?}");
        }
    }
}

//! `spec.successPolicy` of Indexed Jobs (upstream `success_policy.go`): which succeeded indexes are
//! enough to declare the Job successful before every index has run.

use k8s_openapi::api::batch::v1::SuccessPolicy;

use crate::intervals::OrderedIntervals;

/// The message of the SuccessCriteriaMet condition, naming the first rule met, if one is met.
pub(crate) fn match_success_policy(
    policy: Option<&SuccessPolicy>,
    completions: i32,
    succeeded: &OrderedIntervals,
) -> Option<String> {
    let policy = policy?;
    if succeeded.is_empty() {
        return None;
    }
    for (index, rule) in policy.rules.iter().enumerate() {
        let met = if let Some(s) = &rule.succeeded_indexes {
            let required = OrderedIntervals::parse(s, completions);
            // A rule whose indexes do not parse (or are all out of range) never matches.
            !required.is_empty() && indexes_rule_met(&required, succeeded, rule.succeeded_count)
        } else {
            rule.succeeded_count.is_some_and(|c| succeeded.total() >= c)
        };
        if met {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}

/// All of `required` succeeded, or at least `count` of them did.
fn indexes_rule_met(required: &OrderedIntervals, succeeded: &OrderedIntervals, count: Option<i32>) -> bool {
    let (mut r, mut s, mut contained) = (0, 0, 0);
    while r < required.0.len() && s < succeeded.0.len() {
        let (a, b) = (required.0[r], succeeded.0[s]);
        contained += (a.last.min(b.last) - a.first.max(b.first) + 1).max(0);
        match b.last.cmp(&a.last) {
            std::cmp::Ordering::Less => s += 1,
            std::cmp::Ordering::Greater => r += 1,
            std::cmp::Ordering::Equal => {
                s += 1;
                r += 1;
            }
        }
    }
    contained == required.total() || count.is_some_and(|c| contained >= c)
}

#[cfg(test)]
mod tests {
    //! Cases from upstream's `TestMatchSuccessPolicy`.
    use k8s_openapi::api::batch::v1::SuccessPolicyRule;

    use super::*;

    fn rule(indexes: Option<&str>, count: Option<i32>) -> SuccessPolicyRule {
        SuccessPolicyRule {
            succeeded_indexes: indexes.map(Into::into),
            succeeded_count: count,
        }
    }

    fn check(rules: Vec<SuccessPolicyRule>, completions: i32, succeeded: &str) -> Option<String> {
        let policy = SuccessPolicy { rules };
        match_success_policy(
            Some(&policy),
            completions,
            &OrderedIntervals::parse(succeeded, completions),
        )
    }

    #[test]
    fn no_policy_or_no_successes_never_match() {
        assert_eq!(
            match_success_policy(None, 10, &OrderedIntervals::parse("0-9", 10)),
            None
        );
        assert_eq!(check(vec![rule(None, Some(0))], 10, ""), None);
    }

    #[test]
    fn succeeded_indexes_must_all_succeed() {
        assert_eq!(
            check(vec![rule(Some("0,2"), None)], 5, "0,2"),
            Some("Matched rules at index 0".into())
        );
        assert_eq!(check(vec![rule(Some("0,2"), None)], 5, "0,1"), None);
        assert_eq!(check(vec![rule(Some("1-4"), None)], 10, "0-3,5-9"), None);
        assert_eq!(
            check(vec![rule(Some("1-4,6"), None)], 10, "0-4,6-9"),
            Some("Matched rules at index 0".into())
        );
    }

    #[test]
    fn succeeded_count_within_the_indexes() {
        assert_eq!(check(vec![rule(Some("0-4"), Some(2))], 10, "1,7,8"), None);
        assert_eq!(
            check(vec![rule(Some("0-4"), Some(2))], 10, "1,3,7"),
            Some("Matched rules at index 0".into())
        );
        assert_eq!(
            check(vec![rule(Some("3-9"), Some(3))], 10, "0-2,4,6,9"),
            Some("Matched rules at index 0".into())
        );
    }

    #[test]
    fn succeeded_count_alone_counts_every_index() {
        assert_eq!(
            check(vec![rule(None, Some(3))], 10, "0,5,9"),
            Some("Matched rules at index 0".into())
        );
        assert_eq!(check(vec![rule(None, Some(4))], 10, "0,5,9"), None);
    }

    #[test]
    fn first_rule_met_is_named_and_unparsable_rules_are_skipped() {
        let rules = vec![
            rule(Some("x"), None),
            rule(Some("20-30"), None),
            rule(Some("5"), None),
            rule(None, Some(1)),
        ];
        assert_eq!(check(rules, 10, "5"), Some("Matched rules at index 2".into()));
    }
}

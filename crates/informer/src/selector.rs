//! Label selectors with apimachinery's semantics (`metav1.LabelSelectorAsSelector`), on top of
//! `kube::core::Selector` for the matching itself. The differences from kube-core's conversion are
//! exactly what controllers depend on: a missing selector selects nothing while an empty one selects
//! everything, `In`/`NotIn` need at least one value, `Exists`/`DoesNotExist` take none, and keys and
//! values must be valid label syntax. A ReplicaSet whose selector fails here is reported, not synced.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::core::{Expression, Selector, SelectorExt as _};

/// What a label selector selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelMatcher {
    /// A missing selector: matches no object.
    Nothing,
    /// An empty selector: matches every object.
    Everything,
    /// Matches objects whose labels satisfy every requirement.
    Match(Selector),
}

/// Why a label selector is invalid.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SelectorError {
    #[error("invalid label key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },
    #[error("invalid label value {value:?} for key {key:?}: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: &'static str,
    },
    #[error("operator {operator:?} on key {key:?}: {reason}")]
    InvalidRequirement {
        key: String,
        operator: String,
        reason: &'static str,
    },
}

impl LabelMatcher {
    /// Converts a (possibly missing) `LabelSelector`.
    pub fn from_selector(selector: Option<&LabelSelector>) -> Result<Self, SelectorError> {
        let Some(selector) = selector else {
            return Ok(LabelMatcher::Nothing);
        };
        let labels = selector.match_labels.iter().flatten();
        let requirements = selector.match_expressions.iter().flatten();
        let mut exprs = Vec::new();
        for (k, v) in labels {
            validate_key(k)?;
            validate_value(k, v)?;
            exprs.push(Expression::Equal(k.clone(), v.clone()));
        }
        for r in requirements {
            exprs.push(requirement(r)?);
        }
        if exprs.is_empty() {
            return Ok(LabelMatcher::Everything);
        }
        Ok(LabelMatcher::Match(exprs.into_iter().collect()))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            LabelMatcher::Nothing => false,
            LabelMatcher::Everything => true,
            LabelMatcher::Match(s) => s.matches(labels),
        }
    }

    /// Matches an object's labels, treating missing labels as empty.
    pub fn matches_labels(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.matches(labels.unwrap_or(&EMPTY))
    }
}

fn requirement(r: &LabelSelectorRequirement) -> Result<Expression, SelectorError> {
    validate_key(&r.key)?;
    let values: Vec<String> = r.values.clone().unwrap_or_default();
    let bad = |reason| SelectorError::InvalidRequirement {
        key: r.key.clone(),
        operator: r.operator.clone(),
        reason,
    };
    for v in &values {
        validate_value(&r.key, v)?;
    }
    match r.operator.as_str() {
        "In" | "NotIn" if values.is_empty() => {
            Err(bad("for 'in', 'notin' operators, values set can't be empty"))
        }
        "In" => Ok(Expression::In(r.key.clone(), values.into_iter().collect())),
        "NotIn" => Ok(Expression::NotIn(r.key.clone(), values.into_iter().collect())),
        "Exists" | "DoesNotExist" if !values.is_empty() => {
            Err(bad("values set must be empty for exists and does not exist"))
        }
        "Exists" => Ok(Expression::Exists(r.key.clone())),
        "DoesNotExist" => Ok(Expression::DoesNotExist(r.key.clone())),
        _ => Err(bad("is not a valid label selector operator")),
    }
}

/// Label keys: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters.
fn validate_key(key: &str) -> Result<(), SelectorError> {
    let bad = |reason| {
        Err(SelectorError::InvalidKey {
            key: key.to_owned(),
            reason,
        })
    };
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if p.is_empty() || p.len() > 253 {
            return bad("prefix must be a DNS subdomain of at most 253 characters");
        }
        let ok = p.split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
        if !ok {
            return bad("prefix must be a lowercase DNS subdomain");
        }
    }
    if name.is_empty() || name.len() > 63 || !is_label_name(name) {
        return bad(
            "name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric",
        );
    }
    Ok(())
}

fn validate_value(key: &str, value: &str) -> Result<(), SelectorError> {
    if value.is_empty() || (value.len() <= 63 && is_label_name(value)) {
        return Ok(());
    }
    Err(SelectorError::InvalidValue {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: "must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric",
    })
}

fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn req(key: &str, op: &str, values: Option<&[&str]>) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: values.map(|v| v.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    #[test]
    fn missing_selects_nothing_and_empty_selects_everything() {
        assert_eq!(LabelMatcher::from_selector(None), Ok(LabelMatcher::Nothing));
        let empty = LabelMatcher::from_selector(Some(&LabelSelector::default())).unwrap();
        assert_eq!(empty, LabelMatcher::Everything);
        assert!(empty.matches(&labels(&[])));
        assert!(!LabelMatcher::Nothing.matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_and_expressions_are_anded() {
        let s = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![
                req("tier", "In", Some(&["a", "b"])),
                req("canary", "DoesNotExist", None),
            ]),
        };
        let m = LabelMatcher::from_selector(Some(&s)).unwrap();
        assert!(m.matches(&labels(&[("app", "web"), ("tier", "a")])));
        assert!(!m.matches(&labels(&[("app", "web"), ("tier", "c")])));
        assert!(!m.matches(&labels(&[("app", "web"), ("tier", "a"), ("canary", "1")])));
    }

    #[test]
    fn invalid_selectors_are_rejected_like_upstream() {
        let bad = |r| {
            LabelMatcher::from_selector(Some(&LabelSelector {
                match_expressions: Some(vec![r]),
                ..Default::default()
            }))
        };
        assert!(bad(req("a", "In", Some(&[]))).is_err(), "In with no values");
        assert!(
            bad(req("a", "Exists", Some(&["x"]))).is_err(),
            "Exists with values"
        );
        assert!(bad(req("a", "Like", Some(&["x"]))).is_err(), "unknown operator");
        assert!(bad(req("-a", "Exists", None)).is_err(), "key starts with '-'");
        assert!(
            bad(req("Example.com/a", "Exists", None)).is_err(),
            "uppercase prefix"
        );
        assert!(bad(req("example.com/a", "Exists", None)).is_ok());
        let long = "x".repeat(64);
        let s = LabelSelector {
            match_labels: Some(labels(&[("a", &long)])),
            ..Default::default()
        };
        assert!(matches!(
            LabelMatcher::from_selector(Some(&s)),
            Err(SelectorError::InvalidValue { .. })
        ));
    }
}

//! The Deployment's spec as the controller reads it, with the API's defaults filled in and the rolling
//! update's fenceposts resolved (upstream `deployment_util.go`: `MaxSurge`, `MaxUnavailable`,
//! `ResolveFenceposts`, `HasProgressDeadline`, `HasRevisionHistoryLimit`).
//!
//! Objects read from the API server always carry the defaults; they are repeated here so that a plan
//! over a hand-built object (tests, benchmarks) means what the same object would mean on a cluster.

use k8s_openapi::{
    api::apps::v1::Deployment, apimachinery::pkg::apis::meta::v1::LabelSelector,
    apimachinery::pkg::util::intstr::IntOrString,
};

/// `spec.replicas` when unset (apps/v1 defaulting, `SetDefaults_Deployment`).
pub const DEFAULT_REPLICAS: i32 = 1;
/// `maxSurge` and `maxUnavailable` when unset (apps/v1 defaulting, `SetDefaults_Deployment`).
pub const DEFAULT_MAX_SURGE: &str = "25%";
pub const DEFAULT_MAX_UNAVAILABLE: &str = "25%";
/// The strategy types of apps/v1 (`DeploymentStrategyType`); unset means RollingUpdate (defaulting).
pub const ROLLING_UPDATE: &str = "RollingUpdate";
pub const RECREATE: &str = "Recreate";
/// A progressDeadlineSeconds or revisionHistoryLimit of MaxInt32 means "none" (upstream
/// `HasProgressDeadline`, `HasRevisionHistoryLimit`).
pub const UNLIMITED: i32 = i32::MAX;

/// How the Deployment replaces pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    Recreate,
    RollingUpdate {
        max_surge: IntOrString,
        max_unavailable: IntOrString,
    },
    /// A type this controller does not know: reported, never guessed at.
    Unknown(String),
}

/// A maxSurge or maxUnavailable that is neither an integer nor a percentage. API validation rejects
/// these, so the controller only meets them in hand-built objects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value for IntOrString: {0:?} is not an integer or a percentage")]
pub struct InvalidIntOrPercent(pub String);

pub fn replicas(d: &Deployment) -> i32 {
    d.spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(DEFAULT_REPLICAS)
}
pub fn paused(d: &Deployment) -> bool {
    d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false)
}

pub fn generation(d: &Deployment) -> i64 {
    d.metadata.generation.unwrap_or(0)
}

pub fn selector(d: &Deployment) -> Option<&LabelSelector> {
    d.spec.as_ref().map(|s| &s.selector)
}

/// An empty selector selects every pod of the namespace: upstream refuses to manage such a
/// Deployment (kubernetes/kubernetes#23218).
pub fn selects_everything(d: &Deployment) -> bool {
    selector(d).is_some_and(|s| {
        s.match_labels.as_ref().is_none_or(|m| m.is_empty())
            && s.match_expressions.as_ref().is_none_or(|e| e.is_empty())
    })
}

pub fn strategy(d: &Deployment) -> Strategy {
    let s = d.spec.as_ref().and_then(|s| s.strategy.as_ref());
    match s.and_then(|s| s.type_.as_deref()).unwrap_or(ROLLING_UPDATE) {
        ROLLING_UPDATE => {
            let ru = s.and_then(|s| s.rolling_update.as_ref());
            let pick = |v: Option<&IntOrString>, default: &str| {
                v.cloned()
                    .unwrap_or_else(|| IntOrString::String(default.to_owned()))
            };
            Strategy::RollingUpdate {
                max_surge: pick(ru.and_then(|r| r.max_surge.as_ref()), DEFAULT_MAX_SURGE),
                max_unavailable: pick(
                    ru.and_then(|r| r.max_unavailable.as_ref()),
                    DEFAULT_MAX_UNAVAILABLE,
                ),
            }
        }
        RECREATE => Strategy::Recreate,
        other => Strategy::Unknown(other.to_owned()),
    }
}

pub fn is_rolling_update(d: &Deployment) -> bool {
    matches!(strategy(d), Strategy::RollingUpdate { .. })
}

/// An integer as is, or a percentage of `total` rounded up or down (apimachinery
/// `GetScaledValueFromIntOrPercent`: the percentage parsed as a Go `int`, the product in floating
/// point, the result a Go `int`, which callers then truncate to int32 as upstream does).
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Result<i64, InvalidIntOrPercent> {
    match v {
        IntOrString::Int(i) => Ok(i64::from(*i)),
        IntOrString::String(s) => {
            let percent: i64 = s
                .strip_suffix('%')
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| InvalidIntOrPercent(s.clone()))?;
            #[allow(clippy::cast_precision_loss)]
            let exact = percent as f64 * f64::from(total) / 100.0;
            Ok(go_int(if round_up { exact.ceil() } else { exact.floor() }))
        }
    }
}

/// Go's conversion of a float64 to a 64-bit int as kube-controller-manager's amd64 build does it:
/// truncation, and for a value out of range the hardware's "integer indefinite", the minimum int64
/// (Go leaves the out-of-range case to the implementation; only percentages of absurd size reach
/// it, as maxSurge's has no upper bound in validation).
fn go_int(f: f64) -> i64 {
    /// 2^63, the first float64 above int64's range.
    const INT64_LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-INT64_LIMIT..INT64_LIMIT).contains(&f) {
        return i64::MIN;
    }
    #[allow(clippy::cast_possible_truncation)]
    let i = f as i64;
    i
}

/// maxSurge and maxUnavailable for `desired` replicas: surge rounds up, unavailability down, and if
/// both come out 0 unavailability becomes 1, since a surge may be impossible (quota) and the rollout
/// must still be able to move (upstream `ResolveFenceposts`: the zero test on the full values, the
/// results then truncated to int32).
pub fn resolve_fenceposts(
    max_surge: &IntOrString,
    max_unavailable: &IntOrString,
    desired: i32,
) -> Result<(i32, i32), InvalidIntOrPercent> {
    let surge = scaled_value(max_surge, desired, true)?;
    let mut unavailable = scaled_value(max_unavailable, desired, false)?;
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    #[allow(clippy::cast_possible_truncation)]
    Ok((surge as i32, unavailable as i32))
}

/// Pods above spec.replicas a rolling update may run; 0 for other strategies and for values
/// validation would have refused (upstream ignores the error the same way).
pub fn max_surge(d: &Deployment) -> i32 {
    match strategy(d) {
        Strategy::RollingUpdate {
            max_surge,
            max_unavailable,
        } => resolve_fenceposts(&max_surge, &max_unavailable, replicas(d)).map_or(0, |(s, _)| s),
        _ => 0,
    }
}

/// Pods below spec.replicas a rolling update may leave unavailable, at most spec.replicas; 0 for
/// other strategies and for 0 replicas.
pub fn max_unavailable(d: &Deployment) -> i32 {
    let r = replicas(d);
    match strategy(d) {
        Strategy::RollingUpdate {
            max_surge,
            max_unavailable,
        } if r != 0 => resolve_fenceposts(&max_surge, &max_unavailable, r).map_or(0, |(_, u)| u.min(r)),
        _ => 0,
    }
}

/// The progress deadline in seconds, unless there is none.
pub fn progress_deadline(d: &Deployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .filter(|s| *s != UNLIMITED)
}

/// Old ReplicaSets to keep, unless all are kept.
pub fn revision_history_limit(d: &Deployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|s| s.revision_history_limit)
        .filter(|l| *l != UNLIMITED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{deployment, int, pct};

    #[test]
    fn fenceposts_round_surge_up_and_unavailability_down() {
        // Cases of upstream's TestResolveFenceposts.
        let cases = [
            (int(0), int(0), 0, Ok((0, 1))),
            (pct("39%"), pct("39%"), 10, Ok((4, 3))),
            (pct("0%"), pct("0%"), 10, Ok((0, 1))),
            (pct("1%"), pct("1%"), 10, Ok((1, 0))),
            (pct("25%"), pct("25%"), 10, Ok((3, 2))),
            (
                pct("oops"),
                pct("25%"),
                10,
                Err(InvalidIntOrPercent("oops".into())),
            ),
            (pct("55%"), pct("urg"), 10, Err(InvalidIntOrPercent("urg".into()))),
            (int(5), pct("10%"), 10, Ok((5, 1))),
        ];
        for (surge, unavailable, desired, want) in cases {
            assert_eq!(
                resolve_fenceposts(&surge, &unavailable, desired),
                want,
                "{surge:?} {unavailable:?} {desired}"
            );
        }
    }

    #[test]
    fn max_unavailable_is_capped_and_zero_outside_rolling_updates() {
        // Cases of upstream's TestMaxUnavailable.
        let d =
            |replicas, surge, unavailable| deployment("foo", replicas).rolling(surge, unavailable).build();
        assert_eq!(
            max_unavailable(&d(10, int(0), int(0))),
            1,
            "both 0: one may be unavailable"
        );
        assert_eq!(max_unavailable(&d(10, int(1), int(5))), 5);
        assert_eq!(max_unavailable(&d(10, int(0), int(25))), 10, "capped at replicas");
        assert_eq!(max_unavailable(&d(10, int(0), pct("50%"))), 5);
        assert_eq!(max_unavailable(&d(0, int(0), pct("50%"))), 0, "0 replicas");
        assert_eq!(max_unavailable(&deployment("foo", 10).recreate().build()), 0);
        assert_eq!(max_surge(&deployment("foo", 10).recreate().build()), 0);
        assert_eq!(max_surge(&d(10, pct("25%"), pct("25%"))), 3);
    }

    #[test]
    fn unset_fields_take_the_api_defaults() {
        let mut d = deployment("foo", 4).build();
        d.spec.as_mut().unwrap().strategy = None;
        d.spec.as_mut().unwrap().replicas = None;
        assert_eq!(replicas(&d), DEFAULT_REPLICAS);
        assert!(is_rolling_update(&d));
        d.spec.as_mut().unwrap().replicas = Some(4);
        assert_eq!((max_surge(&d), max_unavailable(&d)), (1, 1), "25% of 4 each way");
        d.spec.as_mut().unwrap().progress_deadline_seconds = Some(UNLIMITED);
        assert_eq!(progress_deadline(&d), None);
        d.spec.as_mut().unwrap().strategy = Some(k8s_openapi::api::apps::v1::DeploymentStrategy {
            type_: Some("BlueGreen".into()),
            rolling_update: None,
        });
        assert_eq!(strategy(&d), Strategy::Unknown("BlueGreen".into()));
    }
}

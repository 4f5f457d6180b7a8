//! Delegated authorization, as kube-controller-manager's `DelegatingAuthorizationOptions`
//! configure it: members of the always-allowed groups (`system:masters`) and requests for an
//! always-allowed path (`--authorization-always-allow-paths`) pass without asking; anything else is
//! a SubjectAccessReview for the non-resource URL and the lower-cased HTTP method (`get /metrics`),
//! its answer cached for `--authorization-webhook-cache-authorized-ttl` or `-unauthorized-ttl`.
//!
//! A review that fails (the API server unreachable, or no answer within [`ACCESS_REVIEWS_TIMEOUT`])
//! is not cached and answers 500, as upstream's authorization filter does; the controllers never
//! wait on it.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use futures::future::BoxFuture;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::{Api, api::PostParams};

use crate::{authn::UserInfo, ttl_cache::TtlCache};

/// Groups that skip authorization (k8s.io/apiserver `NewDelegatingAuthorizationOptions`): the API
/// server would allow `system:masters` anything anyway.
pub const ALWAYS_ALLOW_GROUPS: &[&str] = &["system:masters"];

/// How long one SubjectAccessReview request may take (k8s.io/apiserver
/// `DelegatingAuthorizationOptions`: `ClientTimeout`, 10 s): a bound for the reviewer's client to
/// set on each attempt, as upstream's client does.
pub const ACCESS_REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one authorization may wait for its reviewer in all: upstream's worst case of retried
/// attempts (five of [`ACCESS_REVIEW_TIMEOUT`], with 4.1 s of backoff between them, jitter
/// included), so that a reviewer setting no bound of its own cannot hold a request for ever.
pub const ACCESS_REVIEWS_TIMEOUT: Duration = Duration::from_secs(5 * 10 + 5);

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused (403); `reason` is the review's, appended to the message when not empty.
    Deny {
        reason: String,
    },
}

/// A SubjectAccessReview's answer: allowed, and the reason given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessReview {
    pub allowed: bool,
    pub reason: String,
}

/// Sends SubjectAccessReviews; a trait so that tests count and script them.
pub trait AccessReviewer: Send + Sync {
    fn review<'a>(
        &'a self,
        user: &'a UserInfo,
        verb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<AccessReview, String>>;
}

impl AccessReviewer for kube::Client {
    fn review<'a>(
        &'a self,
        user: &'a UserInfo,
        verb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<AccessReview, String>> {
        Box::pin(async move {
            let sar = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    user: Some(user.name.clone()),
                    uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                    groups: Some(user.groups.clone()),
                    extra: (!user.extra.is_empty()).then(|| user.extra.clone().into_iter().collect()),
                    non_resource_attributes: Some(NonResourceAttributes {
                        path: Some(path.to_owned()),
                        verb: Some(verb.to_owned()),
                    }),
                    resource_attributes: None,
                },
                ..SubjectAccessReview::default()
            };
            let api: Api<SubjectAccessReview> = Api::all(self.clone());
            let out = api
                .create(&PostParams::default(), &sar)
                .await
                .map_err(|e| e.to_string())?;
            let status = out.status.unwrap_or_default();
            Ok(AccessReview {
                allowed: status.allowed,
                reason: status.reason.unwrap_or_default(),
            })
        })
    }
}

/// The cache key: everything the review is asked about.
type Key = (
    String,
    String,
    Vec<String>,
    BTreeMap<String, Vec<String>>,
    String,
    String,
);

pub struct Authorizer {
    always_allow_paths: Vec<String>,
    always_allow_groups: Vec<String>,
    /// `None` without a client: then only the always-allowed paths and groups pass.
    reviewer: Option<Arc<dyn AccessReviewer>>,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    cache: TtlCache<Key, AccessReview>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("always_allow_paths", &self.always_allow_paths)
            .field("always_allow_groups", &self.always_allow_groups)
            .field("allowed_ttl", &self.allowed_ttl)
            .field("denied_ttl", &self.denied_ttl)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    pub fn new(
        always_allow_paths: Vec<String>,
        reviewer: Option<Arc<dyn AccessReviewer>>,
        allowed_ttl: Duration,
        denied_ttl: Duration,
    ) -> Self {
        Authorizer {
            always_allow_paths,
            always_allow_groups: ALWAYS_ALLOW_GROUPS.iter().map(|g| (*g).to_owned()).collect(),
            reviewer,
            allowed_ttl,
            denied_ttl,
            cache: TtlCache::default(),
        }
    }

    /// Checks `--authorization-always-allow-paths` as the API server's path authorizer does: a `*`
    /// may only end an entry.
    pub fn validate_always_allow_paths(paths: &[String]) -> Result<(), String> {
        match paths.iter().find(|p| p.trim_end_matches('*').contains('*')) {
            Some(p) => Err(format!("only trailing * allowed in {p:?}")),
            None => Ok(()),
        }
    }

    /// May `user` do `verb` on the non-resource URL `path`? An error when the review could not be
    /// made (500).
    pub async fn authorize(&self, user: &UserInfo, verb: &str, path: &str) -> Result<Decision, String> {
        if user.groups.iter().any(|g| self.always_allow_groups.contains(g)) || self.path_always_allowed(path)
        {
            return Ok(Decision::Allow);
        }
        let Some(reviewer) = &self.reviewer else {
            return Ok(Decision::Deny {
                reason: String::new(),
            });
        };
        let key = (
            user.name.clone(),
            user.uid.clone(),
            user.groups.clone(),
            user.extra.clone(),
            verb.to_owned(),
            path.to_owned(),
        );
        let review = match self.cache.get(&key) {
            Some(r) => r,
            None => {
                let r = tokio::time::timeout(ACCESS_REVIEWS_TIMEOUT, reviewer.review(user, verb, path))
                    .await
                    .unwrap_or_else(|_| Err(format!("no answer within {ACCESS_REVIEWS_TIMEOUT:?}")))?;
                let ttl = if r.allowed {
                    self.allowed_ttl
                } else {
                    self.denied_ttl
                };
                self.cache.insert(key, r.clone(), ttl);
                r
            }
        };
        Ok(if review.allowed {
            Decision::Allow
        } else {
            Decision::Deny {
                reason: review.reason,
            }
        })
    }

    /// The API server's path authorizer: an entry matches its path exactly, or every path it
    /// prefixes when it ends in `*`; leading slashes do not matter.
    fn path_always_allowed(&self, path: &str) -> bool {
        let path = path.strip_prefix('/').unwrap_or(path);
        self.always_allow_paths.iter().any(|p| {
            let p = p.strip_prefix('/').unwrap_or(p);
            match p.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => path == p,
            }
        })
    }
}

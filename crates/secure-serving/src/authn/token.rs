//! Bearer tokens, checked with a TokenReview against the API server and cached.
//!
//! As the API server's delegating authenticator: a token the review accepts is cached for
//! `--authentication-token-webhook-cache-ttl`, one it rejects without an error as long; a review
//! that errs (the API server unreachable, or a rejection that carries an error) is not cached, so
//! the next request asks again, and so is one with no answer within [`TOKEN_REVIEW_TIMEOUT`], so
//! that an API server that hangs cannot hold a scrape for ever. Tokens are cached under their
//! SHA-256, never in the clear.

use std::{sync::Arc, time::Duration};

use futures::future::BoxFuture;
use http::{HeaderMap, header::AUTHORIZATION};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::{Api, api::PostParams};

use super::{AuthnError, UserInfo};
use crate::ttl_cache::TtlCache;

/// The bearer token of a request, as the API server's `bearertoken` authenticator reads it: the
/// `Authorization` header's second word when the first is `Bearer` (any case). Anything else is
/// not a token, and the request falls through to the next authenticator.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// How long a TokenReview may take (k8s.io/apiserver `DelegatingAuthenticationOptions`:
/// `TokenRequestTimeout`, 10 s).
pub const TOKEN_REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// What a TokenReview said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Review {
    Authenticated(UserInfo),
    /// Not authenticated; `error` is the review's `status.error`, if any.
    Rejected {
        error: Option<String>,
    },
}

/// Sends TokenReviews; a trait so that tests count and script them.
pub trait TokenReviewer: Send + Sync {
    fn review<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Review, String>>;
}

impl TokenReviewer for kube::Client {
    fn review<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Review, String>> {
        Box::pin(async move {
            let review = TokenReview {
                spec: TokenReviewSpec {
                    token: token.to_owned(),
                    audiences: None,
                },
                ..TokenReview::default()
            };
            let api: Api<TokenReview> = Api::all(self.clone());
            let out = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| e.to_string())?;
            let status = out.status.unwrap_or_default();
            if status.authenticated != Some(true) {
                return Ok(Review::Rejected {
                    error: status.error.filter(|e| !e.is_empty()),
                });
            }
            let u = status.user.unwrap_or_default();
            Ok(Review::Authenticated(UserInfo {
                name: u.username.unwrap_or_default(),
                uid: u.uid.unwrap_or_default(),
                groups: u.groups.unwrap_or_default(),
                extra: u.extra.unwrap_or_default().into_iter().collect(),
            }))
        })
    }
}

/// Bearer-token authentication through cached TokenReviews.
pub struct TokenAuthenticator {
    reviewer: Arc<dyn TokenReviewer>,
    ttl: Duration,
    /// Keyed by the token's SHA-256.
    cache: TtlCache<[u8; 32], Review>,
}

impl std::fmt::Debug for TokenAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenAuthenticator")
            .field("ttl", &self.ttl)
            .field("cached", &self.cache.len())
            .finish_non_exhaustive()
    }
}

impl TokenAuthenticator {
    pub fn new(reviewer: Arc<dyn TokenReviewer>, ttl: Duration) -> Self {
        TokenAuthenticator {
            reviewer,
            ttl,
            cache: TtlCache::default(),
        }
    }

    /// The user `token` belongs to; an error (401) when it is not a valid token.
    pub async fn authenticate(&self, token: &str) -> Result<UserInfo, AuthnError> {
        let key: [u8; 32] = ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
            .as_ref()
            .try_into()
            .unwrap_or([0; 32]);
        let review = match self.cache.get(&key) {
            Some(r) => r,
            None => {
                let r = tokio::time::timeout(TOKEN_REVIEW_TIMEOUT, self.reviewer.review(token))
                    .await
                    .unwrap_or_else(|_| Err(format!("no answer within {TOKEN_REVIEW_TIMEOUT:?}")))
                    .map_err(AuthnError::TokenReview)?;
                if !matches!(r, Review::Rejected { error: Some(_) }) {
                    self.cache.insert(key, r.clone(), self.ttl);
                }
                r
            }
        };
        match review {
            Review::Authenticated(user) => Ok(user),
            Review::Rejected { error: Some(e) } => Err(AuthnError::TokenRejected(e)),
            Review::Rejected { error: None } => Err(AuthnError::InvalidToken),
        }
    }
}

//! Delegated authentication, as kube-controller-manager's `DelegatingAuthenticationOptions`
//! configure it: client certificates, then bearer tokens (TokenReview), and anonymous for a
//! request that presents neither.
//!
//! The order and the failure rule are the API server's union authenticator: the first method that
//! vouches for the request wins; if none does and one of them failed (an expired certificate, a
//! token the review rejects), the request is refused with 401 even on an always-allowed path; a
//! request with no credentials at all is `system:anonymous` and left to the authorizer.
//! Front-proxy (request-header) authentication is not implemented: the `--requestheader-*` flags
//! do not exist here.

mod client_ca_source;
mod client_cert;
mod token;
mod user;

use std::sync::Arc;

use http::HeaderMap;
use rustls::pki_types::UnixTime;

pub use client_ca_source::{
    AUTHENTICATION_CONFIGMAP_NAME, AUTHENTICATION_CONFIGMAP_NAMESPACE, CLIENT_CA_KEY, CONFIGMAP_REFRESH,
    ClientCaSource, DynamicClientCa,
};
pub use client_cert::{ClientCa, PeerCertificates};
pub use token::{Review, TOKEN_REVIEW_TIMEOUT, TokenAuthenticator, TokenReviewer, bearer_token};
pub use user::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, UserInfo};

/// Why a request's credentials were refused (401). The message is logged, never sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthnError {
    #[error("invalid bearer token")]
    InvalidToken,
    #[error("invalid bearer token: {0}")]
    TokenRejected(String),
    #[error("token review failed: {0}")]
    TokenReview(String),
    #[error("{0}")]
    Certificate(String),
}

#[derive(Debug, Default)]
pub struct Authenticator {
    /// `None` when no client CA is configured: client certificates are then not looked at.
    pub client_ca: Option<Arc<DynamicClientCa>>,
    /// `None` without a client to review tokens with: tokens then count as no credentials.
    pub tokens: Option<TokenAuthenticator>,
}

impl Authenticator {
    /// Who sent a request with these headers over a connection with these client certificates.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<&PeerCertificates>,
        now: UnixTime,
    ) -> Result<UserInfo, AuthnError> {
        let mut failure = None;
        if let (Some(ca), Some(peer)) = (self.client_ca.as_ref().and_then(|c| c.current()), peer)
            && !peer.0.is_empty()
        {
            match ca.verify(&peer.0, now) {
                Ok(user) => return Ok(user.with_authenticated_group()),
                Err(e) => failure = Some(e),
            }
        }
        if let (Some(tokens), Some(token)) = (&self.tokens, bearer_token(headers)) {
            match tokens.authenticate(token).await {
                Ok(user) => return Ok(user.with_authenticated_group()),
                Err(e) => failure = Some(e),
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(UserInfo::anonymous()),
        }
    }
}

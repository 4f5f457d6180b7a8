//! kube-controller-manager's secure serving, for kcm-rs's `/healthz`, `/metrics` and
//! `/debug/shadow`: HTTPS on `--secure-port`, delegated authentication and authorization against
//! the API server, with KCM's flags, defaults and answers.
//!
//! Why hand-written: k8s.io/apiserver's delegating authenticator and authorizer have no Rust
//! counterpart; rustls, tokio-rustls, hyper, axum and rcgen do the TLS, HTTP and certificates, and
//! what is left here is upstream's policy: which credentials count, in what order, what is cached
//! for how long, and what a refusal looks like.
//!
//! Behaviours, each with the test that covers it (unit tests here; end to end against upstream
//! KCM on the local control plane in `e2e/tests/secure_serving.rs`):
//! - HTTPS only; a self-signed certificate for localhost/127.0.0.1 when no `--tls-cert-file` is
//!   given, in memory or reused from `--cert-dir` (`serving_cert::tests`; e2e
//!   `a_given_certificate_and_the_min_version_are_served`).
//! - A plain-HTTP request to the port gets Go's `400 Client sent an HTTP request to an HTTPS
//!   server` (e2e `disruptive_serves_like_upstream_kcm_and_keeps_reconciling`, which sends every
//!   case here to upstream KCM and to kcm-rs and compares codes and bodies).
//! - `--tls-min-version` and `--tls-cipher-suites` take Go's names (`cipher_suites::tests`; e2e:
//!   `VersionTLS13` refuses a TLS 1.2 client).
//! - No credentials: `system:anonymous`, so always-allowed paths answer and `/metrics` is 403
//!   (upstream's answer, kept over the 401 first specified). A bad token or an untrusted or expired
//!   client certificate: 401, even on `/healthz` (`tests::refusals`, e2e).
//! - A request over HTTP/2 that could not be authenticated gets its 401, then its connection is
//!   closed with a GOAWAY (k8s.io/apiserver's `UnauthenticatedHTTP2DOSMitigation`, on by default):
//!   a client without credentials cannot keep one connection open for many cheap requests
//!   (`tests::an_unauthenticated_http2_request_closes_its_connection`; e2e: curl's second request
//!   opens a new connection, against upstream KCM).
//! - Tokens: TokenReview, cached for the TTL, errors not cached (`tests::token_reviews_are_cached`).
//! - Client certificates: checked per request against `--client-ca-file` or the
//!   `extension-apiserver-authentication` ConfigMap; CN is the user, O the groups (`tests`, e2e).
//! - Authorization: `system:masters` and always-allowed paths skip the review; otherwise a
//!   SubjectAccessReview for the path and lower-cased method, cached per answer
//!   (`tests::access_reviews_are_cached_per_answer`, e2e 403/200 by ClusterRole).

mod accept;
pub mod authn;
pub mod authz;
mod cipher_suites;
mod error;
mod filter;
mod handshake;
mod http_error;
mod server;
mod serving_cert;
mod ttl_cache;

#[cfg(test)]
mod tests;

pub use accept::{HANDSHAKE_TIMEOUT, PLAIN_HTTP_RESPONSE, SHUTDOWN_GRACE};
pub use cipher_suites::GO_SUITES_NOT_IN_RUSTLS;
pub use error::ServingError;
pub use filter::failure_status;
pub use http_error::{TEXT_PLAIN_UTF8, http_error, not_found};
pub use server::{
    ALPN, Config, DEFAULT_ALWAYS_ALLOW_PATHS, DEFAULT_AUTHORIZED_TTL, DEFAULT_TOKEN_CACHE_TTL,
    DEFAULT_UNAUTHORIZED_TTL, SecureServer,
};
pub use serving_cert::{PAIR_NAME, SELF_SIGNED_VALIDITY_DAYS, generate as generate_self_signed};

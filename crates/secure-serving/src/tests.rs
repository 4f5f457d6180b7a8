//! The filter's answers, through the router, with scripted reviews (TLS itself is covered end to
//! end against upstream KCM in `e2e/tests/secure_serving.rs`).

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{Router, body::Body, routing::get};
use futures::future::BoxFuture;
use http::{Request, StatusCode, Version};
use http_body_util::BodyExt as _;
use rcgen::{CertificateParams, DnType, Issuer, KeyPair};
use rustls::pki_types::CertificateDer;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use crate::{
    accept::CloseConnection,
    authn::{
        Authenticator, ClientCa, DynamicClientCa, PeerCertificates, Review, TokenAuthenticator,
        TokenReviewer, UserInfo,
    },
    authz::{AccessReview, AccessReviewer, Authorizer},
    filter::{Guard, filter},
};

/// Tokens: "good-<user>" authenticates <user>; "broken" fails the review; "hang" never gets an
/// answer; anything else is rejected.
#[derive(Default)]
struct Tokens {
    calls: AtomicUsize,
}

impl TokenReviewer for Tokens {
    fn review<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Review, String>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            match token.strip_prefix("good-") {
                Some(user) => Ok(Review::Authenticated(UserInfo {
                    name: user.to_owned(),
                    groups: vec!["readers".into()],
                    ..UserInfo::default()
                })),
                None if token == "broken" => Err("connection refused".into()),
                None if token == "hang" => std::future::pending().await,
                None => Ok(Review::Rejected { error: None }),
            }
        })
    }
}

/// Access: "alice" may get /metrics; "flaky" makes the review fail; "stuck" gets no answer.
#[derive(Default)]
struct Access {
    calls: AtomicUsize,
}

impl AccessReviewer for Access {
    fn review<'a>(
        &'a self,
        user: &'a UserInfo,
        verb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<AccessReview, String>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if user.name == "flaky" {
                return Err("the server is currently unable to handle the request".into());
            }
            if user.name == "stuck" {
                std::future::pending::<()>().await;
            }
            Ok(AccessReview {
                allowed: user.name == "alice" && verb == "get" && path == "/metrics",
                reason: String::new(),
            })
        })
    }
}

struct Fixture {
    app: Router,
    tokens: Arc<Tokens>,
    access: Arc<Access>,
    ca_key: KeyPair,
    ca_params: CertificateParams,
}

fn ca() -> (CertificateParams, KeyPair, String) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, "test-ca");
    let key = KeyPair::generate().unwrap();
    let pem = params.self_signed(&key).unwrap().pem();
    (params, key, pem)
}

fn fixture() -> Fixture {
    let (ca_params, ca_key, ca_pem) = ca();
    let client_ca = Arc::new(DynamicClientCa::default());
    client_ca.set(Some(ClientCa::from_pem(ca_pem.as_bytes()).unwrap()));
    let tokens = Arc::new(Tokens::default());
    let access = Arc::new(Access::default());
    let guard = Guard {
        authenticator: Authenticator {
            client_ca: Some(client_ca),
            tokens: Some(TokenAuthenticator::new(tokens.clone(), Duration::from_secs(10))),
        },
        authorizer: Authorizer::new(
            vec!["/healthz".into(), "/readyz".into(), "/livez".into()],
            Some(access.clone()),
            Duration::from_secs(10),
            Duration::from_secs(10),
        ),
        close_unauthenticated_http2: true,
    };
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(|| async { "# metrics" }))
        .layer(axum::middleware::from_fn_with_state(Arc::new(guard), filter));
    Fixture {
        app,
        tokens,
        access,
        ca_key,
        ca_params,
    }
}

impl Fixture {
    /// A client certificate signed by the fixture's CA, valid from `from` to `to` (years).
    fn cert(&self, cn: &str, orgs: &[&str], years: (i32, i32)) -> CertificateDer<'static> {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        for o in orgs {
            p.distinguished_name.push(DnType::OrganizationName, *o);
        }
        p.not_before = rcgen::date_time_ymd(years.0, 1, 1);
        p.not_after = rcgen::date_time_ymd(years.1, 1, 1);
        let issuer = Issuer::from_params(&self.ca_params, &self.ca_key);
        let key = KeyPair::generate().unwrap();
        p.signed_by(&key, &issuer).unwrap().der().clone()
    }

    async fn get(
        &self,
        path: &str,
        token: Option<&str>,
        cert: Option<CertificateDer<'static>>,
    ) -> (StatusCode, String) {
        let mut req = Request::get(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let mut req = req.body(Body::empty()).unwrap();
        if let Some(c) = cert {
            req.extensions_mut().insert(PeerCertificates(Arc::new(vec![c])));
        }
        let resp = self.app.clone().oneshot(req).await.unwrap();
        assert_eq!(
            resp.headers()
                .get(http::header::CACHE_CONTROL)
                .map(|v| v.as_bytes()),
            Some(&b"no-cache, private"[..]),
            "every answer, refusals included, forbids caching: {path}"
        );
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}

/// An HTTP/2 request that could not be authenticated asks for its connection to be closed; one
/// over HTTP/1.1, or one that authenticated, does not.
#[tokio::test]
async fn an_unauthenticated_http2_request_closes_its_connection() {
    let f = fixture();
    for (version, token, closes) in [
        (Version::HTTP_2, "garbage", true),
        (Version::HTTP_11, "garbage", false),
        (Version::HTTP_2, "good-alice", false),
    ] {
        let close = CancellationToken::new();
        let mut req = Request::get("/healthz")
            .version(version)
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        req.extensions_mut().insert(CloseConnection(close.clone()));
        f.app.clone().oneshot(req).await.unwrap();
        assert_eq!(close.is_cancelled(), closes, "{version:?}, token {token}");
    }
}

#[tokio::test]
async fn refusals() {
    let f = fixture();
    assert_eq!(f.get("/healthz", None, None).await, (StatusCode::OK, "ok".into()));
    let (code, body) = f.get("/metrics", None, None).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/metrics""#
    );
    assert_eq!(
        (status["reason"].as_str(), status["code"].as_u64()),
        (Some("Forbidden"), Some(403))
    );

    // A bad credential is refused before the path is looked at.
    let (code, body) = f.get("/healthz", Some("garbage"), None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body.trim(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#
    );
    let expired = f.cert("alice", &[], (2000, 2001));
    assert_eq!(
        f.get("/healthz", None, Some(expired)).await.0,
        StatusCode::UNAUTHORIZED
    );
    let (_, foreign_key, _) = ca();
    let foreign = {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, "alice");
        p.self_signed(&foreign_key).unwrap().der().clone()
    };
    assert_eq!(
        f.get("/metrics", None, Some(foreign)).await.0,
        StatusCode::UNAUTHORIZED
    );

    // A trusted certificate: CN is the user, O the groups; system:masters skips the review.
    let alice = f.cert("alice", &["dev"], (2020, 2099));
    assert_eq!(f.get("/metrics", None, Some(alice)).await.0, StatusCode::OK);
    let reviews = f.access.calls.load(Ordering::SeqCst);
    let admin = f.cert("root", &["system:masters"], (2020, 2099));
    assert_eq!(f.get("/metrics", None, Some(admin)).await.0, StatusCode::OK);
    assert_eq!(f.access.calls.load(Ordering::SeqCst), reviews);
    // A good certificate wins over a bad token, as in the API server's union.
    let bob = f.cert("alice", &[], (2020, 2099));
    assert_eq!(
        f.get("/metrics", Some("garbage"), Some(bob)).await.0,
        StatusCode::OK
    );

    // Tokens: the reviewed user; a failed access review is a 500, not a 403.
    assert_eq!(
        f.get("/metrics", Some("good-alice"), None).await.0,
        StatusCode::OK
    );
    assert_eq!(
        f.get("/metrics", Some("good-bob"), None).await.0,
        StatusCode::FORBIDDEN
    );
    let (code, body) = f.get("/metrics", Some("good-flaky"), None).await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        body.starts_with(r#"Internal Server Error: "/metrics": "#),
        "{body}"
    );
    // Not a bearer token at all: anonymous.
    let mut req = Request::get("/healthz")
        .header("authorization", "Basic abc")
        .body(Body::empty())
        .unwrap();
    req.extensions_mut().insert(PeerCertificates(Arc::new(vec![])));
    assert_eq!(f.app.clone().oneshot(req).await.unwrap().status(), StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn token_reviews_are_cached() {
    let f = fixture();
    for _ in 0..3 {
        assert_eq!(
            f.get("/healthz", Some("good-alice"), None).await.0,
            StatusCode::OK
        );
        assert_eq!(
            f.get("/healthz", Some("garbage"), None).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(
        f.tokens.calls.load(Ordering::SeqCst),
        2,
        "accepted and rejected answers are both cached"
    );
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(
        f.get("/healthz", Some("good-alice"), None).await.0,
        StatusCode::OK
    );
    assert_eq!(f.tokens.calls.load(Ordering::SeqCst), 3, "until the TTL passes");
    for _ in 0..2 {
        assert_eq!(
            f.get("/healthz", Some("broken"), None).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(
        f.tokens.calls.load(Ordering::SeqCst),
        5,
        "a failed review is not cached"
    );
}

#[tokio::test(start_paused = true)]
async fn access_reviews_are_cached_per_answer() {
    let f = fixture();
    for _ in 0..3 {
        assert_eq!(
            f.get("/metrics", Some("good-alice"), None).await.0,
            StatusCode::OK
        );
        assert_eq!(
            f.get("/metrics", Some("good-bob"), None).await.0,
            StatusCode::FORBIDDEN
        );
        assert_eq!(f.get("/healthz", Some("good-bob"), None).await.0, StatusCode::OK);
    }
    assert_eq!(f.access.calls.load(Ordering::SeqCst), 2);
    tokio::time::advance(Duration::from_secs(11)).await;
    assert_eq!(
        f.get("/metrics", Some("good-bob"), None).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(f.access.calls.load(Ordering::SeqCst), 3);
    for _ in 0..2 {
        assert_eq!(
            f.get("/metrics", Some("good-flaky"), None).await.0,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
    assert_eq!(
        f.access.calls.load(Ordering::SeqCst),
        5,
        "a failed review is not cached"
    );
}

/// An API server that takes the reviews and never answers holds a scrape for the reviews' timeout
/// (apiserver's 10 s), then the request fails as if the review had: 401, or 500 for an access
/// review, and nothing is cached.
#[tokio::test(start_paused = true)]
async fn a_review_without_an_answer_fails_after_its_timeout() {
    use crate::{authn::TOKEN_REVIEW_TIMEOUT, authz::ACCESS_REVIEWS_TIMEOUT};
    let f = fixture();
    let started = tokio::time::Instant::now();
    assert_eq!(
        f.get("/healthz", Some("hang"), None).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(started.elapsed(), TOKEN_REVIEW_TIMEOUT);
    let started = tokio::time::Instant::now();
    let (code, body) = f.get("/metrics", Some("good-stuck"), None).await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(body.contains("no answer within 55s"), "{body}");
    assert_eq!(started.elapsed(), ACCESS_REVIEWS_TIMEOUT);
    f.get("/metrics", Some("good-stuck"), None).await;
    assert_eq!(f.access.calls.load(Ordering::SeqCst), 2, "not cached");
}

#[test]
fn always_allow_paths_take_a_trailing_star_only() {
    assert!(Authorizer::validate_always_allow_paths(&["/healthz".into(), "/debug/*".into()]).is_ok());
    assert!(Authorizer::validate_always_allow_paths(&["/de*bug".into()]).is_err());
}

//! A review client against a local server that answers from a script (`crate::retry`'s tests'):
//! what is sent again, how often, after how long.

use http::{Method, Request};

use super::*;
use crate::{
    client::Clients,
    retry::tests::{HANG_UP, serve},
};

const REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";

async fn review(url: &str) -> Result<String, kube::Error> {
    review_within(url, None).await
}

async fn review_within(url: &str, attempt_timeout: Option<Duration>) -> Result<String, kube::Error> {
    let clients = Clients::new(kube::Config::new(url.parse().unwrap()), 1000.0, 1000, false).unwrap();
    let client = clients.reviewer_for("authentication", attempt_timeout).unwrap();
    let req = Request::builder()
        .method(Method::POST)
        .uri(REVIEWS)
        .body(b"{}".to_vec())
        .unwrap();
    client.request_text(req).await
}

/// Each transient answer (a body-less 502 is client-go's InternalError) is followed by another
/// attempt after upstream's growing waits, until one is answered.
#[tokio::test]
async fn transient_failures_are_retried_with_growing_waits() {
    let server = serve(
        vec![(500, None), (502, None), (504, None), (429, None), (201, None)],
        Duration::ZERO,
    )
    .await;
    review(&server.url).await.unwrap();
    let seen = server.seen.lock().clone();
    assert_eq!(seen.len(), 5, "{seen:?}");
    for (step, pair) in (1..).zip(seen.windows(2)) {
        let gap = pair[1].2 - pair[0].2;
        let base = REVIEW_BACKOFF_INITIAL.mul_f64(REVIEW_BACKOFF_FACTOR.powi(step - 1));
        assert!(
            gap >= base && gap < base.mul_f64(1.0 + REVIEW_BACKOFF_JITTER) + Duration::from_millis(300),
            "wait {step}: {gap:?}, base {base:?}"
        );
    }
}

#[tokio::test]
async fn a_review_gives_up_after_five_attempts() {
    let server = serve(vec![(500, None)], Duration::ZERO).await;
    assert!(review(&server.url).await.is_err());
    assert_eq!(server.seen.lock().len(), REVIEW_ATTEMPTS as usize);
}

/// Not transient to upstream: a refusal, a 503 (ServiceUnavailable), a connection closed without an
/// answer (an EOF: only a reset or a lost HTTP/2 connection is retried).
#[tokio::test]
async fn other_outcomes_are_final() {
    for status in [403, 400, 503, HANG_UP] {
        let server = serve(vec![(status, None), (201, None)], Duration::ZERO).await;
        assert!(review(&server.url).await.is_err(), "{status}");
        assert_eq!(server.seen.lock().len(), 1, "{status}");
    }
    // A 503 that says when to come back is retried by the client's own rules, beneath.
    let server = serve(vec![(503, Some("0")), (201, None)], Duration::ZERO).await;
    review(&server.url).await.unwrap();
    assert_eq!(server.seen.lock().len(), 2);
}

/// The SubjectAccessReview's client bounds each attempt; one that runs out is not retried.
#[tokio::test]
async fn an_attempt_past_its_timeout_fails_the_review() {
    let server = serve(vec![(201, None)], Duration::from_millis(500)).await;
    let err = review_within(&server.url, Some(Duration::from_millis(50))).await;
    assert!(err.is_err(), "{err:?}");
    assert_eq!(server.seen.lock().len(), 1);
}

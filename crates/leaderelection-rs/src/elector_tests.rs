//! The elector against an in-memory Lease endpoint that can answer, fail or hang, on tokio's paused
//! clock.

use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
};

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;

use super::*;

/// How the fake API server treats the next requests.
#[derive(Default)]
struct FakeLeases {
    lease: tokio::sync::Mutex<Option<Lease>>,
    resource_version: AtomicU64,
    /// This many next requests never get an answer.
    hang_next: AtomicUsize,
    /// Every request is answered (0, the default), hangs ([`HANG`]) or fails with 500 ([`FAIL`]).
    mode: AtomicUsize,
    /// GETs answered.
    gets: AtomicUsize,
}

const HANG: usize = 1;
const FAIL: usize = 2;

impl FakeLeases {
    async fn serve(self: Arc<Self>, req: Request<Body>) -> Response<Body> {
        let hang_once = self
            .hang_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        match self.mode.load(Ordering::SeqCst) {
            HANG => std::future::pending::<()>().await,
            _ if hang_once => std::future::pending::<()>().await,
            FAIL => return status(StatusCode::INTERNAL_SERVER_ERROR, "InternalError"),
            _ => {}
        }
        let method = req.method().clone();
        let body = req.into_body().collect_bytes().await.unwrap();
        let mut stored = self.lease.lock().await;
        match method {
            Method::GET => match (self.gets.fetch_add(1, Ordering::SeqCst), &*stored).1 {
                Some(l) => respond(StatusCode::OK, serde_json::to_vec(l).unwrap()),
                None => status(StatusCode::NOT_FOUND, "NotFound"),
            },
            Method::POST | Method::PUT => {
                let mut lease: Lease = serde_json::from_slice(&body).unwrap();
                let current = stored.as_ref().and_then(|l| l.metadata.resource_version.clone());
                if method == Method::PUT && lease.metadata.resource_version != current {
                    return status(StatusCode::CONFLICT, "Conflict");
                }
                let rv = self.resource_version.fetch_add(1, Ordering::SeqCst) + 1;
                lease.metadata.resource_version = Some(rv.to_string());
                *stored = Some(lease.clone());
                respond(StatusCode::OK, serde_json::to_vec(&lease).unwrap())
            }
            _ => respond(StatusCode::METHOD_NOT_ALLOWED, Vec::new()),
        }
    }

    async fn holder(&self) -> Option<String> {
        let lease = self.lease.lock().await;
        lease.as_ref()?.spec.as_ref()?.holder_identity.clone()
    }
}

fn respond(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r
}

/// A failure as the API server writes it: a `Status` object, which kube parses into `Error::Api`.
fn status(code: StatusCode, reason: &str) -> Response<Body> {
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": reason, "reason": reason, "code": code.as_u16(),
    });
    respond(code, serde_json::to_vec(&body).unwrap())
}

fn elector() -> (Arc<LeaderElector>, Arc<FakeLeases>) {
    let (e, fake) = elector_with(|e| e);
    (Arc::new(e), fake)
}

/// An elector against a fresh fake, made by `build` from the plain one (to add a hook).
fn elector_with(build: impl FnOnce(LeaderElector) -> LeaderElector) -> (LeaderElector, Arc<FakeLeases>) {
    let fake = Arc::new(FakeLeases::default());
    let server = fake.clone();
    let service = tower::service_fn(move |req| {
        let server = server.clone();
        async move { Ok::<_, Infallible>(server.serve(req).await) }
    });
    let client = Client::new(service, "default");
    let config = LeaderElectionConfig::new("kube-system", "kcm-rs", "me");
    (build(LeaderElector::new(client, config).unwrap()), fake)
}

/// Runs `keep_leading` until it returns, with the elapsed (virtual) time.
async fn keep_leading_for(
    e: &LeaderElector,
    cancel_after: Duration,
) -> (Result<(), LeadershipLost>, Duration) {
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let timer = tokio::spawn(async move {
        tokio::time::sleep(cancel_after).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let outcome = e.keep_leading(&cancel).await;
    timer.abort();
    (outcome, started.elapsed())
}

#[tokio::test(start_paused = true)]
async fn renews_until_cancelled() {
    let (e, fake) = elector();
    assert!(e.acquire(&CancellationToken::new()).await);
    assert_eq!(fake.holder().await.as_deref(), Some("me"));
    let (outcome, _) = keep_leading_for(&e, Duration::from_secs(60)).await;
    assert!(outcome.is_ok());
    assert!(e.is_leader());
    assert!(
        fake.resource_version.load(Ordering::SeqCst) > 20,
        "renewed every retry period"
    );
}

/// client-go's renew loop tries at once, then every retry period: a new leader writes the Lease a
/// second time right after acquiring it.
#[tokio::test(start_paused = true)]
async fn the_first_renewal_follows_the_acquisition_at_once() {
    let (e, fake) = elector();
    assert!(e.acquire(&CancellationToken::new()).await);
    let acquired = fake.resource_version.load(Ordering::SeqCst);
    let (outcome, _) = keep_leading_for(&e, e.config().retry_period / 2).await;
    assert!(outcome.is_ok());
    assert_eq!(fake.resource_version.load(Ordering::SeqCst), acquired + 1);
}

/// client-go's fast path: the holder renews with a PUT of what it last wrote, no GET before it;
/// once someone else has written, the PUT conflicts and the attempt reads the Lease, which is the
/// slow path `leader_election_slowpath_total` counts.
#[tokio::test(start_paused = true)]
async fn a_holder_renews_without_reading_until_someone_else_writes() {
    let slow = Arc::new(AtomicUsize::new(0));
    let counted = slow.clone();
    let (e, fake) = elector_with(move |e| {
        e.on_slow_path(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
    });
    assert!(e.acquire(&CancellationToken::new()).await);
    let gets = fake.gets.load(Ordering::SeqCst);
    let (outcome, _) = keep_leading_for(&e, Duration::from_secs(60)).await;
    assert!(outcome.is_ok());
    assert_eq!(fake.gets.load(Ordering::SeqCst), gets, "no GET while renewing");
    let renewals = fake.resource_version.load(Ordering::SeqCst);
    assert!(renewals > 20, "renewed every retry period: {renewals}");
    assert_eq!(slow.load(Ordering::SeqCst), 0, "no slow path while the PUTs land");

    // Another writer (same holder, a newer version): the fast PUT conflicts, the read settles it.
    let mut lease = fake.lease.lock().await.clone().unwrap();
    lease.metadata.resource_version = Some("9999".into());
    *fake.lease.lock().await = Some(lease);
    assert!(e.try_acquire_or_renew().await);
    assert_eq!(fake.gets.load(Ordering::SeqCst), gets + 1);
    assert_eq!(fake.holder().await.as_deref(), Some("me"));
    assert_eq!(slow.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_hung_api_server_ends_leadership_at_the_renew_deadline() {
    let (e, fake) = elector();
    assert!(e.acquire(&CancellationToken::new()).await);
    fake.mode.store(HANG, Ordering::SeqCst);
    let (outcome, elapsed) = keep_leading_for(&e, Duration::from_secs(3600)).await;
    assert!(outcome.is_err(), "leadership lost, not held while requests hang");
    let bound = e.config().retry_period + e.config().renew_deadline;
    assert!(elapsed <= bound, "lost after {elapsed:?}, later than {bound:?}");
    assert!(!e.is_leader());
}

#[tokio::test(start_paused = true)]
async fn a_failing_api_server_ends_leadership_within_the_renew_deadline() {
    let (e, fake) = elector();
    assert!(e.acquire(&CancellationToken::new()).await);
    fake.mode.store(FAIL, Ordering::SeqCst);
    let (outcome, elapsed) = keep_leading_for(&e, Duration::from_secs(3600)).await;
    assert!(outcome.is_err());
    assert!(elapsed <= e.config().retry_period + e.config().renew_deadline);
}

#[tokio::test(start_paused = true)]
async fn one_hung_request_leaves_time_to_renew_in_the_same_round() {
    let (e, fake) = elector();
    assert!(e.acquire(&CancellationToken::new()).await);
    fake.hang_next.store(1, Ordering::SeqCst);
    let (outcome, _) = keep_leading_for(&e, Duration::from_secs(60)).await;
    assert!(
        outcome.is_ok(),
        "the per-request timeout let a later attempt renew"
    );
    assert!(e.is_leader());
    assert_eq!(
        fake.hang_next.load(Ordering::SeqCst),
        0,
        "the hung request happened"
    );
}

#[tokio::test(start_paused = true)]
async fn a_lease_held_by_another_is_not_taken_before_it_expires() {
    let slow = Arc::new(AtomicUsize::new(0));
    let counted = slow.clone();
    let (e, fake) = elector_with(move |e| {
        e.on_slow_path(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
    });
    *fake.lease.lock().await = Some(Lease {
        metadata: ObjectMeta {
            name: Some("kcm-rs".into()),
            resource_version: Some("1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("them".into()),
            lease_duration_seconds: Some(15),
            ..LeaseSpec::default()
        }),
    });
    assert!(!e.try_acquire_or_renew().await);
    tokio::time::sleep(Duration::from_secs(16)).await;
    assert!(e.try_acquire_or_renew().await, "expired by our clock");
    assert_eq!(fake.holder().await.as_deref(), Some("me"));
    assert_eq!(slow.load(Ordering::SeqCst), 0, "a takeover is not a renewal");
}

/// The sharded replicas feed every shard's elector from one LIST: an observed record held by another
/// is theirs until it has not changed for a lease duration by this clock, and then one attempt takes
/// it, reporting when that attempt started.
#[tokio::test(start_paused = true)]
async fn an_observed_lease_expires_by_this_clock_and_try_lead_takes_it() {
    let (e, fake) = elector();
    let theirs = Lease {
        metadata: ObjectMeta {
            name: Some("kcm-rs".into()),
            resource_version: Some("7".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("them".into()),
            lease_duration_seconds: Some(15),
            ..LeaseSpec::default()
        }),
    };
    *fake.lease.lock().await = Some(theirs.clone());
    fake.resource_version.store(7, Ordering::SeqCst);
    e.observe(Some(&theirs)).await;
    assert!(e.held_by_other().await);
    tokio::time::sleep(Duration::from_secs(10)).await;
    e.observe(Some(&theirs)).await; // unchanged: the clock keeps running from the first sight
    assert!(e.held_by_other().await);
    assert_eq!(e.try_lead().await, None);
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(!e.held_by_other().await);
    let before = Instant::now();
    assert_eq!(e.try_lead().await, Some(before));
    assert!(e.is_leader());
    assert_eq!(fake.holder().await.as_deref(), Some("me"));
    e.stop_leading();
    assert!(!e.is_leader());
}

/// A Lease held by another and then deleted is not created anew at once: its holder may act until
/// the record it last wrote expires by this clock.
#[tokio::test(start_paused = true)]
async fn a_deleted_lease_counts_as_held_until_its_last_record_expires() {
    let (e, fake) = elector();
    let theirs = Lease {
        metadata: ObjectMeta {
            name: Some("kcm-rs".into()),
            resource_version: Some("3".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("them".into()),
            lease_duration_seconds: Some(15),
            ..LeaseSpec::default()
        }),
    };
    e.observe(Some(&theirs)).await;
    e.observe(None).await; // deleted; the fake has no Lease either
    assert!(e.held_by_other().await);
    assert_eq!(e.try_lead().await, None);
    assert_eq!(
        fake.holder().await,
        None,
        "not created while the last record is live"
    );
    tokio::time::sleep(Duration::from_secs(16)).await;
    assert!(!e.held_by_other().await);
    assert!(e.try_lead().await.is_some());
    assert_eq!(fake.holder().await.as_deref(), Some("me"));
}

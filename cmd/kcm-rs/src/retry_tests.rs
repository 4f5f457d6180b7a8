//! The retry rules, alone and through a controller client against a local server that answers from
//! a script: what is sent again, how often, through the token bucket and the write fence.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper_util::{rt::TokioIo, server::conn::auto};
use informer::Shard;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::*;
use sharding::WriteFence;

use crate::client::Clients;

fn answer(status: u16, retry_after: Option<&'static str>) -> Response<()> {
    let mut resp = Response::new(());
    *resp.status_mut() = StatusCode::from_u16(status).unwrap();
    if let Some(v) = retry_after {
        resp.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static(v));
    }
    resp
}

#[test]
fn only_answers_that_say_so_are_retried_and_never_a_post_answered_504() {
    let s = Some(Duration::ZERO);
    let cases: &[(Method, u16, Option<&'static str>, Option<Duration>)] = &[
        (Method::POST, 429, Some("0"), s),
        (Method::POST, 429, Some("3"), Some(Duration::from_secs(3))),
        (Method::POST, 429, None, None),
        (Method::POST, 429, Some("Wed, 21 Oct 2026 07:28:00 GMT"), None),
        (Method::GET, 429, Some("-1"), s),
        (Method::GET, 503, Some("0"), s),
        (Method::GET, 503, None, None),
        (Method::POST, 500, Some("0"), s),
        (Method::GET, 504, Some("0"), s),
        (Method::GET, 504, None, None),
        (Method::PUT, 504, Some("0"), s),
        (Method::POST, 504, Some("0"), None),
        (Method::POST, 504, None, None),
        (Method::GET, 409, Some("0"), None),
        (Method::GET, 200, Some("0"), None),
    ];
    for (method, status, header, want) in cases {
        assert_eq!(
            retry_after(method, &answer(*status, *header)),
            *want,
            "{method} {status} Retry-After {header:?}"
        );
    }
}

/// One request the server saw: method, path with query, when.
pub(crate) type Seen = (Method, String, Instant);

pub(crate) struct Script {
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
}

/// A status in a script that closes the connection instead of answering.
pub(crate) const HANG_UP: u16 = 0;

/// Answers the i-th request with `script[i]` (the last entry for every later one), after `delay`;
/// [`HANG_UP`] closes the connection without an answer.
pub(crate) async fn serve(script: Vec<(u16, Option<&'static str>)>, delay: Duration) -> Script {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let (log, script) = (seen.clone(), Arc::new(script));
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (log, script) = (log.clone(), script.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (log, script) = (log.clone(), script.clone());
                    async move {
                        let n = {
                            let mut log = log.lock();
                            let pq = req.uri().path_and_query().map(ToString::to_string);
                            log.push((req.method().clone(), pq.unwrap_or_default(), Instant::now()));
                            log.len() - 1
                        };
                        tokio::time::sleep(delay).await;
                        let (status, header) = script[n.min(script.len() - 1)];
                        if status == HANG_UP {
                            return Err(std::io::Error::other("hang up"));
                        }
                        let mut resp = Response::new("{}".to_owned());
                        *resp.status_mut() = StatusCode::from_u16(status).unwrap();
                        if let Some(v) = header {
                            resp.headers_mut()
                                .insert(RETRY_AFTER, HeaderValue::from_static(v));
                        }
                        Ok::<_, std::io::Error>(resp)
                    }
                });
                let _ = auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    Script { url, seen }
}

fn clients(server: &Script, qps: f64, burst: i32) -> Clients {
    Clients::new(kube::Config::new(server.url.parse().unwrap()), qps, burst, false).unwrap()
}

const PODS: &str = "/api/v1/namespaces/retry-ns/pods";

async fn send(client: &kube::Client, method: Method) -> Result<String, kube::Error> {
    send_to(client, method, PODS).await
}

async fn send_to(client: &kube::Client, method: Method, uri: &str) -> Result<String, kube::Error> {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .body(b"{}".to_vec())
        .unwrap();
    client.request_text(req).await
}

#[tokio::test]
async fn a_throttled_create_is_sent_again_after_retry_after_and_one_without_it_is_not() {
    let server = serve(
        vec![(429, Some("0")), (429, Some("0")), (201, None)],
        Duration::ZERO,
    )
    .await;
    let client = clients(&server, 1000.0, 1000)
        .client_for("replicaset-controller")
        .unwrap();
    send(&client, Method::POST).await.unwrap();
    assert_eq!(server.seen.lock().len(), 3);

    let server = serve(vec![(429, None), (201, None)], Duration::ZERO).await;
    let client = clients(&server, 1000.0, 1000)
        .client_for("replicaset-controller")
        .unwrap();
    assert!(send(&client, Method::POST).await.is_err());
    assert_eq!(server.seen.lock().len(), 1);
}

#[tokio::test]
async fn a_create_answered_504_is_never_sent_again_and_a_read_is_when_told() {
    let server = serve(vec![(504, Some("0")), (201, None)], Duration::ZERO).await;
    let client = clients(&server, 1000.0, 1000)
        .client_for("replicaset-controller")
        .unwrap();
    assert!(send(&client, Method::POST).await.is_err());
    assert_eq!(
        server.seen.lock().len(),
        1,
        "a POST answered 504 may have committed"
    );

    let server = serve(
        vec![(504, Some("0")), (503, Some("0")), (200, None)],
        Duration::ZERO,
    )
    .await;
    let client = clients(&server, 1000.0, 1000)
        .client_for("replicaset-controller")
        .unwrap();
    send(&client, Method::GET).await.unwrap();
    assert_eq!(server.seen.lock().len(), 3);
}

/// client-go retries a GET whose connection was lost (an API server restarting) after a second, and
/// never a write: it may have been applied before the connection went.
#[tokio::test]
async fn a_read_whose_connection_was_lost_is_sent_again_and_a_write_is_not() {
    let server = serve(vec![(HANG_UP, None), (200, None)], Duration::ZERO).await;
    let client = clients(&server, 1000.0, 1000)
        .client_for("replicaset-controller")
        .unwrap();
    send(&client, Method::GET).await.unwrap();
    let seen = server.seen.lock().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[1].2 - seen[0].2 >= CONNECTION_LOST_WAIT, "{seen:?}");

    let server = serve(vec![(HANG_UP, None), (201, None)], Duration::ZERO).await;
    let client = clients(&server, 1000.0, 1000)
        .client_for("replicaset-controller")
        .unwrap();
    assert!(send(&client, Method::POST).await.is_err());
    assert_eq!(server.seen.lock().len(), 1, "a write is not sent twice");
}

#[derive(Debug, thiserror::Error)]
#[error("wrapped")]
struct Wrapped(#[source] Box<dyn std::error::Error + Send + Sync>);

#[test]
fn lost_connections_are_told_from_other_failures() {
    use std::io::{Error, ErrorKind};
    let lost: Vec<Box<dyn std::error::Error + Send + Sync>> = vec![
        Box::new(Error::from(ErrorKind::ConnectionReset)),
        Box::new(Error::from(ErrorKind::UnexpectedEof)),
        Box::new(Wrapped(Box::new(Error::from(ErrorKind::BrokenPipe)))),
        Box::new(h2::Error::from(h2::Reason::REFUSED_STREAM)),
    ];
    for e in &lost {
        assert!(connection_lost(&**e), "{e:?}");
    }
    let not: Vec<Box<dyn std::error::Error + Send + Sync>> = vec![
        Box::new(Error::from(ErrorKind::ConnectionRefused)),
        Box::new(Error::from(ErrorKind::InvalidData)),
        Box::new(Wrapped(Box::new(Error::from(ErrorKind::TimedOut)))),
        Box::new(h2::Error::from(h2::Reason::PROTOCOL_ERROR)),
    ];
    for e in &not {
        assert!(!connection_lost(&**e), "{e:?}");
    }
    // The reviews' narrower set: a reset, also under a wrapper; not an EOF or a refused stream.
    assert!(connection_reset(&*lost[0]));
    assert!(connection_reset(&Wrapped(Box::new(Error::from(
        ErrorKind::ConnectionReset
    )))));
    for e in lost[1..].iter().chain(&not) {
        assert!(!connection_reset(&**e), "{e:?}");
    }
}

#[tokio::test]
async fn retries_stop_after_ten() {
    let server = serve(vec![(429, Some("0"))], Duration::ZERO).await;
    let client = clients(&server, 1000.0, 1000)
        .client_for("replicaset-controller")
        .unwrap();
    assert!(send(&client, Method::POST).await.is_err());
    assert_eq!(server.seen.lock().len(), 1 + MAX_RETRIES as usize);
}

/// Every attempt waits for a token of the client's bucket: at 4 per second with a burst of 1, three
/// attempts span at least two token periods.
#[tokio::test]
async fn every_attempt_takes_a_token() {
    let server = serve(
        vec![(429, Some("0")), (429, Some("0")), (201, None)],
        Duration::ZERO,
    )
    .await;
    let client = clients(&server, 4.0, 1)
        .client_for("replicaset-controller")
        .unwrap();
    send(&client, Method::POST).await.unwrap();
    let seen = server.seen.lock().clone();
    assert_eq!(seen.len(), 3);
    let span = seen[2].2 - seen[0].2;
    assert!(span >= Duration::from_millis(450), "{span:?}");
}

/// client-go throttles no watch's first attempt: at 1 request a second with a burst of 1, three
/// watches and then a create go out at once (the one token taken before the first watch is the
/// create's); a watch retried after 429 waits for a token.
#[tokio::test]
async fn a_watch_takes_no_token_but_its_retry_does() {
    let server = serve(vec![(200, None)], Duration::ZERO).await;
    let client = clients(&server, 1.0, 1).client_for("shared-informers").unwrap();
    let started = Instant::now();
    for _ in 0..3 {
        send_to(
            &client,
            Method::GET,
            &format!("{PODS}?watch=true&timeoutSeconds=300"),
        )
        .await
        .unwrap();
    }
    send(&client, Method::POST).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.seen.lock().len(), 4);

    let server = serve(vec![(429, Some("0")), (200, None)], Duration::ZERO).await;
    let client = clients(&server, 1.0, 1).client_for("shared-informers").unwrap();
    send_to(&client, Method::GET, &format!("{PODS}?watch=1"))
        .await
        .unwrap();
    let seen = server.seen.lock().clone();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].2 - seen[0].2 >= Duration::from_millis(900), "{seen:?}");
}

/// A namespace of shard 0 of 2, with a fence whose gate is open and synced until `until`.
fn fenced(server: &Script, until: Instant) -> kube::Client {
    let fence = Arc::new(WriteFence::new());
    let shard = Shard::of_namespace("retry-ns", 2).unwrap();
    fence.renewed(shard, until, fence.suspended_now());
    fence.caches(shard, vec![Arc::new(|| true)]);
    clients(server, 1000.0, 1000)
        .sharded(fence, "test-replica")
        .unwrap()
        .client_for("replicaset-controller")
        .unwrap()
}

/// The write that reached the API server five times, four of them after the fence had closed: now
/// the retry is checked by the fence and refused, and the first attempt carried a timeout inside the
/// window (half of it, for a window shorter than two answer margins), so that its answer comes back
/// before the window ends.
#[tokio::test]
async fn a_retry_after_the_window_closed_is_refused_by_the_fence() {
    let server = serve(vec![(429, Some("1")), (201, None)], Duration::ZERO).await;
    let client = fenced(&server, Instant::now() + Duration::from_millis(500));
    let err = send(&client, Method::POST).await.unwrap_err().to_string();
    assert!(err.contains("not confirmed renewed"), "{err}");
    let seen = server.seen.lock().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let ms: u64 = seen[0]
        .1
        .split_once("timeout=")
        .and_then(|(_, t)| t.strip_suffix("ms"))
        .expect("a timeout parameter")
        .parse()
        .unwrap();
    assert!(ms > 0 && ms <= 250, "{ms}");
}

/// An attempt with no answer when the window ends is dropped there, not awaited.
#[tokio::test]
async fn an_attempt_without_an_answer_is_dropped_when_the_window_ends() {
    let server = serve(vec![(201, None)], Duration::from_secs(30)).await;
    let started = Instant::now();
    let client = fenced(&server, started + Duration::from_millis(300));
    let err = send(&client, Method::POST).await.unwrap_err().to_string();
    assert!(err.contains("write window"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// Reads are not fenced and carry no timeout of the fence's.
#[tokio::test]
async fn reads_pass_a_closed_fence() {
    let server = serve(vec![(200, None)], Duration::ZERO).await;
    let client = fenced(&server, Instant::now());
    send(&client, Method::GET).await.unwrap();
    let seen = server.seen.lock().clone();
    assert_eq!(seen.len(), 1);
    assert!(!seen[0].1.contains("timeout="), "{seen:?}");
}

/// The fence's refusal for a shard this replica does not hold, and shadow mode's, are final for the
/// event recorder: no wait changes them. One for a shard still syncing, or whose renewal is not
/// confirmed, is not: a few seconds later the write may pass.
#[tokio::test]
async fn only_a_shard_not_held_and_shadow_mode_refuse_events_for_good() {
    let server = serve(vec![(201, None)], Duration::ZERO).await;
    let syncing = {
        let fence = Arc::new(WriteFence::new());
        let shard = Shard::of_namespace("retry-ns", 2).unwrap();
        fence.renewed(
            shard,
            Instant::now() + Duration::from_secs(10),
            fence.suspended_now(),
        );
        fence.caches(shard, vec![Arc::new(|| false)]);
        clients(&server, 1000.0, 1000)
            .sharded(fence, "test-replica")
            .unwrap()
            .client_for("replicaset-controller")
            .unwrap()
    };
    let not_held = fenced(&server, Instant::now() - Duration::from_secs(1));
    let other = clients(&server, 1000.0, 1000)
        .sharded(Arc::new(WriteFence::new()), "test-replica")
        .unwrap()
        .client_for("job-controller")
        .unwrap();
    let shadow = Clients::new(kube::Config::new(server.url.parse().unwrap()), 1000.0, 1000, true)
        .unwrap()
        .client_for("replicaset-controller")
        .unwrap();
    let err = send(&syncing, Method::POST).await.unwrap_err();
    assert!(controller::events::transient(&err), "{err}");
    let err = send(&not_held, Method::POST).await.unwrap_err();
    assert!(controller::events::transient(&err), "renewal unconfirmed: {err}");
    let err = send(&other, Method::POST).await.unwrap_err();
    assert!(!controller::events::transient(&err), "not held: {err}");
    let err = send(&shadow, Method::POST).await.unwrap_err();
    assert!(!controller::events::transient(&err), "shadow: {err}");
    assert!(server.seen.lock().is_empty(), "nothing left the process");
}

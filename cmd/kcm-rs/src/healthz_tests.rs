//! The health endpoints' answers, as k8s.io/apiserver's healthz handler and component-base's SLI
//! handler give them, through the router.

use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use http::{Method, Request};
use tower::ServiceExt as _;

use super::*;

async fn ask(health: &Arc<Health>, method: Method, uri: &str) -> (StatusCode, String) {
    let app: Router = routes(health.clone());
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .body(Body::empty())
        .unwrap();
    let resp = app.oneshot(req).await.unwrap();
    let code = resp.status();
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    (code, String::from_utf8(body.to_vec()).unwrap())
}

async fn get(health: &Arc<Health>, uri: &str) -> (StatusCode, String) {
    ask(health, Method::GET, uri).await
}

#[tokio::test]
async fn ping_is_the_one_check_until_another_is_installed() {
    let h = Arc::new(Health::default());
    assert_eq!(get(&h, "/healthz").await, (StatusCode::OK, "ok".into()));
    assert_eq!(
        get(&h, "/healthz?verbose").await.1,
        "[+]ping ok\nhealthz check passed\n"
    );
    assert_eq!(get(&h, "/healthz/ping").await, (StatusCode::OK, "ok".into()));
    h.add_controller("replicaset-controller", || true, || false);
    assert_eq!(
        get(&h, "/healthz?verbose=1").await.1,
        "[+]replicaset-controller ok\nhealthz check passed\n"
    );
    assert_eq!(
        get(&h, "/healthz/ping").await,
        (StatusCode::NOT_FOUND, "404 page not found\n".into())
    );
    assert_eq!(
        get(&h, "/livez?verbose").await.1,
        "[+]replicaset-controller ok\nlivez check passed\n"
    );
}

/// KCM lists its election's check from the start, before it campaigns; a controller of a shard is
/// reached by its whole name.
#[tokio::test]
async fn the_election_check_is_listed_before_there_is_an_elector() {
    let h = Arc::new(Health::default());
    h.expect_election();
    assert_eq!(
        get(&h, "/healthz?verbose").await.1,
        "[+]leaderElection ok\nhealthz check passed\n"
    );
    assert_eq!(get(&h, "/healthz/ping").await.0, StatusCode::NOT_FOUND);
    h.add_controller("replicaset-controller/3-of-12", || true, || false);
    assert_eq!(
        get(&h, "/healthz/replicaset-controller/3-of-12").await,
        (StatusCode::OK, "ok".into())
    );
}

#[tokio::test]
async fn excluded_checks_are_listed_and_unknown_ones_warned_of() {
    let h = Arc::new(Health::default());
    h.add_controller("replicaset-controller", || true, || false);
    h.add_controller("job-controller", || true, || false);
    let (code, body) = get(
        &h,
        "/healthz?verbose&exclude=job-controller&exclude=nope&exclude=also",
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        body,
        "[+]replicaset-controller ok\n[+]job-controller excluded: ok\n\
         warn: some health checks cannot be excluded: no matches for \"also\",\"nope\"\n\
         healthz check passed\n"
    );
}

/// A failing check fails the whole with the list, its reason withheld there and given by its own
/// path.
#[tokio::test(start_paused = true)]
async fn a_failing_check_is_listed_and_its_own_path_says_why() {
    let h = Arc::new(Health::default());
    h.round_done(Duration::from_secs(1));
    h.add_controller("replicaset-controller", || true, || false);
    tokio::time::advance(Duration::from_secs(2)).await;
    let (code, body) = get(&h, "/healthz").await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        body,
        "[-]shardManager failed: reason withheld\n[+]replicaset-controller ok\nhealthz check failed\n"
    );
    let (code, body) = get(&h, "/healthz/shardManager").await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        body.starts_with("internal server error: no shard manager round for "),
        "{body}"
    );
    // Excluded, it no longer fails the whole.
    assert_eq!(get(&h, "/healthz?exclude=shardManager").await.0, StatusCode::OK);
}

/// A controller that stopped on a panic fails its check, and with it `/healthz` and `/livez`, so
/// until the process exits (KCM's would have crashed); it is not ready either.
#[tokio::test]
async fn a_stopped_controller_fails_its_check() {
    let h = Arc::new(Health::default());
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = stopped.clone();
    h.add_controller(
        "garbage-collector-controller",
        || true,
        move || flag.load(Ordering::SeqCst),
    );
    h.add_controller("job-controller", || true, || false);
    assert_eq!(get(&h, "/livez").await.0, StatusCode::OK);
    assert_eq!(h.stopped(), None);
    stopped.store(true, Ordering::SeqCst);
    assert_eq!(h.stopped().as_deref(), Some("garbage-collector-controller"));
    let (code, body) = get(&h, "/healthz").await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        body,
        "[-]garbage-collector-controller failed: reason withheld\n[+]job-controller ok\nhealthz check failed\n"
    );
    assert_eq!(get(&h, "/livez").await.0, StatusCode::INTERNAL_SERVER_ERROR);
    let (code, body) = get(&h, "/healthz/garbage-collector-controller").await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(body.contains("stopped on a panic"), "{body}");
    assert_eq!(
        get(&h, "/readyz").await,
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "stopped on a panic: garbage-collector-controller".into()
        )
    );
}

#[tokio::test]
async fn each_healthz_answer_counts_in_the_slis_until_a_delete() {
    let h = Arc::new(Health::default());
    h.add_controller("replicaset-controller", || true, || false);
    get(&h, "/healthz").await;
    get(&h, "/healthz?verbose").await;
    get(&h, "/livez").await;
    let (code, text) = get(&h, "/metrics/slis").await;
    assert_eq!(code, StatusCode::OK);
    for line in [
        "kubernetes_healthcheck{name=\"replicaset-controller\",type=\"healthz\"} 1",
        "kubernetes_healthchecks_total{name=\"replicaset-controller\",status=\"success\",type=\"healthz\"} 2",
        "# HELP kubernetes_healthcheck [STABLE] This metric records the result of a single healthcheck.",
        "# TYPE process_start_time_seconds gauge",
        "# TYPE kubernetes_healthchecks_total counter",
    ] {
        assert!(text.contains(line), "{line} in:\n{text}");
    }
    assert!(
        !text.contains("livez"),
        "/livez is kcm-rs's own and not counted:\n{text}"
    );
    assert_eq!(
        ask(&h, Method::DELETE, "/metrics/slis").await,
        (StatusCode::OK, "metrics reset\n".into())
    );
    let text = get(&h, "/metrics/slis").await.1;
    assert!(!text.contains("kubernetes_healthchecks_total{"), "{text}");
}

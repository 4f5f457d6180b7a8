use std::future::poll_fn;

use hyper_util::rt::TokioIo;

use super::*;

fn ago(d: Duration) -> Instant {
    Instant::now().checked_sub(d).expect("an instant in the past")
}

#[test]
fn a_gap_longer_than_the_limit_is_one_stall() {
    let guard = StallGuard::beaten_at(ago(Duration::ZERO));
    assert_eq!(guard.check(Instant::now()), 0);
    let guard = StallGuard::beaten_at(ago(STALL_LIMIT * 3));
    assert_eq!(guard.check(Instant::now()), 1);
    // The first to see it counted it and moved the last beat: the next look sees no new stall.
    assert_eq!(guard.check(Instant::now()), 1);
    guard.beat(Instant::now());
    assert_eq!(guard.check(Instant::now()), 1);
}

async fn write(conn: &mut StallConnection<TokioIo<tokio::io::DuplexStream>>) -> io::Result<usize> {
    poll_fn(|cx| Pin::new(&mut *conn).poll_write(cx, b"x")).await
}

#[tokio::test]
async fn a_connection_opened_before_a_stall_writes_no_more() {
    let guard = StallGuard::beaten_at(ago(Duration::ZERO));
    let (near, _far) = tokio::io::duplex(64);
    let mut conn = StallConnection {
        io: TokioIo::new(near),
        guard: guard.clone(),
        opened_after: guard.check(Instant::now()),
    };
    assert_eq!(write(&mut conn).await.unwrap(), 1);

    // The heartbeat (or another connection) saw a stall: this connection refuses from now on.
    guard.0.stalls.fetch_add(1, Ordering::AcqRel);
    let err = write(&mut conn).await.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::ConnectionAborted);
}

#[tokio::test]
async fn a_connection_that_finds_the_last_beat_too_old_refuses_first() {
    // The connection's task runs before the heartbeat's after a stall: it sees the gap itself.
    let (near, _far) = tokio::io::duplex(64);
    let mut conn = StallConnection {
        io: TokioIo::new(near),
        guard: StallGuard::beaten_at(ago(STALL_LIMIT * 2)),
        opened_after: 0,
    };
    assert!(write(&mut conn).await.is_err());
}

#[tokio::test]
async fn the_heartbeat_keeps_a_running_process_from_counting_stalls() {
    let guard = StallGuard::start();
    tokio::time::sleep(HEARTBEAT * 3).await;
    assert_eq!(guard.check(Instant::now()), 0);
}

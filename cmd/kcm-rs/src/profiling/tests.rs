//! A profile taken in this test process decodes as pprof with Go's CPU sample types, and sees the
//! function that burned the CPU.

use std::time::Duration;

use prost::Message as _;

use super::{proto::Profile, *};

#[inline(never)]
fn spin_for(d: Duration) -> u64 {
    let start = tokio::time::Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_is_pprof_with_go_cpu_sample_types_and_one_at_a_time() {
    let busy = std::thread::spawn(|| spin_for(Duration::from_millis(2500)));
    // Two at once: one profiles, the other is refused (they overlap whatever the start-up takes,
    // `pprof`'s first backtrace is slow in a debug build).
    let (a, b) = tokio::join!(
        cpu_profile(Duration::from_secs(2)),
        cpu_profile(Duration::from_secs(2))
    );
    busy.join().unwrap();
    let (bytes, refused) = match (a, b) {
        (Ok(bytes), Err(e)) | (Err(e), Ok(bytes)) => (bytes, e),
        other => panic!("want one profile and one refusal: {other:?}"),
    };
    assert!(matches!(refused, ProfileError::InUse), "{refused:?}");
    assert_eq!(refused.to_string(), "cpu profiling already in use");
    let profile = Profile::decode(bytes.as_slice()).expect("pprof protobuf");
    assert_eq!(
        profile.sample_types(),
        [("samples", "count"), ("cpu", "nanoseconds")]
    );
    assert_eq!(profile.period, 10_000_000);
    assert!(!profile.sample.is_empty(), "no samples in a busy second");
    assert!(
        profile.has_function("spin_for"),
        "the busy function is among the samples' functions"
    );
}

#[test]
fn seconds_follow_gos_rule() {
    assert_eq!(seconds(Some("seconds=5")), Duration::from_secs(5));
    for q in [
        None,
        Some(""),
        Some("seconds=0"),
        Some("seconds=-3"),
        Some("seconds=x"),
        Some("debug=1"),
    ] {
        assert_eq!(seconds(q), Duration::from_secs(DEFAULT_SECONDS), "{q:?}");
    }
}

#[test]
fn the_blocklist_names_the_system_libraries_not_a_binary_that_mentions_them() {
    let blocked = |path: &str| BLOCKLIST.iter().any(|b| path.contains(b));
    for lib in [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib/x86_64-linux-gnu/libgcc_s.so.1",
        "/lib/x86_64-linux-gnu/libpthread.so.0",
        "/usr/lib64/libc-2.17.so",
        "linux-vdso.so.1",
    ] {
        assert!(blocked(lib), "{lib} is not unwound");
    }
    for binary in [
        "/usr/local/bin/kcm-rs",
        "/tmp/kcm-rs-glibc-je",
        "/opt/glibc-tools/kcm-rs",
        "/home/libcat/kcm-rs",
    ] {
        assert!(!blocked(binary), "{binary} is profiled");
    }
}

//! A heap profile taken in this test process (which runs on the binary's jemalloc, with the
//! workspace's sampling settings): none without a window, as sampling is off; with one, gzipped pprof
//! that finds the bytes a function allocated in the window and keeps alive, and sampling off again.
//! One test, in order: the steps share the process's one sampler.

use std::{io::Read as _, time::Duration};

use prost::Message as _;

use super::*;
use crate::profiling::proto::Profile;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const KEPT_MIB: usize = 32;

#[inline(never)]
fn keep_mebibytes(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|_| vec![7u8; 1 << 20]).collect()
}

async fn sampling() -> bool {
    let ctl = jemalloc_pprof::PROF_CTL
        .as_ref()
        .expect("profiling compiled into jemalloc");
    let ctl = ctl.lock().await;
    // 2^19 = 512 KiB, Go's runtime.MemProfileRate (.cargo/config.toml).
    assert_eq!(ctl.lg_sample(), 19);
    ctl.activated()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_is_off_until_a_window_asks_and_finds_the_live_bytes() {
    assert!(!sampling().await, "off from the start");
    let refused = heap_profile(None).await.expect_err("no window, no sampling");
    assert!(matches!(refused, HeapProfileError::NotSampling), "{refused:?}");

    let profile = tokio::spawn(heap_profile(Some(Duration::from_secs(2))));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kept = std::hint::black_box(keep_mebibytes(KEPT_MIB));
    let gzipped = profile.await.unwrap().expect("a heap profile");
    assert!(!sampling().await, "off again after the window");

    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gzipped.as_slice())
        .read_to_end(&mut bytes)
        .expect("gzip");
    let profile = Profile::decode(bytes.as_slice()).expect("pprof protobuf");
    assert_eq!(profile.sample_types(), [("inuse_space", "bytes")]);
    // Each sample's weight is its bytes scaled by the chance of sampling them: the kept mebibytes
    // are all there, give or take the estimate.
    let total: i64 = profile.sample.iter().map(|x| x.value[0]).sum();
    assert!(
        total >= (KEPT_MIB as i64 / 2) << 20,
        "the profile holds {total} bytes, less than half of the {KEPT_MIB} MiB kept alive"
    );
    assert!(
        profile.has_function("keep_mebibytes"),
        "the function keeping the bytes is among the profile's functions"
    );
    drop(kept);
}

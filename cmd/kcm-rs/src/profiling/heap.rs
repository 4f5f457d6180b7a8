//! Heap profiles on demand (`/debug/pprof/heap?seconds=N`), from jemalloc's own sampling of
//! allocation sites.
//!
//! The `kcm-rs` binary runs on jemalloc (the `jemalloc` feature, on by default). On glibc, jemalloc is
//! built with profiling and samples once per 512 KiB allocated on average (`lg_prof_sample:19`), the
//! rate of Go's heap profile (`runtime.MemProfileRate`); `.cargo/config.toml` compiles that into
//! jemalloc. Unlike Go, the sampling is off until asked for: kept on, its records cost the process a
//! sixth of its peak RSS in a busy run (benches/results/2026-11-28-allocator.md). A request with
//! `seconds=N` turns it on for N seconds and answers what was allocated in that window and is still
//! live at its end; Go's answer to the same request is the window's delta of all allocations. Without
//! `seconds`, the profile since sampling was turned on for good (`_RJEM_MALLOC_CONF=prof_active:true`
//! in the environment, Go's behaviour at that cost), or an error saying to ask for a window.
//!
//! `jemalloc_pprof` asks jemalloc for a dump (jemalloc writes it to a file: `$TMPDIR`, which the
//! shipped manifests mount) and turns it into gzipped pprof protobuf with one sample type,
//! `inuse_space`/`bytes`; Go's profile has three more (`alloc_objects`, `alloc_space`,
//! `inuse_objects`): jemalloc keeps no history of freed memory and no object counts.
//!
//! The static musl binaries have no heap profile: jemalloc's sampler unwinds with libgcc, which musl
//! lacks, and its fallback walks frame pointers Rust's frames do not keep.

use std::time::Duration;

/// Why no heap profile was taken.
#[derive(Debug, thiserror::Error)]
pub enum HeapProfileError {
    /// The process does not run on a jemalloc built with profiling: a library user's own binary,
    /// `kcm-rs` built without its `jemalloc` feature, or a static musl build.
    #[error(
        "heap profiling is not enabled: this process does not allocate through a jemalloc built \
         with profiling (kcm-rs's glibc builds have one; not the static musl binaries, not a build \
         with --no-default-features, not a program embedding kcm-rs)"
    )]
    NotEnabled,
    /// No window asked for, and sampling is not on for good.
    #[error(
        "heap sampling is off until asked for: request /debug/pprof/heap?seconds=N to sample for N \
         seconds, or start kcm-rs with _RJEM_MALLOC_CONF=prof_active:true to sample from the start"
    )]
    NotSampling,
    /// jemalloc refused to switch sampling, could not write its dump, or the dump did not parse.
    #[cfg(all(feature = "jemalloc", target_env = "gnu"))]
    #[error("{0:#}")]
    Jemalloc(anyhow::Error),
    #[cfg(all(feature = "jemalloc", target_env = "gnu"))]
    #[error("the profiling thread ended: {0}")]
    Thread(tokio::task::JoinError),
}

/// The live heap as jemalloc sampled it, gzipped pprof protobuf: sampled for `window` if given
/// (sampling then off again, unless it was on for good), else since sampling was turned on for good.
/// One at a time: a second request waits for the first.
#[cfg(all(feature = "jemalloc", target_env = "gnu"))]
pub async fn heap_profile(window: Option<Duration>) -> Result<Vec<u8>, HeapProfileError> {
    let Some(ctl) = jemalloc_pprof::PROF_CTL.as_ref() else {
        return Err(HeapProfileError::NotEnabled);
    };
    let mut ctl = ctl.clone().lock_owned().await;
    let for_good = ctl.activated();
    if window.is_none() && !for_good {
        return Err(HeapProfileError::NotSampling);
    }
    // A task of its own, so that sampling is turned off again even if the caller goes away.
    tokio::spawn(async move {
        let windowed = window.is_some() && !for_good;
        if windowed {
            ctl.activate().map_err(|e| HeapProfileError::Jemalloc(e.into()))?;
        }
        if let Some(window) = window {
            tokio::time::sleep(window).await;
        }
        // The dump writes and reads a file and symbolizes: not on a runtime worker.
        let (mut ctl, dumped) = tokio::task::spawn_blocking(move || {
            let dumped = ctl.dump_pprof();
            (ctl, dumped)
        })
        .await
        .map_err(HeapProfileError::Thread)?;
        if windowed {
            ctl.deactivate()
                .map_err(|e| HeapProfileError::Jemalloc(e.into()))?;
        }
        dumped.map_err(HeapProfileError::Jemalloc)
    })
    .await
    .map_err(HeapProfileError::Thread)?
}

/// Without jemalloc's profiling there is nothing to sample allocations with.
#[cfg(not(all(feature = "jemalloc", target_env = "gnu")))]
pub async fn heap_profile(_window: Option<Duration>) -> Result<Vec<u8>, HeapProfileError> {
    Err(HeapProfileError::NotEnabled)
}

#[cfg(all(test, feature = "jemalloc", target_env = "gnu"))]
#[path = "heap_tests.rs"]
mod tests;

//! The `kcm-rs` binary: all of it is the library's `cli` module, which shares its modules with the
//! embedding API.
#![forbid(unsafe_code)]

/// jemalloc rather than glibc's allocator: it samples allocation sites for `/debug/pprof/heap`.
/// Set here, not in the library, so that a program embedding kcm-rs keeps its own allocator. The
/// static musl binaries keep musl's (see the `jemalloc` feature in Cargo.toml).
#[cfg(all(feature = "jemalloc", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    kcm_rs::cli::main().await
}

//! The `kcm-rs` binary: all of it is the library's `cli` module, which shares its modules with the
//! embedding API.
#![forbid(unsafe_code)]

#[tokio::main]
async fn main() -> std::process::ExitCode {
    kcm_rs::cli::main().await
}

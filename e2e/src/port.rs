//! Ports for the servers the suites start: kcm-rs's endpoints and an upstream KCM beside it.
//!
//! Its own module so that the process harness (`kcm_rs`) and the HTTPS probes (`serving`), which
//! both need one, do not depend on each other for it.

/// A loopback port free at the time of asking; another process can still take it before the server
/// binds it.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

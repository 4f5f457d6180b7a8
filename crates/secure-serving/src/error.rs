//! Why serving could not start. Each names the flag or file at fault.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ServingError {
    #[error("--tls-cert-file and --tls-private-key-file must be given together")]
    HalfAPair,
    #[error("reading {path}: {reason}")]
    ReadPem { path: PathBuf, reason: String },
    #[error("writing the self-signed certificate to {path}: {source}")]
    WriteCert { path: PathBuf, source: std::io::Error },
    #[error("generating a self-signed certificate: {0}")]
    SelfSigned(#[from] rcgen::Error),
    #[error("the serving certificate and key do not match, or the key is unusable: {0}")]
    CertKey(rustls::Error),
    #[error("--tls-min-version: {0}")]
    MinVersion(String),
    #[error("--tls-cipher-suites: {0}")]
    CipherSuites(String),
    #[error("--authorization-always-allow-paths: {0}")]
    AlwaysAllowPaths(String),
    #[error("unable to load client CA from {source_name}: {reason}")]
    ClientCa { source_name: String, reason: String },
    #[error("--bind-address/--secure-port {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("TLS configuration: {0}")]
    Tls(rustls::Error),
}

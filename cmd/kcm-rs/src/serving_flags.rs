//! The secure serving, authentication and authorization flags, with kube-controller-manager's
//! names and defaults (k8s.io/apiserver `SecureServingOptions`, `DelegatingAuthenticationOptions`,
//! `DelegatingAuthorizationOptions`), turned into a [`secure_serving::Config`].

use std::{
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use secure_serving::{Config, DEFAULT_ALWAYS_ALLOW_PATHS, authn::ClientCaSource};

use crate::duration::go_duration;

/// KCM's `--secure-port` default.
pub const DEFAULT_SECURE_PORT: u16 = 10257;
/// QPS and burst of the clients that send TokenReviews and SubjectAccessReviews (k8s.io/apiserver
/// gives its delegating clients 200/400, apart from `--kube-api-qps`).
pub const DELEGATION_QPS: f64 = 200.0;
pub const DELEGATION_BURST: i32 = 400;

#[derive(Debug, Clone, clap::Args)]
pub struct ServingFlags {
    /// The IP address on which to listen for the --secure-port port.
    #[arg(long, default_value = "0.0.0.0", help_heading = "Secure serving flags")]
    pub bind_address: IpAddr,

    /// The port on which to serve HTTPS with authentication and authorization. 0 disables serving.
    #[arg(long, default_value_t = DEFAULT_SECURE_PORT, value_parser = crate::flags::secure_port, help_heading = "Secure serving flags")]
    pub secure_port: u16,

    /// The directory where the self-signed certificate is written (kcm-rs.crt, kcm-rs.key) and reused
    /// from. Ignored with --tls-cert-file. Empty: the certificate is kept in memory.
    #[arg(long, value_name = "DIR", help_heading = "Secure serving flags")]
    pub cert_dir: Option<PathBuf>,

    /// File containing the default x509 certificate for HTTPS (CA certificates after the server's).
    /// Without it and --tls-private-key-file, a self-signed certificate for localhost and 127.0.0.1 is generated.
    #[arg(long, value_name = "FILE", help_heading = "Secure serving flags")]
    pub tls_cert_file: Option<PathBuf>,

    /// File containing the default x509 private key matching --tls-cert-file.
    #[arg(long, value_name = "FILE", help_heading = "Secure serving flags")]
    pub tls_private_key_file: Option<PathBuf>,

    /// Minimum TLS version supported: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13
    /// (TLS 1.0 and 1.1 are accepted and serve 1.2 and up).
    #[arg(long, value_name = "VERSION", help_heading = "Secure serving flags")]
    pub tls_min_version: Option<String>,

    /// Comma-separated list of TLS 1.2 cipher suites, with Go's names. Default: rustls' AEAD suites.
    /// Go's CBC, RC4, 3DES and RSA-key-exchange suites are skipped with a warning.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "SUITES",
        help_heading = "Secure serving flags"
    )]
    pub tls_cipher_suites: Vec<String>,

    /// kubeconfig file with rights to create tokenreviews.authentication.k8s.io. Default: the
    /// controllers' own connection (--kubeconfig or in-cluster).
    #[arg(long, value_name = "PATH", help_heading = "Authentication flags")]
    pub authentication_kubeconfig: Option<PathBuf>,

    /// The duration to cache responses from the webhook token authenticator.
    #[arg(long, default_value = "10s", value_parser = go_duration, help_heading = "Authentication flags")]
    pub authentication_token_webhook_cache_ttl: Duration,

    /// If set, any request presenting a client certificate signed by one of the authorities in the
    /// client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate.
    #[arg(long, value_name = "FILE", help_heading = "Authentication flags")]
    pub client_ca_file: Option<PathBuf>,

    /// If false, the client CA is looked up in the cluster (configmap
    /// kube-system/extension-apiserver-authentication) when --client-ca-file is not given.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", help_heading = "Authentication flags")]
    pub authentication_skip_lookup: bool,

    /// Accepted for compatibility: a failed lookup is always tolerated (client certificates are
    /// then not authenticated until the ConfigMap can be read).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", help_heading = "Authentication flags")]
    pub authentication_tolerate_lookup_failure: bool,

    /// kubeconfig file with rights to create subjectaccessreviews.authorization.k8s.io. Default: the
    /// controllers' own connection (--kubeconfig or in-cluster).
    #[arg(long, value_name = "PATH", help_heading = "Authorization flags")]
    pub authorization_kubeconfig: Option<PathBuf>,

    /// A list of HTTP paths to skip during authorization, i.e. these are authorized without
    /// contacting the 'core' kubernetes server. A trailing * matches a prefix.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_ALWAYS_ALLOW_PATHS, help_heading = "Authorization flags")]
    pub authorization_always_allow_paths: Vec<String>,

    /// The duration to cache 'authorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s", value_parser = go_duration, help_heading = "Authorization flags")]
    pub authorization_webhook_cache_authorized_ttl: Duration,

    /// The duration to cache 'unauthorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s", value_parser = go_duration, help_heading = "Authorization flags")]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
}

/// The clients reviews go through: the kubeconfigs' when given, else the controllers' connection.
#[derive(Clone)]
pub struct DelegationClients {
    pub authentication: kube::Client,
    pub authorization: kube::Client,
}

impl std::fmt::Debug for DelegationClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegationClients").finish_non_exhaustive()
    }
}

impl ServingFlags {
    /// `None` when `--secure-port=0`.
    pub fn config(&self, clients: &DelegationClients) -> Option<Config> {
        if self.secure_port == 0 {
            return None;
        }
        let mut c = Config::new(SocketAddr::new(self.bind_address, self.secure_port));
        c.cert_file.clone_from(&self.tls_cert_file);
        c.key_file.clone_from(&self.tls_private_key_file);
        c.cert_dir = self.cert_dir.clone().filter(|d| !d.as_os_str().is_empty());
        c.min_version = self.tls_min_version.clone().filter(|v| !v.is_empty());
        c.cipher_suites = self
            .tls_cipher_suites
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        c.client_ca = match (&self.client_ca_file, self.authentication_skip_lookup) {
            (Some(f), _) if !f.as_os_str().is_empty() => Some(ClientCaSource::File(f.clone())),
            (_, false) => Some(ClientCaSource::ConfigMap(clients.authentication.clone())),
            (_, true) => None,
        };
        c.token_reviewer = Some(Arc::new(clients.authentication.clone()));
        c.token_cache_ttl = self.authentication_token_webhook_cache_ttl;
        c.access_reviewer = Some(Arc::new(clients.authorization.clone()));
        c.always_allow_paths = self
            .authorization_always_allow_paths
            .iter()
            .filter(|p| !p.is_empty())
            .cloned()
            .collect();
        c.authorized_ttl = self.authorization_webhook_cache_authorized_ttl;
        c.unauthorized_ttl = self.authorization_webhook_cache_unauthorized_ttl;
        Some(c)
    }
}

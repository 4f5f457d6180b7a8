//! Client certificates, verified against the client CA when a request is served.
//!
//! The TLS handshake only checks that the client holds the key of the certificate it sent
//! ([`crate::handshake::DeferredClientCertVerifier`]); whether a CA vouches for it is decided here,
//! per request, as the API server's x509 authenticator does. So an expired or foreign certificate
//! gets a 401 naming the reason, not a TLS alert, and the CA bundle can change without a restart
//! (it follows the `extension-apiserver-authentication` ConfigMap). The user is the subject's
//! common name, its groups the subject's organizations.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, TrustAnchor, UnixTime, pem::PemObject as _};
use x509_parser::prelude::{FromDer as _, X509Certificate};

use super::{AuthnError, UserInfo};

/// The certificates a client presented on its connection, leaf first; put into every request's
/// extensions by the acceptor.
#[derive(Debug, Clone)]
pub struct PeerCertificates(pub Arc<Vec<CertificateDer<'static>>>);

/// A parsed CA bundle: what client certificates are checked against.
#[derive(Debug, Clone)]
pub struct ClientCa {
    anchors: Vec<TrustAnchor<'static>>,
    /// SHA-256 of the PEM it was read from, to tell a changed bundle from a re-read one.
    fingerprint: Vec<u8>,
}

impl ClientCa {
    /// Parses a PEM bundle; every certificate in it is a trust anchor.
    pub fn from_pem(pem: &[u8]) -> Result<ClientCa, String> {
        let mut anchors = Vec::new();
        for der in CertificateDer::pem_slice_iter(pem) {
            let der = der.map_err(|e| format!("reading PEM: {e}"))?;
            let anchor =
                webpki::anchor_from_trusted_cert(&der).map_err(|e| format!("not a CA certificate: {e}"))?;
            anchors.push(anchor.to_owned());
        }
        if anchors.is_empty() {
            return Err("no certificate in the bundle".into());
        }
        let fingerprint = ring::digest::digest(&ring::digest::SHA256, pem).as_ref().to_vec();
        Ok(ClientCa { anchors, fingerprint })
    }

    pub fn fingerprint(&self) -> &[u8] {
        &self.fingerprint
    }

    pub fn len(&self) -> usize {
        self.anchors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.anchors.is_empty()
    }

    /// The user a client certificate chain stands for, if this CA signed it, it is valid at `now`,
    /// and it may be used for client authentication (no extended key usage, or clientAuth).
    pub fn verify(&self, chain: &[CertificateDer<'static>], now: UnixTime) -> Result<UserInfo, AuthnError> {
        let (leaf, intermediates) = chain
            .split_first()
            .ok_or_else(|| AuthnError::Certificate("no certificate".into()))?;
        // Parsed once: the subject names the certificate in a refusal and the user on success.
        let (_, cert) = X509Certificate::from_der(leaf)
            .map_err(|e| AuthnError::Certificate(format!("unparseable client certificate: {e}")))?;
        let failed = |e: webpki::Error| {
            AuthnError::Certificate(format!(
                "verifying certificate subject {:?} failed: {e}",
                cert.subject().to_string()
            ))
        };
        let ee = webpki::EndEntityCert::try_from(leaf).map_err(failed)?;
        ee.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &self.anchors,
            intermediates,
            now,
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .map_err(failed)?;
        let name = cert
            .subject()
            .iter_common_name()
            .filter_map(|cn| cn.as_str().ok())
            .last()
            .unwrap_or_default()
            .to_owned();
        let groups = cert
            .subject()
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_owned))
            .collect();
        Ok(UserInfo {
            name,
            groups,
            ..UserInfo::default()
        })
    }
}

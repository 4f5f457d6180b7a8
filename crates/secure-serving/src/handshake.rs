//! The TLS handshake's side of client certificates: ask for one, require nothing.
//!
//! Go's `tls.RequestClientCert`, which kube-controller-manager's server uses once a client CA is
//! configured: a client may present a certificate, and the handshake proves it holds the key, but
//! whether the certificate is trusted is decided per request by [`crate::authn::ClientCa`]. rustls'
//! `WebPkiClientVerifier` would refuse an untrusted certificate with a TLS alert instead of the
//! 401 upstream answers, and could not follow a CA bundle that changes.

use rustls::{
    DigitallySignedStruct, DistinguishedName, SignatureScheme,
    client::danger::HandshakeSignatureValid,
    crypto::WebPkiSupportedAlgorithms,
    pki_types::{CertificateDer, UnixTime},
    server::danger::{ClientCertVerified, ClientCertVerifier},
};

#[derive(Debug)]
pub struct DeferredClientCertVerifier {
    algorithms: WebPkiSupportedAlgorithms,
}

impl DeferredClientCertVerifier {
    pub fn new(provider: &rustls::crypto::CryptoProvider) -> Self {
        DeferredClientCertVerifier {
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl ClientCertVerifier for DeferredClientCertVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

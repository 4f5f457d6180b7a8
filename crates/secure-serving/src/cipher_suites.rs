//! `--tls-min-version` and `--tls-cipher-suites`, with the names kube-controller-manager takes
//! (Go's `crypto/tls` constants, k8s.io/component-base `cli/flag/ciphersuites_flag.go`).
//!
//! rustls implements TLS 1.2 and 1.3 and only AEAD suites with forward secrecy. So:
//! `VersionTLS10`/`VersionTLS11` are accepted and serve TLS 1.2 and up (logged); a Go suite rustls
//! lacks (CBC, RC4, 3DES, static RSA key exchange: all on Go's insecure list but two) is skipped
//! with a warning; a name Go does not know is an error, as upstream. TLS 1.3 suites are always on,
//! as in Go, where the flag only restricts TLS 1.2.

use rustls::{CipherSuite, SupportedCipherSuite, SupportedProtocolVersion, version};

/// Go's TLS 1.2 suites that rustls does not implement.
pub const GO_SUITES_NOT_IN_RUSTLS: &[&str] = &[
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
];

/// The protocol versions served for a `--tls-min-version` value (empty: Go's server default, 1.2).
pub fn versions_from(min: Option<&str>) -> Result<&'static [&'static SupportedProtocolVersion], String> {
    static ALL: &[&SupportedProtocolVersion] = &[&version::TLS13, &version::TLS12];
    static ONLY_13: &[&SupportedProtocolVersion] = &[&version::TLS13];
    match min.unwrap_or("") {
        "" | "VersionTLS12" => Ok(ALL),
        "VersionTLS10" | "VersionTLS11" => {
            tracing::warn!(min = ?min, "TLS 1.0 and 1.1 are not served (rustls); serving TLS 1.2 and 1.3");
            Ok(ALL)
        }
        "VersionTLS13" => Ok(ONLY_13),
        other => Err(format!(
            "unknown tls version {other:?}; allowed values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13"
        )),
    }
}

/// The suites of `available` a `--tls-cipher-suites` list leaves on (all when the list is empty).
pub fn suites_from(
    names: &[String],
    available: &[SupportedCipherSuite],
) -> Result<Vec<SupportedCipherSuite>, String> {
    if names.is_empty() {
        return Ok(available.to_vec());
    }
    let mut wanted: Vec<CipherSuite> = Vec::new();
    for name in names {
        // Go names the ChaCha20 suites with and without their hash.
        let canonical = match name.as_str() {
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305" => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
            n => n,
        };
        if let Some(s) = available.iter().find(|s| format!("{:?}", s.suite()) == canonical) {
            wanted.push(s.suite());
        } else if GO_SUITES_NOT_IN_RUSTLS.contains(&canonical) {
            tracing::warn!(suite = %name, "cipher suite not implemented by rustls; skipped");
        } else {
            return Err(format!("Cipher suite {name} not supported or doesn't exist"));
        }
    }
    let out: Vec<SupportedCipherSuite> = available
        .iter()
        .filter(|s| s.version() == &version::TLS13 || wanted.contains(&s.suite()))
        .copied()
        .collect();
    if !out.iter().any(|s| s.version() == &version::TLS12) {
        tracing::warn!("no TLS 1.2 cipher suite left by --tls-cipher-suites; serving TLS 1.3 only");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[SupportedCipherSuite]) -> Vec<String> {
        v.iter().map(|s| format!("{:?}", s.suite())).collect()
    }

    #[test]
    fn go_names_select_tls12_suites_and_tls13_stays_on() {
        let all = rustls::crypto::ring::default_provider().cipher_suites;
        let got = suites_from(
            &[
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into(),
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305".into(),
                "TLS_RSA_WITH_AES_128_CBC_SHA".into(),
            ],
            &all,
        )
        .unwrap();
        let got = names(&got);
        assert!(got.contains(&"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_owned()));
        assert!(got.contains(&"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256".to_owned()));
        assert!(got.contains(&"TLS13_AES_128_GCM_SHA256".to_owned()), "{got:?}");
        assert!(!got.contains(&"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384".to_owned()));
        let err = suites_from(&["TLS_BOGUS".into()], &all).unwrap_err();
        assert_eq!(err, "Cipher suite TLS_BOGUS not supported or doesn't exist");
        assert_eq!(suites_from(&[], &all).unwrap().len(), all.len());
    }

    #[test]
    fn min_versions_take_gos_names() {
        assert_eq!(versions_from(None).unwrap().len(), 2);
        assert_eq!(versions_from(Some("VersionTLS10")).unwrap().len(), 2);
        assert_eq!(versions_from(Some("VersionTLS13")).unwrap().len(), 1);
        assert!(
            versions_from(Some("TLS1.2"))
                .unwrap_err()
                .contains("unknown tls version")
        );
    }
}

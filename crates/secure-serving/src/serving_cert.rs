//! The serving certificate: `--tls-cert-file`/`--tls-private-key-file`, or one generated at start.
//!
//! As kube-controller-manager: without the two files it generates a self-signed certificate for
//! `localhost` and 127.0.0.1 (plus the bind address when it is a specific one), valid for a year.
//! With `--cert-dir` it is written there as `kcm-rs.crt`/`kcm-rs.key` and reused on the next start
//! (KCM's pair is named `kube-controller-manager`); without, it lives in memory only, KCM's default.

use std::{
    net::IpAddr,
    path::{Path, PathBuf},
};

use rcgen::{CertificateParams, DnType, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _};

use crate::error::ServingError;

/// The file names under `--cert-dir`.
pub const PAIR_NAME: &str = "kcm-rs";
/// How long a generated certificate is valid (client-go's `GenerateSelfSignedCertKey`: one year).
pub const SELF_SIGNED_VALIDITY_DAYS: i64 = 365;

/// A certificate chain and its key, as rustls takes them.
#[derive(Debug)]
pub struct ServingCert {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// Where it came from, for the start-up log.
    pub origin: String,
}

/// Reads or makes the serving certificate.
pub fn load(
    cert_file: Option<&Path>,
    key_file: Option<&Path>,
    cert_dir: Option<&Path>,
    bind: IpAddr,
) -> Result<ServingCert, ServingError> {
    match (cert_file, key_file) {
        (Some(c), Some(k)) => read_pair(c, k),
        (None, None) => match cert_dir {
            Some(dir) => {
                let (c, k) = (
                    dir.join(format!("{PAIR_NAME}.crt")),
                    dir.join(format!("{PAIR_NAME}.key")),
                );
                if c.exists() && k.exists() {
                    return read_pair(&c, &k);
                }
                let (cert_pem, key_pem) = generate(bind)?;
                write(dir, &c, cert_pem.as_bytes(), 0o644)?;
                write(dir, &k, key_pem.as_bytes(), 0o600)?;
                let origin = format!("self-signed, written to {} and {}", c.display(), k.display());
                from_pem(cert_pem.as_bytes(), key_pem.as_bytes(), origin, &c, &k)
            }
            None => {
                let (cert_pem, key_pem) = generate(bind)?;
                let generated = Path::new("(generated)");
                from_pem(
                    cert_pem.as_bytes(),
                    key_pem.as_bytes(),
                    "self-signed, in memory".into(),
                    generated,
                    generated,
                )
            }
        },
        _ => Err(ServingError::HalfAPair),
    }
}

/// A self-signed certificate for localhost, 127.0.0.1 and `bind`: (certificate PEM, key PEM).
pub fn generate(bind: IpAddr) -> Result<(String, String), ServingError> {
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    if !bind.is_unspecified() && !bind.is_loopback() {
        names.push(bind.to_string());
    }
    let mut params = CertificateParams::new(names)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    params
        .distinguished_name
        .push(DnType::CommonName, format!("localhost@{now}"));
    let today = rcgen::date_time_ymd(1970, 1, 1) + std::time::Duration::from_secs(now - now % 86_400);
    params.not_before = today;
    params.not_after =
        today + std::time::Duration::from_secs(86_400 * SELF_SIGNED_VALIDITY_DAYS.unsigned_abs());
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn read_pair(cert: &Path, key: &Path) -> Result<ServingCert, ServingError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| ServingError::ReadPem {
            path: p.to_owned(),
            reason: e.to_string(),
        })
    };
    from_pem(
        &read(cert)?,
        &read(key)?,
        format!("{} and {}", cert.display(), key.display()),
        cert,
        key,
    )
}

fn from_pem(
    cert_pem: &[u8],
    key_pem: &[u8],
    origin: String,
    cert_path: &Path,
    key_path: &Path,
) -> Result<ServingCert, ServingError> {
    let bad = |path: &Path, reason: String| ServingError::ReadPem {
        path: path.to_owned(),
        reason,
    };
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(cert_path, format!("certificate: {e}")))?;
    if chain.is_empty() {
        return Err(bad(cert_path, "no certificate in the file".into()));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| bad(key_path, format!("private key: {e}")))?;
    Ok(ServingCert { chain, key, origin })
}

fn write(dir: &Path, path: &PathBuf, data: &[u8], mode: u32) -> Result<(), ServingError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let fail = |source| ServingError::WriteCert {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(fail)?;
    std::io::Write::write_all(&mut f, data).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_certificate_is_reused_from_the_cert_dir() {
        let dir = std::env::temp_dir().join(format!("kcm-rs-cert-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = load(None, None, Some(&dir), "0.0.0.0".parse().unwrap()).unwrap();
        let second = load(None, None, Some(&dir), "0.0.0.0".parse().unwrap()).unwrap();
        assert_eq!(first.chain, second.chain);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.join("kcm-rs.key")).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn half_a_pair_and_unreadable_files_name_the_problem() {
        let err = load(
            Some(Path::new("/nope.crt")),
            None,
            None,
            "0.0.0.0".parse().unwrap(),
        )
        .unwrap_err();
        assert!(matches!(err, ServingError::HalfAPair));
        let err = load(
            Some(Path::new("/nope.crt")),
            Some(Path::new("/nope.key")),
            None,
            "0.0.0.0".parse().unwrap(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nope.crt"), "{err}");
    }
}

//! Talking to an endpoint server over HTTPS the way scrapers and probes do (curl, with a token or a
//! client certificate), and an upstream kube-controller-manager serving beside kcm-rs to compare
//! answers with.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command},
};

use rcgen::{CertificateParams, DnType, Issuer, KeyPair};

use crate::{Cluster, free_port};

/// An upstream kube-controller-manager serving with delegated authentication and authorization
/// (running one harmless, off-by-default controller), killed when dropped.
#[derive(Debug)]
pub struct UpstreamKcm {
    child: Child,
    pub port: u16,
}

impl UpstreamKcm {
    pub fn start(cluster: &Cluster) -> UpstreamKcm {
        let env = std::fs::read_to_string(cluster.run_dir.join("cluster.env")).expect("cluster.env");
        let bin = env
            .lines()
            .find_map(|l| l.strip_prefix("KCM_RS_KUBE_BIN="))
            .expect("KCM_RS_KUBE_BIN in cluster.env")
            .trim_matches('"')
            .to_owned();
        let kubeconfig = cluster.run_dir.join("kubeconfig").display().to_string();
        let port = free_port();
        let log =
            std::fs::File::create(cluster.run_dir.join("logs/secure-serving-upstream-kcm.log")).expect("log");
        let child = Command::new(Path::new(&bin).join("kube-controller-manager"))
            .args([
                format!("--kubeconfig={kubeconfig}"),
                format!("--authentication-kubeconfig={kubeconfig}"),
                format!("--authorization-kubeconfig={kubeconfig}"),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                format!("--secure-port={port}"),
                "--controllers=bootstrap-signer-controller".into(),
                // As the harness runs kcm-rs, so that /configz can be compared.
                "--kube-api-qps=100".into(),
                "--kube-api-burst=200".into(),
            ])
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("starting upstream kube-controller-manager");
        UpstreamKcm { child, port }
    }
}

impl Drop for UpstreamKcm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a request authenticates.
#[derive(Debug, Clone, Default)]
pub struct Creds {
    pub token: Option<String>,
    /// Certificate and key files.
    pub cert: Option<(PathBuf, PathBuf)>,
}

/// GET over HTTPS without checking the server's certificate: (status, body).
pub fn https_get(port: u16, path: &str, creds: &Creds) -> (u16, String) {
    curl_get(&format!("https://127.0.0.1:{port}{path}"), creds)
}

/// PUT `body` over HTTPS without checking the server's certificate: (status, body).
pub fn https_put(port: u16, path: &str, body: &str, creds: &Creds) -> (u16, String) {
    curl(
        &["-X", "PUT", "--data-binary", body],
        &format!("https://127.0.0.1:{port}{path}"),
        creds,
    )
}

/// GET over HTTPS with `Accept: accept`: (status, content type, body).
pub fn https_get_accepting(port: u16, path: &str, creds: &Creds, accept: &str) -> (u16, String, String) {
    let (code, text) = curl(
        &[
            "-H",
            &format!("Accept: {accept}"),
            "-w",
            "\n%{content_type}\n%{http_code}",
        ],
        &format!("https://127.0.0.1:{port}{path}"),
        creds,
    );
    let (body, content_type) = text.rsplit_once('\n').unwrap_or(("", ""));
    (code, content_type.to_owned(), body.to_owned())
}

/// A plain-HTTP request to the HTTPS port: (status, body).
pub fn plain_http_get(port: u16) -> (u16, String) {
    curl_get(&format!("http://127.0.0.1:{port}/metrics"), &Creds::default())
}

/// GET `url` with curl, at most 10 s: (status, body); status 0 when nothing answered.
fn curl_get(url: &str, creds: &Creds) -> (u16, String) {
    curl(&[], url, creds)
}

/// curl `url` with `args` before it, at most 10 s: (status, body); status 0 when nothing answered.
fn curl(args: &[&str], url: &str, creds: &Creds) -> (u16, String) {
    let mut cmd = curl_with(creds);
    cmd.args(["-o", "-", "-w", "\n%{http_code}"]);
    cmd.args(args);
    let out = cmd.arg(url).output().expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// GET over HTTPS, for the answer's headers: (status, the value of each header in `names`, `-`
/// where the answer has none). Names are matched without regard to case, as HTTP has them.
pub fn https_headers(port: u16, path: &str, creds: &Creds, names: &[&str]) -> (u16, Vec<String>) {
    let out = curl_with(creds)
        .args(["-o", "/dev/null", "-D", "-"])
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let fields: Vec<(String, &str)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim()))
        .collect();
    let values = names
        .iter()
        .map(|name| {
            fields
                .iter()
                .rev()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map_or_else(|| "-".to_owned(), |(_, v)| (*v).to_owned())
        })
        .collect();
    (status, values)
}

/// Two GETs of `path` in one curl run over HTTP/2, which sends the second on the first's connection
/// if the server keeps it open: each one's status and the connections it opened (0: reused).
pub fn two_h2_gets(port: u16, path: &str, creds: &Creds) -> Vec<(u16, u32)> {
    let url = format!("https://127.0.0.1:{port}{path}");
    let out = curl_with(creds)
        .args(["--http2", "-o", "/dev/null", "-o", "/dev/null"])
        .args(["-w", "%{http_code} %{num_connects}\n"])
        .args([&url, &url])
        .output()
        .expect("curl");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(code, connects)| (code.parse().unwrap_or(0), connects.parse().unwrap_or(u32::MAX)))
        .collect()
}

/// curl, silent, at most 10 s, not checking the server's certificate, with `creds`.
fn curl_with(creds: &Creds) -> Command {
    let mut cmd = Command::new("curl");
    cmd.args(["-sk", "--max-time", "10"]);
    if let Some(t) = &creds.token {
        cmd.arg("-H").arg(format!("Authorization: Bearer {t}"));
    }
    if let Some((c, k)) = &creds.cert {
        cmd.arg("--cert").arg(c).arg("--key").arg(k);
    }
    cmd
}

/// A body as compared: a `Status` as JSON (upstream pretty-prints it for curl), anything else as
/// trimmed text.
pub fn normalized(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body).map_or_else(|_| body.trim().to_owned(), |v| v.to_string())
}

/// Writes a client certificate for `cn` in `orgs`, signed by `issuer`, valid between the years,
/// and its key, into `dir`.
pub fn client_cert(
    dir: &Path,
    name: &str,
    cn: &str,
    orgs: &[&str],
    years: (i32, i32),
    issuer: &Issuer<'_, KeyPair>,
) -> (PathBuf, PathBuf) {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
    p.distinguished_name.push(DnType::CommonName, cn);
    for o in orgs {
        p.distinguished_name.push(DnType::OrganizationName, *o);
    }
    p.not_before = rcgen::date_time_ymd(years.0, 1, 1);
    p.not_after = rcgen::date_time_ymd(years.1, 1, 1);
    let key = KeyPair::generate().expect("key");
    let cert = p.signed_by(&key, issuer).expect("signing");
    let (c, k) = (dir.join(format!("{name}.crt")), dir.join(format!("{name}.key")));
    std::fs::write(&c, cert.pem()).expect("writing a certificate");
    std::fs::write(&k, key.serialize_pem()).expect("writing a key");
    (c, k)
}

pub fn cluster_ca(cluster: &Cluster) -> Issuer<'static, KeyPair> {
    let pki = cluster.run_dir.join("pki");
    let key =
        KeyPair::from_pem(&std::fs::read_to_string(pki.join("ca.key")).expect("ca.key")).expect("CA key");
    Issuer::from_ca_cert_pem(&std::fs::read_to_string(pki.join("ca.crt")).expect("ca.crt"), key).expect("CA")
}

pub fn a_ca(cn: &str) -> (Issuer<'static, KeyPair>, String) {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, cn);
    let key = KeyPair::generate().expect("key");
    let pem = p.self_signed(&key).expect("CA").pem();
    (Issuer::new(p, key), pem)
}

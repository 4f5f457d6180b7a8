//! kcm-rs reaches the API server through the proxy client-go would use: a kubeconfig cluster's
//! `proxy-url`, else `HTTPS_PROXY` unless the server is a loopback address.
//!
//! The proxy is an HTTP CONNECT proxy in this test process, counting its tunnels; it resolves
//! `kube-apiserver.proxy.test` to the API server's loopback address, as a corporate proxy resolves
//! names the client cannot. kcm-rs runs read-only (`--shadow`, safe beside upstream in reference mode)
//! on one namespace, and must see a Deployment there through the tunnel: lists, watches and the
//! shadow comparison all go through it.

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::apps::v1::Deployment;
use kcm_rs_e2e::{Cluster, DEFAULT_WAIT, KcmRs, TestNamespace, wait_for, with_namespace};
use kube::api::PostParams;
use parking_lot::Mutex;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The name the proxy alone can resolve.
const PROXY_ONLY_HOST: &str = "kube-apiserver.proxy.test";

/// Each tunnel's CONNECT target and `Proxy-Authorization`, if any.
type Tunnels = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Starts the proxy on a free loopback port, on a thread of its own: the tests block their own
/// thread (curl), which must not stall the tunnels.
fn connect_proxy() -> (u16, Tunnels) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let tunnels = Tunnels::default();
    let seen = tunnels.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(tunnel(client, seen.clone()));
            }
        });
    });
    (port, tunnels)
}

/// Serves one CONNECT request on `client`, then copies both ways.
async fn tunnel(mut client: tokio::net::TcpStream, seen: Tunnels) {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let Ok(byte) = client.read_u8().await else { return };
        head.push(byte);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let Some(target) = head.strip_prefix("CONNECT ").and_then(|r| r.split(' ').next()) else {
        let _ = client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n").await;
        return;
    };
    let auth = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("proxy-authorization")
            .then(|| value.trim().to_owned())
    });
    seen.lock().push((target.to_owned(), auth));
    let address = target.replace(PROXY_ONLY_HOST, "127.0.0.1");
    let Ok(mut server) = tokio::net::TcpStream::connect(&address).await else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
        return;
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_ok()
    {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}

/// The cluster's admin kubeconfig with `edit` applied to its cluster entry's lines, written beside it.
fn kubeconfig_with(cluster: &Cluster, name: &str, edit: impl Fn(&str) -> String) -> std::path::PathBuf {
    let admin = std::fs::read_to_string(cluster.run_dir.join("kubeconfig")).unwrap();
    let text: String = admin.lines().map(|l| edit(l) + "\n").collect();
    let path = cluster.run_dir.join(format!("kubeconfig-{name}"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The API server's `127.0.0.1:port`, from the admin kubeconfig.
fn api_address(cluster: &Cluster) -> String {
    let admin = std::fs::read_to_string(cluster.run_dir.join("kubeconfig")).unwrap();
    admin
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: https://"))
        .expect("server in kubeconfig")
        .to_owned()
}

/// kcm-rs in shadow mode on `ns` sees a Deployment created there: its queue took the key, and it
/// disagreed with upstream on nothing.
async fn sees_a_deployment(kcm: &KcmRs, ns: &TestNamespace) {
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "through-proxy"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "through-proxy"}},
            "template": {
                "metadata": {"labels": {"app": "through-proxy"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    }))
    .unwrap();
    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    wait_for("kcm-rs to queue the Deployment", DEFAULT_WAIT, || async {
        let (_, metrics) = kcm.http_get("/metrics");
        let adds = metrics
            .lines()
            .find_map(|l| l.strip_prefix("workqueue_adds_total{name=\"deployment\"} "))
            .and_then(|v| v.parse::<f64>().ok());
        match adds {
            Some(n) if n >= 1.0 => Ok(()),
            other => Err(format!("workqueue_adds_total of deployment: {other:?}")),
        }
    })
    .await;
    let (code, body) = kcm.http_get("/debug/shadow");
    assert_eq!(code, 200, "{body}");
    assert!(
        !body.contains(&format!("\"{}/", ns.name)),
        "shadow mode disagreed: {body}"
    );
}

fn shadow_args(ns: &TestNamespace) -> Vec<String> {
    vec![
        "--controllers=replicaset,deployment".into(),
        "--shadow".into(),
        format!("--namespace={}", ns.name),
    ]
}

#[tokio::test]
async fn a_kubeconfig_proxy_url_carries_every_request() {
    let cluster = Cluster::connect().await;
    with_namespace(cluster.clone(), "proxy-url", |ns| async move {
        let (port, tunnels) = connect_proxy();
        let kubeconfig = kubeconfig_with(&cluster, "proxy-url", |line| {
            match line.trim_start().strip_prefix("server: ") {
                Some(_) => format!("{line}\n    proxy-url: http://kcm%2Drs:s3cret@127.0.0.1:{port}"),
                None => line.to_owned(),
            }
        });
        let args = shadow_args(&ns);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let kcm = KcmRs::spawn(&cluster, "proxy-url", &args, Some(kubeconfig));
        kcm.wait_log("caches synced", Duration::from_secs(60)).await;
        sees_a_deployment(&kcm, &ns).await;
        let tunnels = tunnels.lock().clone();
        // base64("kcm-rs:s3cret"): the user information percent-decoded, as client-go sends it.
        let expected = (
            api_address(&cluster),
            Some("Basic a2NtLXJzOnMzY3JldA==".to_owned()),
        );
        assert!(!tunnels.is_empty(), "no tunnel opened");
        assert!(tunnels.iter().all(|t| *t == expected), "{tunnels:?}");
    })
    .await;
}

/// `HTTPS_PROXY` carries a server only the proxy can resolve; it leaves a loopback server alone, and
/// is not even read for one.
#[tokio::test]
async fn https_proxy_from_the_environment_spares_loopback_servers() {
    let cluster = Cluster::connect().await;
    with_namespace(cluster.clone(), "https-proxy", |ns| async move {
        let (port, tunnels) = connect_proxy();
        let proxy = format!("http://127.0.0.1:{port}");
        let env = [
            ("HTTPS_PROXY", proxy.as_str()),
            ("NO_PROXY", "example.com,10.0.0.0/8"),
        ];
        let args = shadow_args(&ns);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();

        // The named server: through the proxy. The certificate names 127.0.0.1, as tls-server-name says.
        let named = kubeconfig_with(&cluster, "https-proxy", |line| {
            match line.trim_start().strip_prefix("server: ") {
                Some(_) => format!(
                    "{}\n    tls-server-name: 127.0.0.1",
                    line.replace("127.0.0.1", PROXY_ONLY_HOST)
                ),
                None => line.to_owned(),
            }
        });
        let kcm = KcmRs::spawn_env(&cluster, "https-proxy", &args, Some(named), &env);
        kcm.wait_log("caches synced", Duration::from_secs(60)).await;
        sees_a_deployment(&kcm, &ns).await;
        let through = tunnels.lock().clone();
        let target = api_address(&cluster).replace("127.0.0.1", PROXY_ONLY_HOST);
        assert!(!through.is_empty(), "no tunnel opened");
        assert!(
            through.iter().all(|(t, auth)| *t == target && auth.is_none()),
            "{through:?}"
        );
        drop(kcm);

        // The loopback server: direct, as client-go goes, with the same environment.
        tunnels.lock().clear();
        let kcm = KcmRs::spawn_env(&cluster, "https-proxy-loopback", &args, None, &env);
        kcm.wait_log("caches synced", Duration::from_secs(60)).await;
        assert_eq!(
            *tunnels.lock(),
            vec![],
            "a loopback server went through the proxy"
        );
        drop(kcm);

        // Nor is a proxy URL that does not parse read for it (kube's kubeconfig loader would fail
        // on one).
        let garbage = [("HTTPS_PROXY", "http://pro xy:3128")];
        let kcm = KcmRs::spawn_env(&cluster, "https-proxy-garbage", &args, None, &garbage);
        kcm.wait_log("caches synced", Duration::from_secs(60)).await;
    })
    .await;
}

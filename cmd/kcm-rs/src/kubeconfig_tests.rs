//! Which configuration the `--kubeconfig` and `--master` flags give, as client-go's
//! `BuildConfigFromFlags` gives KCM its own.

use super::*;

fn args(flags: &[&str]) -> Args {
    Args::try_parse_flags_from(std::iter::once("kcm-rs").chain(flags.iter().copied())).unwrap()
}

const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: the-token}
"#;

/// [`KUBECONFIG`] in a file of its own, named after `test`; the caller removes it.
fn kubeconfig_file(test: &str) -> std::path::PathBuf {
    let file = std::env::temp_dir().join(format!("kcm-rs-kubeconfig-{test}-{}", std::process::id()));
    std::fs::write(&file, KUBECONFIG).unwrap();
    file
}

/// `--master` alone is the server and nothing more: no token from the pod, no user from a
/// kubeconfig of the environment.
#[tokio::test]
async fn master_alone_is_an_anonymous_client_of_that_server() {
    let c = config(&args(&["--master=https://api.example:6443"]))
        .await
        .unwrap();
    assert_eq!(
        c.cluster_url,
        "https://api.example:6443/".parse::<http::Uri>().unwrap()
    );
    assert!(c.auth_info.token.is_none(), "{:?}", c.auth_info);
    assert!(c.auth_info.client_certificate_data.is_none());
    assert!(c.root_cert.is_none());
    assert!(!c.accept_invalid_certs);
}

/// With a kubeconfig, `--master` replaces its server and keeps its credentials.
#[tokio::test]
async fn master_overrides_the_kubeconfigs_server_only() {
    let file = kubeconfig_file("override");
    let path = file.to_str().unwrap();
    let c = config(&args(&[
        "--kubeconfig",
        path,
        "--master=https://api.example:6443",
    ]))
    .await
    .unwrap();
    assert_eq!(
        c.cluster_url,
        "https://api.example:6443/".parse::<http::Uri>().unwrap()
    );
    assert!(c.auth_info.token.is_some(), "the kubeconfig's user is kept");
    let c = config(&args(&["--kubeconfig", path])).await.unwrap();
    assert_eq!(
        c.cluster_url,
        "https://10.0.0.1:6443/".parse::<http::Uri>().unwrap()
    );
    std::fs::remove_file(&file).unwrap();
}

#[tokio::test]
async fn a_master_that_is_not_a_url_is_refused() {
    let e = config(&args(&["--master=http://a b"])).await.unwrap_err();
    assert!(
        e.to_string().starts_with("--master \"http://a b\" is not a URL"),
        "{e}"
    );
}

/// A `host:port` gets the scheme client-go would give it: `http` with no TLS settings, `https`
/// with a kubeconfig's CA or `insecure-skip-tls-verify` (kube would otherwise panic on a URL with
/// no scheme).
#[tokio::test]
async fn a_host_and_port_get_the_scheme_their_tls_settings_call_for() {
    let c = config(&args(&["--master=127.0.0.1:8080"])).await.unwrap();
    assert_eq!(
        c.cluster_url,
        "http://127.0.0.1:8080/".parse::<http::Uri>().unwrap()
    );
    let c = config(&args(&["--master=localhost"])).await.unwrap();
    assert_eq!(c.cluster_url, "http://localhost/".parse::<http::Uri>().unwrap());
    let file = kubeconfig_file("tls");
    let c = config(&args(&[
        "--kubeconfig",
        file.to_str().unwrap(),
        "--master=10.0.0.2:6443",
    ]))
    .await
    .unwrap();
    assert_eq!(
        c.cluster_url,
        "https://10.0.0.2:6443/".parse::<http::Uri>().unwrap()
    );
    std::fs::remove_file(&file).unwrap();
    for no_host in ["/api", ":8080"] {
        assert!(
            config(&args(&[&format!("--master={no_host}")])).await.is_err(),
            "{no_host}"
        );
    }
}

/// A path is a proxy's prefix on a URL, and refused on a `host:port` (client-go's
/// `DefaultServerURL`: "host must be a URL or a host:port pair").
#[tokio::test]
async fn only_a_url_carries_a_path() {
    let c = config(&args(&["--master=https://proxy.example/k8s"]))
        .await
        .unwrap();
    assert_eq!(c.cluster_url.path(), "/k8s");
    for with_path in ["10.0.0.1:6443/k8s", "localhost/"] {
        let r = config(&args(&[&format!("--master={with_path}")])).await;
        match with_path {
            "localhost/" => assert!(r.is_ok(), "a bare `/` is no path"),
            _ => assert!(
                r.unwrap_err()
                    .to_string()
                    .contains("host must be a URL or a host:port pair"),
                "{with_path}"
            ),
        }
    }
}

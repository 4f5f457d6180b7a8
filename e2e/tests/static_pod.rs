//! The kubeadm recipe's static pod (deploy/kubeadm/kcm-rs.yaml), run by `podman kube play` from the
//! built image as a kubelet would run it from /etc/kubernetes/manifests, against the local control
//! plane with upstream KCM in replace mode. It reads a kubeconfig laid out as kubeadm's
//! controller-manager.conf (a client certificate for system:kube-controller-manager, signed by the
//! cluster CA) and holds only the rights of that user's bootstrap role plus deploy/kubeadm/rbac.yaml:
//! so this also checks that RBAC. It must win the Lease, answer `/readyz` and roll a Deployment out.
//! Prints the times from `kube play` to ready and to the rolled-out Deployment.
//!
//! What differs from a node: the two hostPaths point at a directory of the test's own, the port is a
//! free one (the file's 10357 could be taken on this machine) and the image is KCM_RS_IMAGE.

use std::{path::Path, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, coordination::v1::Lease};
use kcm_rs_e2e::{
    Cluster, Mode, ModeGuard,
    deployment_scenarios::deployment_manifest,
    free_port,
    podman::{https_status, podman, test_image},
    serving::{client_cert, cluster_ca},
    wait_for, with_namespace,
};
use kube::{Api, api::PostParams};
use serde_json::json;

/// The user kubeadm's controller-manager.conf authenticates as.
const KCM_USER: &str = "system:kube-controller-manager";
/// The Lease the manifest's kcm-rs elects its leader with (the flag's default).
const LEASE: &str = "kcm-rs";
const PAUSE: &str = "registry.k8s.io/pause:3.10";
/// How long the pod may take to lead and reconcile; the image suite's own budget.
const WAIT: Duration = Duration::from_secs(90);

fn deploy_file(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(rel)
        .display()
        .to_string()
}

/// The manifest with its host paths under `etc`, `port` for 10357 and `image`: each replacement must
/// hit, so a change to the file that this test no longer follows fails here instead of testing less.
fn render(manifest: &str, etc: &Path, port: u16, image: &str) -> String {
    let etc = etc.display();
    let mut out = manifest.to_owned();
    for (from, to, times) in [
        (
            "{path: /etc/kubernetes/controller-manager.conf,".to_owned(),
            format!("{{path: {etc}/controller-manager.conf,"),
            1,
        ),
        (
            "{path: /etc/kubernetes/pki,".to_owned(),
            format!("{{path: {etc}/pki,"),
            1,
        ),
        ("10357".to_owned(), port.to_string(), 3),
        ("image: kcm-rs:dev".to_owned(), format!("image: {image}"), 1),
    ] {
        assert_eq!(
            out.matches(&from).count(),
            times,
            "deploy/kubeadm/kcm-rs.yaml: expected {from:?} {times} time(s)"
        );
        out = out.replace(&from, &to);
    }
    out
}

/// kubeadm's controller-manager.conf, with the certificates as files under the mounted pki directory.
fn write_kubeadm_layout(cluster: &Cluster, etc: &Path) {
    let pki = etc.join("pki");
    std::fs::create_dir_all(&pki).expect("creating the pki directory");
    std::fs::copy(cluster.run_dir.join("pki/ca.crt"), pki.join("ca.crt")).expect("copying ca.crt");
    client_cert(
        &pki,
        "controller-manager",
        KCM_USER,
        &[],
        (2020, 2040),
        &cluster_ca(cluster),
    );
    let admin = std::fs::read_to_string(cluster.run_dir.join("kubeconfig")).expect("kubeconfig");
    let server = admin
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .expect("server in kubeconfig");
    let conf = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kubernetes\n  cluster:\n    server: {server}\n    certificate-authority: /etc/kubernetes/pki/ca.crt\nusers:\n- name: {KCM_USER}\n  user:\n    client-certificate: /etc/kubernetes/pki/controller-manager.crt\n    client-key: /etc/kubernetes/pki/controller-manager.key\ncontexts:\n- name: {KCM_USER}@kubernetes\n  context: {{cluster: kubernetes, user: {KCM_USER}}}\ncurrent-context: {KCM_USER}@kubernetes\n"
    );
    std::fs::write(etc.join("controller-manager.conf"), conf).expect("writing controller-manager.conf");
}

/// Takes the pod down however the test ends.
struct Played(String);

impl Drop for Played {
    fn drop(&mut self) {
        let _ = podman(&["kube", "down", &self.0]);
    }
}

#[tokio::test]
async fn disruptive_the_kubeadm_static_pod_leads_and_rolls_out_a_deployment() {
    let image = test_image();
    let cluster = Cluster::connect().await;
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    cluster.apply_shipped_rbac();
    let binding = deploy_file("kubeadm/rbac.yaml");
    cluster.kubectl(&["apply", "-f", &binding]);
    // A Lease left by an earlier holder would only delay this one by a lease duration.
    cluster.kubectl(&[
        "-n",
        "kube-system",
        "delete",
        "lease",
        LEASE,
        "--ignore-not-found",
    ]);

    let etc = cluster.run_dir.join("static-pod");
    let _ = std::fs::remove_dir_all(&etc);
    write_kubeadm_layout(&cluster, &etc);
    let port = free_port();
    let manifest = std::fs::read_to_string(deploy_file("kubeadm/kcm-rs.yaml")).expect("the manifest");
    let played = etc.join("kcm-rs.yaml");
    std::fs::write(&played, render(&manifest, &etc, port, &image)).expect("writing the manifest");
    let played = played.display().to_string();

    let started = tokio::time::Instant::now();
    let (ok, out) = podman(&["kube", "play", "--replace", &played]);
    assert!(ok, "podman kube play failed:\n{out}");
    let _down = Played(played.clone());
    let logs = || podman(&["logs", "kcm-rs-kcm-rs"]).1;
    wait_for("the static pod's /readyz over HTTPS", WAIT, || {
        let code = https_status(port, "/readyz");
        async move {
            if code == "200" {
                Ok(())
            } else {
                Err(format!("{code}; logs:\n{}", logs()))
            }
        }
    })
    .await;
    println!(
        "kube play to ready (/readyz 200): {} ms",
        started.elapsed().as_millis()
    );

    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-system");
    wait_for("the static pod to hold the Lease", WAIT, || {
        let leases = leases.clone();
        async move {
            let l = leases.get(LEASE).await.map_err(|e| e.to_string())?;
            match l.spec.and_then(|s| s.holder_identity) {
                Some(h) if !h.is_empty() => Ok(()),
                other => Err(format!("holder {other:?}")),
            }
        }
    })
    .await;

    with_namespace(cluster.clone(), "static-pod", |ns| async move {
        ns.api::<Deployment>()
            .create(
                &PostParams::default(),
                &deployment_manifest("web", 2, PAUSE, json!({})),
            )
            .await
            .expect("creating the Deployment");
        ns.deployment_rolled_out("web", 2, WAIT).await;
        println!(
            "kube play to a rolled-out Deployment: {} ms",
            started.elapsed().as_millis()
        );
    })
    .await;
    let log = logs();
    assert!(!log.contains("panicked"), "{log}");
    let _ = cluster.try_kubectl(&["delete", "-f", &binding, "--ignore-not-found"]);
}

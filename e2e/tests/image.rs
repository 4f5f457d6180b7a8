//! The container image (hack/image.sh, tag kcm-rs:dev or KCM_RS_IMAGE), run with podman as a
//! hardened Pod would run it: read-only root filesystem, uid 65532, every capability dropped, host
//! network, the kubeconfig mounted read-only. It must win the Lease, reconcile a ReplicaSet on the
//! local control plane, answer its probes over HTTPS, and exit 0 on SIGTERM within the grace period.
//! Prints the start-to-ready time.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kcm_rs_e2e::{
    Cluster, Mode, ModeGuard, free_port,
    podman::{https_status, podman, test_image},
    wait_for, with_namespace,
};
use kube::Api;

/// `podman stop`'s grace period before SIGKILL (a Pod's default terminationGracePeriodSeconds).
const GRACE_SECONDS: u64 = 30;

/// The container's name: one per control plane (run directory), so that runs beside each other on
/// one machine (hack/e2e.sh's lanes, two checkouts) do not remove each other's container.
fn container_name(cluster: &Cluster) -> String {
    let run = cluster
        .run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    format!("kcm-rs-image-e2e-{}", run.unwrap_or_default())
}

/// Removes the container when the test ends, however it ends.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman(&["rm", "-f", "-t", "0", &self.0]);
    }
}

#[tokio::test]
async fn disruptive_the_image_runs_hardened_leads_reconciles_and_stops_cleanly() {
    let image = test_image();
    let cluster = Cluster::connect().await;
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    with_namespace(cluster.clone(), "image", |ns| async move {
        let cluster = &ns.cluster;
        let name = container_name(cluster);
        let name = name.as_str();
        let _ = podman(&["rm", "-f", "-t", "0", name]);
        let run = cluster.run_dir.display().to_string();
        let port = free_port();
        let lease_name = format!("kcm-rs-image-{}", ns.name);
        let started = tokio::time::Instant::now();
        let (ok, out) = podman(&[
            "run",
            "-d",
            "--name",
            name,
            "--read-only",
            "--user",
            "65532:65532",
            "--cap-drop=ALL",
            "--security-opt=no-new-privileges",
            "--network",
            "host",
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=1024:1024",
            "-v",
            &format!("{run}/kubeconfig:/etc/kcm-rs/kubeconfig:ro"),
            "-v",
            &format!("{run}/pki/ca.crt:{run}/pki/ca.crt:ro"),
            &image,
            "--kubeconfig=/etc/kcm-rs/kubeconfig",
            "--controllers=replicaset-controller",
            &format!("--namespace={}", ns.name),
            "--leader-elect=true",
            &format!("--leader-elect-resource-name={lease_name}"),
            "--bind-address=127.0.0.1",
            &format!("--secure-port={port}"),
        ]);
        assert!(ok, "podman run failed:\n{out}");
        let _container = Container(name.to_owned());
        let logs = || podman(&["logs", name]).1;
        let readyz = move || https_status(port, "/readyz");
        wait_for(
            "the container's /readyz over HTTPS",
            Duration::from_secs(60),
            || {
                let code = readyz();
                async move { if code == "200" { Ok(()) } else { Err(code) } }
            },
        )
        .await;
        let ready_after = started.elapsed();
        println!(
            "container start to ready (/readyz 200): {} ms",
            ready_after.as_millis()
        );
        let (_, user) = podman(&[
            "inspect",
            "--format",
            "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}",
            name,
        ]);
        assert_eq!(user.trim(), "65532:65532 true");

        let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-system");
        wait_for("the container to hold the Lease", Duration::from_secs(60), || {
            let leases = leases.clone();
            let lease_name = lease_name.clone();
            async move {
                let l = leases.get(&lease_name).await.map_err(|e| e.to_string())?;
                match l.spec.and_then(|s| s.holder_identity) {
                    Some(h) if !h.is_empty() => Ok(()),
                    other => Err(format!("holder {other:?}")),
                }
            }
        })
        .await;

        ns.replicaset_becomes_ready("from-the-image", 2).await;

        let stopping = tokio::time::Instant::now();
        let (ok, out) = podman(&["stop", "-t", &GRACE_SECONDS.to_string(), name]);
        assert!(ok, "podman stop: {out}");
        let stopped_in = stopping.elapsed();
        let (_, code) = podman(&["inspect", "--format", "{{.State.ExitCode}}", name]);
        let log = logs();
        assert_eq!(code.trim(), "0", "exit code after SIGTERM; logs:\n{log}");
        assert!(
            stopped_in < Duration::from_secs(GRACE_SECONDS),
            "stopped after {stopped_in:?}"
        );
        assert!(!log.contains("panicked"), "{log}");
        println!("container stopped on SIGTERM in {} ms", stopped_in.as_millis());
    })
    .await;
}

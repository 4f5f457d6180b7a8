//! podman as the image suites run it. On these machines (cgroup v1 beside a v2 mount, a capped
//! open-files limit) podman only starts a container with runc, cgroupfs and explicit ulimits; crun
//! refuses the hybrid cgroups. `podman run` takes them as flags, `podman kube play` has no ulimit flag,
//! so every call reads them from a containers.conf of ours (CONTAINERS_CONF).

use std::{path::PathBuf, process::Command};

const CONTAINERS_CONF: &str = "[containers]\n\
default_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n\
[engine]\n\
runtime = \"runc\"\n\
cgroup_manager = \"cgroupfs\"\n";

fn containers_conf() -> PathBuf {
    let path = std::env::temp_dir().join("kcm-rs-e2e-containers.conf");
    std::fs::write(&path, CONTAINERS_CONF).expect("writing containers.conf");
    path
}

/// Runs podman; whether it succeeded and what it printed (standard output, then standard error).
pub fn podman(args: &[&str]) -> (bool, String) {
    let out = Command::new("podman")
        .env("CONTAINERS_CONF", containers_conf())
        .args(["--runtime", "runc", "--cgroup-manager", "cgroupfs"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("podman is not usable ({e}): apt-get install -y podman buildah runc"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `curl -k` of an HTTPS path on the loopback: the HTTP status, or an empty string if nothing answered.
pub fn https_status(port: u16, path: &str) -> String {
    Command::new("curl")
        .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2"])
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// The image the image suites run (KCM_RS_IMAGE, default kcm-rs:dev); fails the test, saying how to
/// build it, if podman does not have it.
pub fn test_image() -> String {
    let image = std::env::var("KCM_RS_IMAGE").unwrap_or_else(|_| "kcm-rs:dev".into());
    let (exists, _) = podman(&["image", "exists", &image]);
    assert!(
        exists,
        "no image {image}: build it with hack/image.sh (make image-e2e does)"
    );
    image
}

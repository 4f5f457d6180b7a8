//! The Rust envtest recipe: the `envtest` crate from crates.io starts etcd and kube-apiserver (Go's
//! envtest, through its bindings) from the binaries hack/build.sh builds, KWOK keeps one fake node
//! Ready, and `kcm_rs::ControllerManager` runs the controllers inside this test on a client built
//! from envtest's kubeconfig. A Deployment must roll out and a Job complete; no kube-controller-manager
//! or kube-scheduler runs, so the pods name the node. Prints the time from nothing to each.
//!
//! Not a lane suite: the plane is envtest's own (`hack/envtest.sh rust` sets KUBEBUILDER_ASSETS,
//! KWOK_BIN and KWOK_CONFIG), and tests named own_plane_* stay out of hack/e2e.sh's `parallel` item.
//! The example in kcm-rs's `ControllerManager` docs is this test's middle, and the test checks that
//! the two say the same.

use std::{process::Stdio, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, batch::v1::Job, core::v1::Node};
use kcm_rs_e2e::wait_for;
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use serde_json::json;

const NODE: &str = "kwok-node-0";
const WAIT: Duration = Duration::from_secs(60);

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run hack/envtest.sh rust"))
}

/// KWOK, killed when dropped (also when the test panics).
struct Kwok(std::process::Child);

impl Drop for Kwok {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// KWOK for every node, from a working directory of its own (a user's ~/.kwok is not read).
fn start_kwok(kubeconfig: &std::path::Path, work: &std::path::Path) -> Kwok {
    let child = std::process::Command::new(env("KWOK_BIN"))
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!("--config={}", env("KWOK_CONFIG")))
        .args(["--manage-all-nodes=true", "--server-address=127.0.0.1:0"])
        .env("KWOK_WORKDIR", work)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(work.join("kwok.log")).expect("KWOK's log"))
        .spawn()
        .expect("starting KWOK (KWOK_BIN)");
    Kwok(child)
}

/// The fake node KWOK keeps Ready, without the not-ready taint the API server gives every new node
/// (KCM's node lifecycle controller, not kcm-rs's, would lift it).
async fn register_node(client: &Client) {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({
        "metadata": {
            "name": NODE,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux", "type": "kwok"}
        },
        "status": {
            "capacity": {"cpu": "1000", "memory": "1Ti", "pods": "1000"},
            "allocatable": {"cpu": "1000", "memory": "1Ti", "pods": "1000"}
        }
    }))
    .expect("a Node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("registering the node");
    nodes
        .patch(
            NODE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": null}})),
        )
        .await
        .expect("lifting the node's taint");
}

/// Creates a workload in `default` from its manifest.
async fn create<K>(api: &Api<K>, manifest: serde_json::Value)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let object: K = serde_json::from_value(manifest).expect("a manifest");
    api.create(&PostParams::default(), &object)
        .await
        .expect("creating a workload");
}

#[tokio::test]
async fn own_plane_envtest_crate_runs_the_embedded_controllers() -> Result<(), Box<dyn std::error::Error>> {
    env("KUBEBUILDER_ASSETS");
    let t0 = tokio::time::Instant::now();
    // kcm_rs::ControllerManager's doc example, from here to `wait_synced`, but for KWOK's node.
    let mut environment = envtest::Environment::default();
    // The binaries from KUBEBUILDER_ASSETS (or setup-envtest's directory), not downloaded.
    environment.binary_assets_settings.download_binary_assets = false;
    let server = environment.create().await?;
    println!("envtest up: {} ms", t0.elapsed().as_millis());
    // envtest's own `client()` is built on an older kube than kcm-rs: take the kubeconfig.
    let kubeconfig = Kubeconfig::from_yaml(server.as_ref())?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let client = Client::try_from(config)?;

    let work = std::env::temp_dir().join(format!("kcm-rs-envtest-rs-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let kubeconfig_file = work.join("kubeconfig");
    std::fs::write(&kubeconfig_file, server.as_ref())?;
    let kwok = start_kwok(&kubeconfig_file, &work);
    register_node(&client).await;

    let running = kcm_rs::ControllerManager::new(client.clone()).start().await?;
    running.wait_synced().await;
    println!("kcm-rs synced: {} ms", t0.elapsed().as_millis());

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    create(
        &deployments,
        json!({
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"nodeName": NODE,
                             "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
                }
            }
        }),
    )
    .await;
    wait_for("the Deployment to roll out", WAIT, || {
        let deployments = deployments.clone();
        async move {
            let d = deployments.get("web").await.map_err(|e| e.to_string())?;
            let s = d.status.unwrap_or_default();
            let available = s
                .conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Available" && c.status == "True");
            if available && s.available_replicas == Some(2) && s.updated_replicas == Some(2) {
                Ok(())
            } else {
                Err(format!("available {:?}", s.available_replicas))
            }
        }
    })
    .await;
    println!(
        "nothing to a rolled-out Deployment: {} ms",
        t0.elapsed().as_millis()
    );

    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    create(
        &jobs,
        json!({
            "metadata": {"name": "work"},
            "spec": {"completions": 2, "template": {"spec": {
                "nodeName": NODE, "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]
            }}}
        }),
    )
    .await;
    wait_for("the Job to complete", WAIT, || {
        let jobs = jobs.clone();
        async move {
            let j = jobs.get("work").await.map_err(|e| e.to_string())?;
            let conditions = j.status.and_then(|s| s.conditions).unwrap_or_default();
            if conditions
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
            {
                Ok(())
            } else {
                Err(format!("{conditions:?}"))
            }
        }
    })
    .await;
    println!("nothing to a completed Job: {} ms", t0.elapsed().as_millis());

    running.shutdown().await;
    drop(kwok);
    server.destroy().await?;
    std::fs::remove_dir_all(&work).ok();
    Ok(())
}

/// The doc example says what this test does: its lines, unindented, appear here in order (the
/// client aside: the example hands it to the builder directly).
#[test]
fn the_doc_example_is_this_test() {
    let docs = include_str!("../../cmd/kcm-rs/src/embed.rs");
    let this = include_str!("envtest_rs.rs");
    let start = docs
        .find("/// ```ignore")
        .expect("the envtest example in embed.rs");
    let example: Vec<&str> = docs[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.trim() != "/// ```")
        .map(|l| l.trim_start_matches("///").trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert!(!example.is_empty());
    let mut rest = this;
    for line in example {
        let at = rest.find(line).unwrap_or_else(|| {
            panic!("embed.rs's envtest example has '{line}', which this test does not (in order)")
        });
        rest = &rest[at + line.len()..];
    }
}

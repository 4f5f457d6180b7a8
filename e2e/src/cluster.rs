use std::{
    fmt,
    path::{Path, PathBuf},
    time::Duration,
};

use kube::{
    Client,
    config::{KubeConfigOptions, Kubeconfig},
};

/// Where `hack/cluster.sh` keeps its run directory unless `KCM_RS_RUN_DIR` says otherwise.
pub const DEFAULT_RUN_DIR: &str = "/tmp/kcm-rs-cluster";
/// How long a test keeps trying to reach the API server before it fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Components whose log tails are shown when the cluster cannot be reached.
const COMPONENTS: &[&str] = &[
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
];
const LOG_TAIL_LINES: usize = 25;

/// Which controllers upstream kube-controller-manager runs (`hack/cluster.sh up --mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Upstream runs every controller.
    Reference,
    /// Upstream runs without the Deployment, ReplicaSet and Job controllers.
    Replace,
    /// Neither kube-controller-manager nor kube-scheduler runs: etcd, kube-apiserver and KWOK, as
    /// under envtest (plus KWOK). Namespaces made before keep their `default` ServiceAccount.
    Bare,
}

/// A connection to the local control plane.
#[derive(Clone)]
pub struct Cluster {
    pub client: Client,
    pub run_dir: PathBuf,
    pub mode: Mode,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("run_dir", &self.run_dir)
            .field("mode", &self.mode)
            .finish()
    }
}

impl Cluster {
    /// Connects to the cluster described by `$KCM_RS_RUN_DIR` (or the default run directory).
    ///
    /// Panics, never skips, when there is no cluster or it does not answer: the message says how to
    /// start one and shows the tail of every component's log.
    pub async fn connect() -> Cluster {
        // Logs of the code under test, filtered by RUST_LOG (default: warnings), captured per test.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
            )
            .with_test_writer()
            .try_init();
        let run_dir =
            std::env::var_os("KCM_RS_RUN_DIR").map_or_else(|| PathBuf::from(DEFAULT_RUN_DIR), PathBuf::from);
        let env_file = run_dir.join("cluster.env");
        let env = std::fs::read_to_string(&env_file).unwrap_or_else(|e| {
            panic!(
                "no local control plane: cannot read {} ({e}).\n\
                 Start one with `hack/cluster.sh up --mode reference` (or run `make e2e`).",
                env_file.display()
            )
        });
        let mode = match env_value(&env, "KCM_RS_MODE") {
            Some("reference") => Mode::Reference,
            Some("replace") => Mode::Replace,
            other => panic!("{}: unexpected KCM_RS_MODE {other:?}", env_file.display()),
        };
        let kubeconfig = run_dir.join("kubeconfig");
        let client = match connect(&kubeconfig).await {
            Ok(client) => client,
            Err(e) => panic!(
                "the local control plane in {} does not answer: {e}\n{}",
                run_dir.display(),
                log_tails(&run_dir)
            ),
        };
        Cluster {
            client,
            run_dir,
            mode,
        }
    }

    /// Like [`Cluster::connect`], and also fails unless upstream runs in `mode`.
    pub async fn connect_in(mode: Mode) -> Cluster {
        let cluster = Cluster::connect().await;
        assert_eq!(
            cluster.mode,
            mode,
            "this test needs the control plane in {mode:?} mode; restart it with `hack/cluster.sh down && \
             hack/cluster.sh up --mode {}`",
            format!("{mode:?}").to_lowercase()
        );
        cluster
    }

    /// The client configuration from the cluster's kubeconfig, to build further clients.
    pub async fn config(&self) -> kube::Config {
        let path = self.run_dir.join("kubeconfig");
        let kc = Kubeconfig::read_from(&path).expect("kubeconfig");
        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .expect("config")
    }

    /// Runs `hack/cluster.sh ARGS` against this cluster (e.g. `restart kube-apiserver --kill`) and
    /// returns its standard output; panics with its output if it fails.
    pub fn hack(&self, args: &[&str]) -> String {
        self.try_hack(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Cluster::hack`] without the panic, for cleanup that runs while a failed test unwinds (a
    /// second panic there would abort the test binary and hide the first).
    pub fn try_hack(&self, args: &[&str]) -> Result<String, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/cluster.sh");
        let out = std::process::Command::new(&script)
            .args(args)
            .env("KCM_RS_RUN_DIR", &self.run_dir)
            .output()
            .map_err(|e| format!("running {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "hack/cluster.sh {args:?} failed:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// GETs `path` from upstream kube-controller-manager's HTTPS endpoint with the admin token:
    /// (status, body).
    pub fn upstream_kcm_get(&self, path: &str) -> (u16, String) {
        let env = std::fs::read_to_string(self.run_dir.join("cluster.env")).expect("cluster.env");
        let port = env_value(&env, "KCM_PORT")
            .and_then(|p| p.parse().ok())
            .expect("KCM_PORT in cluster.env");
        let token = std::fs::read_to_string(self.run_dir.join("pki/admin.token")).expect("admin token");
        let creds = crate::serving::Creds {
            token: Some(token.trim().to_owned()),
            cert: None,
        };
        crate::serving::https_get(port, path, &creds)
    }

    /// Runs the control plane's kubectl with the admin kubeconfig; panics with its output on failure.
    pub fn kubectl(&self, args: &[&str]) -> String {
        self.try_kubectl(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Cluster::kubectl`] without the panic, for cleanup while a failed test unwinds.
    pub fn try_kubectl(&self, args: &[&str]) -> Result<String, String> {
        let env = std::fs::read_to_string(self.run_dir.join("cluster.env"))
            .map_err(|e| format!("cluster.env: {e}"))?;
        let bin = env_value(&env, "KCM_RS_KUBE_BIN").ok_or("no KCM_RS_KUBE_BIN in cluster.env")?;
        let out = std::process::Command::new(Path::new(bin).join("kubectl"))
            .arg(format!(
                "--kubeconfig={}",
                self.run_dir.join("kubeconfig").display()
            ))
            .args(args)
            .output()
            .map_err(|e| format!("running kubectl: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "kubectl {args:?} failed:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A kubeconfig authenticating as ServiceAccount `namespace/name` with a fresh token (TokenRequest),
    /// written into the run directory.
    pub fn service_account_kubeconfig(&self, namespace: &str, name: &str) -> PathBuf {
        let token = self.kubectl(&["create", "token", name, "-n", namespace, "--duration=2h"]);
        let admin = std::fs::read_to_string(self.run_dir.join("kubeconfig")).expect("kubeconfig");
        let server = admin
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: "))
            .expect("server in kubeconfig");
        let path = self.run_dir.join(format!("kubeconfig-{namespace}-{name}"));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\nusers:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: sa\n  context: {{cluster: local, user: {name}}}\ncurrent-context: sa\n",
            ca = self.run_dir.join("pki/ca.crt").display(),
            token = token.trim()
        );
        std::fs::write(&path, text).expect("writing a kubeconfig");
        path
    }

    /// Applies the shipped `deploy/namespace.yaml` and `deploy/rbac.yaml`.
    pub fn apply_shipped_rbac(&self) {
        let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
        self.kubectl(&[
            "apply",
            "-f",
            &deploy.join("namespace.yaml").display().to_string(),
            "-f",
            &deploy.join("rbac.yaml").display().to_string(),
        ]);
    }

    /// Applies a manifest of `deploy/` (after [`Self::apply_shipped_rbac`]).
    pub fn apply_deploy_file(&self, file: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(file);
        self.kubectl(&["apply", "-f", &path.display().to_string()]);
    }

    /// The last lines of every component's log, for failure messages.
    pub fn log_tails(&self) -> String {
        log_tails(&self.run_dir)
    }
}

/// Switches upstream kube-controller-manager to a mode for one test and back to reference mode when
/// dropped, also when the test fails, so the suites after it find the cluster as `make e2e` started it.
#[derive(Debug)]
pub struct ModeGuard {
    /// `None` once [`ModeGuard::hand_over`] passed the switch back to the next guard.
    cluster: Option<Cluster>,
}

impl ModeGuard {
    /// `hack/cluster.sh mode <mode>` now, `mode reference` on drop.
    pub fn enter(cluster: &Cluster, mode: Mode) -> ModeGuard {
        Self::enter_flagged(cluster, mode, &[])
    }

    /// [`ModeGuard::enter`] with `flags` added to kube-controller-manager's command line; reference
    /// mode without them on drop.
    pub fn enter_flagged(cluster: &Cluster, mode: Mode, flags: &[&str]) -> ModeGuard {
        let mut args = vec!["mode", mode.name()];
        args.extend_from_slice(flags);
        cluster.hack(&args);
        ModeGuard {
            cluster: Some(cluster.clone()),
        }
    }

    /// Switches to `mode` without passing through reference mode first: this guard restores
    /// nothing, the returned one does.
    pub fn hand_over(mut self, mode: Mode) -> ModeGuard {
        let cluster = self.cluster.take().expect("a guard hands over once");
        Self::enter(&cluster, mode)
    }
}

impl Drop for ModeGuard {
    fn drop(&mut self) {
        let Some(cluster) = &self.cluster else { return };
        if let Err(e) = cluster.try_hack(&["mode", Mode::Reference.name()]) {
            eprintln!("warning: restoring reference mode: {e}");
        }
    }
}

impl Mode {
    /// The name `hack/cluster.sh` uses.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Reference => "reference",
            Mode::Replace => "replace",
            Mode::Bare => "bare",
        }
    }
}

async fn connect(kubeconfig: &Path) -> Result<Client, String> {
    let kc = Kubeconfig::read_from(kubeconfig).map_err(|e| format!("{}: {e}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    let client = Client::try_from(config).map_err(|e| e.to_string())?;
    let deadline = tokio::time::Instant::now() + CONNECT_TIMEOUT;
    loop {
        match client.apiserver_version().await {
            Ok(_) => return Ok(client),
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e.to_string()),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

fn env_value<'a>(env: &'a str, key: &str) -> Option<&'a str> {
    env.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

fn log_tails(run_dir: &Path) -> String {
    let mut out = String::new();
    for c in COMPONENTS {
        let path = run_dir.join("logs").join(format!("{c}.log"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| format!("(cannot read: {e})"));
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
        out.push_str(&format!(
            "----- {} (last {} lines) -----\n{}\n",
            path.display(),
            tail.len(),
            tail.join("\n")
        ));
    }
    out
}

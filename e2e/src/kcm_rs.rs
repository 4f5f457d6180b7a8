//! Running the kcm-rs binary against the local control plane, as a child process.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use crate::{Cluster, free_port, wait_for};

/// How long kcm-rs may take from start to `/readyz` answering 200.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// With `KCM_RS_E2E_SHARDS=N` (N > 1) the differential and conformance-style suites run kcm-rs
/// sharded: `KCM_RS_E2E_REPLICAS` replicas (default 3) with `--shards=N`.
const SHARDS_ENV: &str = "KCM_RS_E2E_SHARDS";
const REPLICAS_ENV: &str = "KCM_RS_E2E_REPLICAS";
/// The log line of a sharded replica once a held shard's caches synced.
const SHARD_READY_LINE: &str = "shard's caches synced; writes open";

/// Starts kcm-rs as [`KcmRs::spawn`] does and waits until it is ready: one process, or the sharded
/// replicas `KCM_RS_E2E_SHARDS` asks for, until every shard synced on its holder.
pub async fn spawn_replicas(
    cluster: &Cluster,
    name: &str,
    args: &[&str],
    kubeconfig: Option<PathBuf>,
) -> Vec<KcmRs> {
    let shards: usize = std::env::var(SHARDS_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    if shards <= 1 {
        let one = KcmRs::spawn(cluster, name, args, kubeconfig);
        one.wait_ready().await;
        return vec![one];
    }
    let replicas: usize = std::env::var(REPLICAS_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let shards_arg = format!("--shards={shards}");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--leader-elect=true", shards_arg.as_str()]);
    let started: Vec<KcmRs> = (0..replicas)
        .map(|i| KcmRs::spawn(cluster, &format!("{name}-{i}"), &all, kubeconfig.clone()))
        .collect();
    wait_for(
        &format!("{shards} shards synced over {replicas} replicas"),
        Duration::from_secs(90),
        || {
            let synced: usize = started
                .iter()
                .map(|r| r.log_text().matches(SHARD_READY_LINE).count())
                .sum();
            async move {
                if synced >= shards {
                    Ok(())
                } else {
                    Err(format!("{synced} synced"))
                }
            }
        },
    )
    .await;
    started
}

/// A running kcm-rs. Stopped with SIGTERM (and waited for) when dropped.
#[derive(Debug)]
pub struct KcmRs {
    child: Child,
    pub log: PathBuf,
    run_dir: PathBuf,
    /// Where it serves /healthz, /readyz, /metrics and /debug/shadow (127.0.0.1).
    pub port: u16,
}

impl KcmRs {
    /// Starts kcm-rs and waits until it is ready ([`KcmRs::wait_ready`]). See [`KcmRs::spawn`].
    pub async fn start(cluster: &Cluster, name: &str, args: &[&str]) -> KcmRs {
        KcmRs::start_env(cluster, name, args, &[]).await
    }

    /// [`KcmRs::start`] with environment variables added (`RUST_LOG` among them overrides
    /// `KCM_RS_LOG`).
    pub async fn start_env(cluster: &Cluster, name: &str, args: &[&str], envs: &[(&str, &str)]) -> KcmRs {
        let me = KcmRs::spawn_env(cluster, name, args, None, envs);
        me.wait_ready().await;
        me
    }

    /// Starts `kcm-rs` against the cluster, logging to `<run dir>/logs/kcm-rs-<name>.log`. It gets the
    /// cluster's admin kubeconfig (or `kubeconfig`), serves on a free loopback port, uses the same
    /// client rate limits as the cluster's upstream kube-controller-manager, and runs without leader
    /// election; `args` come last and override any of these.
    pub fn spawn(cluster: &Cluster, name: &str, args: &[&str], kubeconfig: Option<PathBuf>) -> KcmRs {
        KcmRs::spawn_env(cluster, name, args, kubeconfig, &[])
    }

    /// Runs kcm-rs to its end with the cluster's admin kubeconfig and `args`: its standard output.
    pub fn run_once(cluster: &Cluster, args: &[&str]) -> String {
        let kubeconfig = cluster.run_dir.join("kubeconfig");
        let out = Command::new(binary())
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .args(args)
            .output()
            .expect("running kcm-rs");
        assert!(
            out.status.success(),
            "kcm-rs {args:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// [`KcmRs::spawn`] with extra environment variables.
    pub fn spawn_env(
        cluster: &Cluster,
        name: &str,
        args: &[&str],
        kubeconfig: Option<PathBuf>,
        envs: &[(&str, &str)],
    ) -> KcmRs {
        let bin = binary();
        let log = cluster.run_dir.join("logs").join(format!("kcm-rs-{name}.log"));
        let out = std::fs::File::create(&log).expect("kcm-rs log file");
        let port = free_port();
        let kubeconfig = kubeconfig.unwrap_or_else(|| cluster.run_dir.join("kubeconfig"));
        let child = Command::new(&bin)
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .args([
                "--bind-address=127.0.0.1",
                "--kube-api-qps=100",
                "--kube-api-burst=200",
                "--leader-elect=false",
            ])
            .arg(format!("--secure-port={port}"))
            .args(args)
            .env(
                "RUST_LOG",
                std::env::var("KCM_RS_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env("NO_COLOR", "1")
            .envs(envs.iter().copied())
            .stdout(out.try_clone().expect("log file"))
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        KcmRs {
            child,
            log,
            run_dir: cluster.run_dir.clone(),
            port,
        }
    }

    /// Waits until the log contains `needle`; fails if the process exits first.
    pub async fn wait_log(&self, needle: &str, timeout: Duration) {
        let pid = self.child.id();
        wait_for(&format!("kcm-rs (pid {pid}) to log {needle:?}"), timeout, || {
            let text = self.log_text();
            let alive = self.alive();
            async move {
                if text.contains(needle) {
                    Ok(())
                } else if !alive {
                    panic!("kcm-rs exited before logging {needle:?}; its log:\n{text}");
                } else {
                    Err("not yet")
                }
            }
        })
        .await;
    }

    /// Waits until `/readyz` answers 200 "ok": every controller it started has synced. The first
    /// controller's "caches synced" line is too early a sign: the garbage collector's own monitors
    /// sync after it, and a scenario that deleted an owner then raced the collector's start-up (a
    /// dependent of a kind it had not yet watched was not orphaned). Fails if the process exits first.
    pub async fn wait_ready(&self) {
        let pid = self.child.id();
        let port = self.port;
        wait_for(
            &format!("kcm-rs (pid {pid}) to answer /readyz with 200"),
            READY_TIMEOUT,
            || {
                let alive = self.alive();
                let log = self.log.clone();
                async move {
                    let (code, body) = crate::serving::https_get(port, "/readyz", &Default::default());
                    // Not "ok (no controller running here: standby)", which it also answers in
                    // the moment between serving and starting its controllers.
                    if code == 200 && body.trim() == "ok" {
                        Ok(())
                    } else if !alive {
                        let text = std::fs::read_to_string(log).unwrap_or_default();
                        panic!("kcm-rs exited before it was ready; its log:\n{text}");
                    } else {
                        Err(format!("{code} {body}"))
                    }
                }
            },
        )
        .await;
    }

    /// Whether the process runs, read from `/proc`: a child that exited stays there, a zombie, until
    /// it is waited for.
    fn alive(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `n` lines of its log that contain `needle`.
    pub fn log_lines_with(&self, needle: &str, n: usize) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(needle)).collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// The identity it logged at start-up (its leader-election identity).
    pub fn identity(&self) -> Option<String> {
        let text = self.log_text();
        let line = text.lines().find(|l| l.contains(" identity identity="))?;
        Some(line.rsplit("identity=").next()?.trim().to_owned())
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// GET `path` on its endpoint server over HTTPS (its self-signed certificate is not checked)
    /// as the cluster's admin, whose group skips authorization: (HTTP status, body).
    pub fn http_get(&self, path: &str) -> (u16, String) {
        let token = std::fs::read_to_string(self.run_dir.join("pki/admin.token")).expect("admin token");
        let creds = crate::serving::Creds {
            token: Some(token.trim().to_owned()),
            cert: None,
        };
        crate::serving::https_get(self.port, path, &creds)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running (a zombie counts as exited, unlike a `/proc` check).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// kill -9, as a crash would.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops it with SIGTERM and returns its exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.terminate()
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        if let Ok(Some(status)) = self.child.try_wait() {
            return status;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .stderr(Stdio::null())
            .status();
        for _ in 0..400 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        self.child.wait().expect("kcm-rs exit status")
    }
}

impl Drop for KcmRs {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// The kcm-rs binary under test: `KCM_RS_BIN`, else the debug build.
fn binary() -> PathBuf {
    let bin = std::env::var_os("KCM_RS_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/kcm-rs"),
        PathBuf::from,
    );
    assert!(
        bin.exists(),
        "no kcm-rs binary at {}: run `cargo build -p kcm-rs` first (make e2e does)",
        bin.display()
    );
    bin
}

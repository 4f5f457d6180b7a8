//! Running the kcm-rs binary against the local control plane, as a child process.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use crate::{Cluster, wait_for};

/// The log line kcm-rs prints once a controller's caches have synced.
const READY_LINE: &str = "caches synced";

/// A running kcm-rs. Stopped with SIGTERM (and waited for) when dropped.
#[derive(Debug)]
pub struct KcmRs {
    child: Child,
    pub log: PathBuf,
}

impl KcmRs {
    /// Starts `kcm-rs --kubeconfig <cluster's> ARGS`, logging to `<run dir>/logs/kcm-rs-<name>.log`,
    /// and waits until its controllers' caches have synced.
    pub async fn start(cluster: &Cluster, name: &str, args: &[&str]) -> KcmRs {
        let bin = std::env::var_os("KCM_RS_BIN").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/kcm-rs"),
            PathBuf::from,
        );
        assert!(
            bin.exists(),
            "no kcm-rs binary at {}: run `cargo build -p kcm-rs` first (make e2e does)",
            bin.display()
        );
        let log = cluster.run_dir.join("logs").join(format!("kcm-rs-{name}.log"));
        let out = std::fs::File::create(&log).expect("kcm-rs log file");
        let child = Command::new(&bin)
            .arg("--kubeconfig")
            .arg(cluster.run_dir.join("kubeconfig"))
            .args(args)
            .env(
                "RUST_LOG",
                std::env::var("KCM_RS_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env("NO_COLOR", "1")
            .stdout(out.try_clone().expect("log file"))
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let mut me = KcmRs { child, log };
        let log = me.log.clone();
        wait_for("kcm-rs to sync its caches", Duration::from_secs(60), || {
            let exited = me.child.try_wait().ok().flatten();
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            async move {
                if let Some(status) = exited {
                    panic!("kcm-rs exited early ({status}); its log:\n{text}");
                }
                if text.contains(READY_LINE) {
                    Ok(())
                } else {
                    Err("not yet")
                }
            }
        })
        .await;
        me
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
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
        for _ in 0..100 {
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

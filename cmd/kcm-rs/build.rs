//! Stamps the commit into `kcm-rs --version`, as Kubernetes' build stamps gitCommit into KCM's.
//! `KCM_RS_GIT_COMMIT` wins (builds without the repository, such as an image build given it as a
//! build argument); otherwise `git rev-parse HEAD`; otherwise "unknown".

use std::{path::Path, process::Command};

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    println!("cargo:rerun-if-env-changed=KCM_RS_GIT_COMMIT");
    let commit = match std::env::var("KCM_RS_GIT_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ => {
            // A new commit changes the branch's ref (or packed-refs), not HEAD itself. Cargo counts
            // a watched path that is missing as changed, so it would run this script, and rebuild
            // kcm-rs and all that depends on it, on every build: a branch whose ref `git gc` or
            // `git pack-refs` moved into packed-refs is watched through its directory instead,
            // where a commit writes the loose ref again.
            for path in ["HEAD", "packed-refs"] {
                if let Some(p) = git(&["rev-parse", "--git-path", path]).filter(|p| Path::new(p).exists()) {
                    println!("cargo:rerun-if-changed={p}");
                }
            }
            if let Some(p) =
                git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r]))
            {
                let p = Path::new(&p);
                let watched = if p.exists() {
                    Some(p)
                } else {
                    p.parent().filter(|d| d.is_dir())
                };
                if let Some(w) = watched {
                    println!("cargo:rerun-if-changed={}", w.display());
                }
            }
            git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_owned())
        }
    };
    println!("cargo:rustc-env=KCM_RS_GIT_COMMIT={commit}");
}

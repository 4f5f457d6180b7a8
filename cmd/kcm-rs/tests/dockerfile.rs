//! Static checks of the shipped Dockerfile (it cannot be built here: no Docker daemon, no
//! registry), the rules a hadolint run would flag: base images pinned to a version, a final stage
//! with no shell (FROM scratch, no RUN), a numeric non-root USER, an exec-form ENTRYPOINT, and the
//! same image layout hack/image.sh builds.

const DOCKERFILE: &str = include_str!("../../../Dockerfile");

/// The instructions, continuation lines joined, comments dropped: (keyword, arguments).
fn instructions() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in DOCKERFILE.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && current.is_empty()) {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(t);
                let (k, rest) = current.split_once(' ').unwrap_or((&current, ""));
                out.push((k.to_ascii_uppercase(), rest.trim().to_owned()));
                current.clear();
            }
        }
    }
    out
}

/// The instructions of the last stage.
fn final_stage() -> Vec<(String, String)> {
    let all = instructions();
    let start = all.iter().rposition(|(k, _)| k == "FROM").expect("a FROM");
    all[start..].to_vec()
}

#[test]
fn base_images_are_pinned_to_a_version() {
    for (k, args) in instructions() {
        if k != "FROM" {
            continue;
        }
        let image = args.split_whitespace().next().expect("an image");
        if image == "scratch" {
            continue;
        }
        let pinned = image.contains("@sha256:")
            || image.rsplit_once(':').is_some_and(|(_, tag)| {
                tag != "latest" && tag.chars().next().is_some_and(|c| c.is_ascii_digit())
            });
        assert!(pinned, "FROM {image}: pin a version tag or a digest");
        assert!(
            image.contains('/'),
            "FROM {image}: name the registry and repository in full"
        );
    }
}

#[test]
fn the_final_stage_has_no_shell_and_runs_as_a_numeric_non_root_user() {
    let stage = final_stage();
    assert_eq!(
        stage[0],
        ("FROM".into(), "scratch".into()),
        "the final stage is FROM scratch"
    );
    assert!(
        !stage.iter().any(|(k, _)| k == "RUN"),
        "no RUN in the final stage: it has no shell"
    );
    let user = stage
        .iter()
        .rev()
        .find(|(k, _)| k == "USER")
        .expect("a USER in the final stage");
    let uid = user.1.split(':').next().unwrap_or_default();
    assert!(
        uid.parse::<u32>().is_ok_and(|u| u != 0),
        "USER {}: numeric and not root",
        user.1
    );
    let entrypoint = stage
        .iter()
        .find(|(k, _)| k == "ENTRYPOINT")
        .expect("an ENTRYPOINT");
    let argv: Vec<String> = serde_json::from_str(&entrypoint.1).expect("ENTRYPOINT in exec (JSON) form");
    assert_eq!(argv, ["/usr/local/bin/kcm-rs"]);
    assert!(
        !stage
            .iter()
            .any(|(k, a)| k == "ADD" || (k == "COPY" && !a.starts_with("--from="))),
        "the final stage only copies from the build stage"
    );
}

#[test]
fn it_builds_what_hack_image_sh_builds() {
    let script = include_str!("../../../hack/image.sh");
    let rootfs = include_str!("../../../hack/image-rootfs.sh");
    for text in [DOCKERFILE, script] {
        assert!(
            text.contains("--profile image -p kcm-rs"),
            "both build the image profile"
        );
        assert!(
            text.contains("image-rootfs.sh"),
            "both stage the root filesystem with hack/image-rootfs.sh"
        );
    }
    for needle in ["nonroot:x:65532:65532", "ca-certificates.crt", "ldd "] {
        assert!(rootfs.contains(needle), "hack/image-rootfs.sh lacks {needle:?}");
    }
    assert!(script.contains("--user 65532:65532") && DOCKERFILE.contains("USER 65532:65532"));
}

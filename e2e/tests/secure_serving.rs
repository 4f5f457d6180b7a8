//! Secure serving, against upstream kube-controller-manager on the same control plane: the same
//! requests (no credentials, ServiceAccount tokens with and without the shipped metrics-reader
//! ClusterRole, client certificates signed by the cluster CA, expired and foreign certificates, a
//! garbage token, plain HTTP, an unknown path) get the same status codes and the same `Status`
//! bodies from both, and with the right both serve a CPU and a heap profile (`--profiling`) that
//! `go tool pprof` reads. kcm-rs keeps reconciling a ReplicaSet while it is fed bad requests. Also: a
//! given certificate is served, the generated one names localhost and 127.0.0.1, and
//! `--tls-min-version=VersionTLS13` refuses TLS 1.2.

use std::{process::Command, time::Duration};

use kcm_rs_e2e::{
    Cluster, KcmRs, Mode, ModeGuard,
    serving::{
        Creds, UpstreamKcm, a_ca, client_cert, cluster_ca, https_get, https_get_accepting, https_headers,
        https_put, normalized, plain_http_get, two_h2_gets,
    },
    wait_for, with_namespace,
};
use rcgen::{CertificateParams, DnType, KeyPair};

#[tokio::test]
async fn disruptive_serves_like_upstream_kcm_and_keeps_reconciling() {
    let cluster = Cluster::connect().await;
    cluster.apply_shipped_rbac();
    let _mode = ModeGuard::enter(&cluster, Mode::Replace);
    with_namespace(cluster.clone(), "secure-serving", |ns| async move {
        let cluster = &ns.cluster;
        let n = ns.name.as_str();
        for sa in ["reader", "nobody"] {
            cluster.kubectl(&["create", "serviceaccount", sa, "-n", n]);
        }
        let binding = format!("{n}-metrics-reader");
        cluster.kubectl(&[
            "create",
            "clusterrolebinding",
            &binding,
            "--clusterrole=kcm-rs-metrics-reader",
            &format!("--serviceaccount={n}:reader"),
            "--user=cert-reader",
        ]);
        let token = |sa: &str| {
            cluster
                .kubectl(&["create", "token", sa, "-n", n])
                .trim()
                .to_owned()
        };
        let dir = cluster.run_dir.join(format!("secure-serving-{n}"));
        std::fs::create_dir_all(&dir).expect("cert dir");
        let ca = cluster_ca(cluster);
        let (foreign, _) = a_ca("foreign-ca");
        let reader_token = token("reader");
        let cases: Vec<(&str, &str, Creds, u16)> = vec![
            ("no credentials, /healthz", "/healthz", Creds::default(), 200),
            ("no credentials, /metrics", "/metrics", Creds::default(), 403),
            (
                "garbage token, /healthz",
                "/healthz",
                Creds {
                    token: Some("garbage".into()),
                    cert: None,
                },
                401,
            ),
            (
                "garbage token, /metrics",
                "/metrics",
                Creds {
                    token: Some("garbage".into()),
                    cert: None,
                },
                401,
            ),
            (
                "token without the role",
                "/metrics",
                Creds {
                    token: Some(token("nobody")),
                    cert: None,
                },
                403,
            ),
            (
                "token with the role",
                "/metrics",
                Creds {
                    token: Some(reader_token.clone()),
                    cert: None,
                },
                200,
            ),
            (
                "token with the role, unknown path",
                "/nope",
                Creds {
                    token: Some(reader_token.clone()),
                    cert: None,
                },
                403,
            ),
            (
                "cluster-CA certificate with the role",
                "/metrics",
                Creds {
                    token: None,
                    cert: Some(client_cert(&dir, "reader", "cert-reader", &[], (2020, 2099), &ca)),
                },
                200,
            ),
            (
                "cluster-CA certificate without the role",
                "/metrics",
                Creds {
                    token: None,
                    cert: Some(client_cert(
                        &dir,
                        "other",
                        "cert-other",
                        &["dev"],
                        (2020, 2099),
                        &ca,
                    )),
                },
                403,
            ),
            (
                "system:masters certificate, unknown path",
                "/nope",
                Creds {
                    token: None,
                    cert: Some(client_cert(
                        &dir,
                        "root",
                        "root",
                        &["system:masters"],
                        (2020, 2099),
                        &ca,
                    )),
                },
                404,
            ),
            (
                "expired certificate",
                "/healthz",
                Creds {
                    token: None,
                    cert: Some(client_cert(
                        &dir,
                        "expired",
                        "cert-reader",
                        &[],
                        (2000, 2001),
                        &ca,
                    )),
                },
                401,
            ),
            (
                "foreign certificate",
                "/metrics",
                Creds {
                    token: None,
                    cert: Some(client_cert(
                        &dir,
                        "foreign",
                        "cert-reader",
                        &[],
                        (2020, 2099),
                        &foreign,
                    )),
                },
                401,
            ),
            // The z-pages (KCM 1.36: ComponentFlagz, ComponentStatusz, beta and on) need the right too.
            ("no credentials, flagz", "/flagz", Creds::default(), 403),
            ("no credentials, configz", "/configz", Creds::default(), 403),
            (
                "token with the metrics role, statusz",
                "/statusz",
                Creds {
                    token: Some(reader_token.clone()),
                    cert: None,
                },
                403,
            ),
            // --profiling (on by default in both): the CPU profile needs the right to get the path.
            (
                "no credentials, CPU profile",
                "/debug/pprof/profile?seconds=1",
                Creds::default(),
                403,
            ),
            (
                "token with the metrics role, CPU profile",
                "/debug/pprof/profile?seconds=1",
                Creds {
                    token: Some(reader_token.clone()),
                    cert: None,
                },
                403,
            ),
        ];

        let upstream = UpstreamKcm::start(cluster);
        let kcm = KcmRs::start(
            cluster,
            "secure-serving",
            &["--controllers=replicaset-controller"],
        )
        .await;
        for port in [upstream.port, kcm.port] {
            wait_for(
                &format!("/healthz on {port}"),
                Duration::from_secs(60),
                || async move {
                    match https_get(port, "/healthz", &Creds::default()).0 {
                        200 => Ok(()),
                        code => Err(code),
                    }
                },
            )
            .await;
        }
        // The client CA comes from the API server's ConfigMap in both: wait until a certificate works.
        let reader_cert = cases[7].2.clone();
        assert!(
            reader_cert.cert.is_some(),
            "case 7 is the cluster-CA certificate with the role"
        );
        for port in [upstream.port, kcm.port] {
            let creds = reader_cert.clone();
            wait_for(
                &format!("client certificates accepted on {port}"),
                Duration::from_secs(90),
                || {
                    let creds = creds.clone();
                    async move {
                        match https_get(port, "/metrics", &creds).0 {
                            200 => Ok(()),
                            code => Err(code),
                        }
                    }
                },
            )
            .await;
        }

        let mut mismatches = Vec::new();
        for (name, path, creds, want) in &cases {
            let (up_code, up_body) = https_get(upstream.port, path, creds);
            let (our_code, our_body) = https_get(kcm.port, path, creds);
            if up_code != *want || our_code != *want {
                mismatches.push(format!(
                    "{name}: want {want}, upstream {up_code}, kcm-rs {our_code}: {our_body}"
                ));
            } else if *want != 200 && normalized(&up_body) != normalized(&our_body) {
                mismatches.push(format!(
                    "{name}: bodies differ\n  upstream: {up_body}\n  kcm-rs:   {our_body}"
                ));
            } else if let Some(difference) = header_difference(upstream.port, kcm.port, path, creds) {
                mismatches.push(format!("{name}: {difference}"));
            } else if *want == 200
                && *path == "/metrics"
                && !our_body.contains("workqueue_adds_total{name=\"replicaset\"}")
            {
                mismatches.push(format!(
                    "{name}: no replicaset workqueue series in kcm-rs /metrics"
                ));
            }
        }
        // kcm-rs also serves /livez and /readyz (upstream KCM answers 404 there), always allowed.
        for path in ["/livez", "/readyz"] {
            let code = https_get(kcm.port, path, &Creds::default()).0;
            if code != 200 {
                mismatches.push(format!("{path} without credentials: kcm-rs {code}"));
            }
        }
        // HTTP/2: a connection whose request could not be authenticated is closed after its 401
        // (KCM's UnauthenticatedHTTP2DOSMitigation, on in both); an authenticated one is kept.
        let bearer = |t: &str| Creds {
            token: Some(t.to_owned()),
            cert: None,
        };
        for (name, creds, want) in [
            ("a garbage token", bearer("garbage"), [(401, 1), (401, 1)]),
            ("the metrics role's token", bearer(&reader_token), [(200, 1), (200, 0)]),
        ] {
            let (up, ours) = (
                two_h2_gets(upstream.port, "/metrics", &creds),
                two_h2_gets(kcm.port, "/metrics", &creds),
            );
            if up != want || ours != want {
                mismatches.push(format!(
                    "two HTTP/2 requests with {name} (status, connections opened): want {want:?}, upstream {up:?}, kcm-rs {ours:?}"
                ));
            }
        }
        let (up, ours) = (plain_http_get(upstream.port), plain_http_get(kcm.port));
        if up != ours || up.0 != 400 {
            mismatches.push(format!("plain HTTP: upstream {up:?}, kcm-rs {ours:?}"));
        }
        assert!(
            mismatches.is_empty(),
            "kcm-rs serves unlike upstream KCM:\n{}",
            mismatches.join("\n")
        );

        // With the right (the admin's token), a CPU and a heap profile from each that `go tool
        // pprof` reads, of the same type (the heap's default view: the live bytes).
        let admin = std::fs::read_to_string(cluster.run_dir.join("pki/admin.token")).expect("admin token");
        for (who, port) in [("kube-controller-manager", upstream.port), ("kcm-rs", kcm.port)] {
            for (profile, kind) in [("profile?seconds=2", "cpu"), ("heap?seconds=2", "inuse_space")] {
                let top = pprof_top(&dir, who, port, profile, admin.trim());
                assert!(
                    top.contains(&format!("Type: {kind}")),
                    "go tool pprof -top of {who}'s {profile}:\n{top}"
                );
            }
        }

        // `PUT /debug/flags/v` (with --profiling, on in both): the same answers, and kcm-rs, at info
        // level so far, logs at debug level once set to 4 (below: the ReplicaSet's events). Other
        // methods get 406; without the right, 403.
        assert!(!kcm.log_text().contains(" DEBUG "), "no debug lines at --v=2");
        let admin_creds = Creds {
            token: Some(admin.trim().to_owned()),
            cert: None,
        };
        // A second CPU profile while one is taken: the same 500 from both, marked for `go tool
        // pprof` (`X-Go-Pprof`) so that it prints the text.
        let busy: Vec<_> = [upstream.port, kcm.port]
            .into_iter()
            .map(|port| {
                let creds = admin_creds.clone();
                let first =
                    std::thread::spawn(move || https_get(port, "/debug/pprof/profile?seconds=4", &creds));
                std::thread::sleep(Duration::from_secs(1));
                let path = "/debug/pprof/profile?seconds=1";
                let answer = https_get(port, path, &admin_creds);
                let headers = https_headers(port, path, &admin_creds, &PPROF_HEADERS);
                assert_eq!(
                    first.join().expect("first profile").0,
                    200,
                    "the first profile on {port}"
                );
                (answer, headers)
            })
            .collect();
        assert!(
            busy[0] == busy[1] && busy[0].0.0 == 500,
            "a second CPU profile: upstream {:?}, kcm-rs {:?}",
            busy[0],
            busy[1]
        );

        let flag_cases: [(&str, &str, &Creds); 4] = [
            ("PUT", "4", &admin_creds),
            ("PUT", "four", &admin_creds),
            ("GET", "", &admin_creds),
            ("PUT", "4", &Creds::default()),
        ];
        for (method, body, creds) in flag_cases {
            let ask = |port| match method {
                "PUT" => https_put(port, "/debug/flags/v", body, creds),
                _ => https_get(port, "/debug/flags/v", creds),
            };
            let (up, ours) = (ask(upstream.port), ask(kcm.port));
            assert_eq!(
                up.0, ours.0,
                "{method} /debug/flags/v {body:?}: upstream {up:?}, kcm-rs {ours:?}"
            );
            if up.0 != 400 {
                // A refused number is worded by each parser; the rest is the same text.
                assert_eq!(
                    normalized(&up.1),
                    normalized(&ours.1),
                    "{method} /debug/flags/v {body:?}"
                );
            }
        }

        // /flagz and /statusz: text for people, a typed object when asked for one (the same fields in
        // both), 406 for a bare JSON type. The flags and the component's name differ.
        let mut fields = Vec::new();
        for (who, port) in [("kube-controller-manager", upstream.port), ("kcm-rs", kcm.port)] {
            let (code, content_type, body) = https_get_accepting(port, "/flagz", &admin_creds, "*/*");
            let lines: Vec<&str> = body.lines().take(3).collect();
            assert!(
                code == 200
                    && content_type == "text/plain; charset=utf-8"
                    && lines[..2] == ["", &format!("{who} flagz")]
                    && lines[2].starts_with("Warning: This endpoint is not meant to be machine parseable"),
                "{who} /flagz: {code} {content_type}\n{body}"
            );
            for kind in ["Flagz", "Statusz"] {
                let accept = format!("application/json;v=v1beta1;g=config.k8s.io;as={kind}");
                let page = format!("/{}", kind.to_lowercase());
                let (code, content_type, body) = https_get_accepting(port, &page, &admin_creds, &accept);
                let object: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                assert!(
                    code == 200
                        && content_type == format!("application/json;g=config.k8s.io;v=v1beta1;as={kind}")
                        && object["kind"] == kind
                        && object["apiVersion"] == "config.k8s.io/v1beta1"
                        && object["metadata"]["name"] == who,
                    "{who} {page} as {kind}: {code} {content_type}\n{body}"
                );
                let keys: Vec<String> = object
                    .as_object()
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default();
                fields.push((kind, keys));
            }
            let (code, _, body) = https_get_accepting(port, "/statusz", &admin_creds, "application/json");
            assert!(
                code == 406 && body.contains("\"NotAcceptable\""),
                "{who} /statusz as bare JSON: {code}\n{body}"
            );
        }
        assert_eq!(
            fields[..2],
            fields[2..],
            "the typed objects' fields, upstream's then kcm-rs's"
        );

        // /configz: KCM's configuration object, of which kcm-rs serves the generic section and its
        // own controllers' sections, every field named and written as KCM's. The two run different
        // controllers and, by default, different Leases; every other value is the same.
        let mut configz = Vec::new();
        for (who, port) in [("kube-controller-manager", upstream.port), ("kcm-rs", kcm.port)] {
            let (code, content_type, body) = https_get_accepting(port, "/configz", &admin_creds, "*/*");
            let object: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            assert!(
                code == 200 && content_type == "application/json" && object.is_object(),
                "{who} /configz: {code} {content_type}\n{body}"
            );
            configz.push(object);
        }
        let name = "kubecontrollermanager.config.k8s.io";
        let mut sections: Vec<&str> = configz[1][name]
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        sections.sort_unstable();
        let mut want = [
            "kind",
            "apiVersion",
            "Generic",
            "DeploymentController",
            "GarbageCollectorController",
            "JobController",
            "CronJobController",
            "NamespaceController",
            "PodGCController",
            "ReplicaSetController",
            "ReplicationController",
            "TTLAfterFinishedController",
        ];
        want.sort_unstable();
        // (Their order, KCM's, is the unit tests' to check: serde_json's maps here sort their keys.)
        assert_eq!(sections, want, "kcm-rs's /configz sections");
        let mut differences = Vec::new();
        leaf_differences(&configz[1], &configz[0], "", 0, &mut differences);
        let expected = [
            format!("/{name}/Generic/Controllers:"),
            format!("/{name}/Generic/LeaderElection/resourceName:"),
        ];
        differences.retain(|d| !expected.iter().any(|path| d.starts_with(path)));
        assert!(
            differences.is_empty(),
            "kcm-rs's /configz against upstream's:\n{}",
            differences.join("\n")
        );

        // The headers of the answers compared above by their bodies, of the admin's: found, not
        // found, HTML, JSON and text.
        let differences: Vec<String> = [
            "/configz",
            "/healthz?verbose",
            "/healthz/ping",
            "/nope",
            "/debug/pprof/",
            "/debug/flags",
            "/metrics/slis",
        ]
        .iter()
        .filter_map(|path| {
            header_difference(upstream.port, kcm.port, path, &admin_creds).map(|d| format!("{path}: {d}"))
        })
        .collect();
        assert!(differences.is_empty(), "{}", differences.join("\n"));

        // /healthz as k8s.io/apiserver's handler answers it, and its SLIs at /metrics/slis. The two
        // run different controllers, so the checks' names differ; the shapes must not.
        for port in [upstream.port, kcm.port] {
            let (code, body) = https_get(port, "/healthz?verbose&exclude=nope", &Creds::default());
            let lines: Vec<&str> = body.lines().collect();
            let (last, warn) = (lines.last().copied(), lines.iter().rev().nth(1).copied());
            assert!(
                code == 200
                    && last == Some("healthz check passed")
                    && warn == Some("warn: some health checks cannot be excluded: no matches for \"nope\"")
                    && lines[..lines.len() - 2]
                        .iter()
                        .all(|l| l.starts_with("[+]") && l.ends_with(" ok")),
                "/healthz?verbose on {port}: {code} {body}"
            );
            assert_eq!(
                https_get(port, "/healthz/ping", &admin_creds),
                (404, "404 page not found\n".into()),
                "ping is installed only without other checks, on {port}"
            );
            let (code, slis) = https_get(port, "/metrics/slis", &admin_creds);
            assert!(
                code == 200
                    && slis.contains("# TYPE kubernetes_healthchecks_total counter")
                    && slis.lines().any(|l| {
                        l.starts_with("kubernetes_healthcheck{name=") && l.ends_with(",type=\"healthz\"} 1")
                    }),
                "/metrics/slis on {port}: {code}\n{slis}"
            );
            // Prometheus's text format, as KCM writes it: a counter's family takes its samples' name.
            let (_, metrics) = https_get(port, "/metrics", &admin_creds);
            assert!(
                metrics.contains("# TYPE workqueue_adds_total counter") && !metrics.contains("# EOF"),
                "/metrics on {port}:\n{metrics}"
            );
        }

        // Bad requests meanwhile do not stop the controllers: scale a ReplicaSet through them.
        let port = kcm.port;
        let barrage = std::thread::spawn(move || {
            for i in 0..60 {
                let creds = Creds {
                    token: Some(format!("garbage-{i}")),
                    cert: None,
                };
                https_get(port, "/metrics", &creds);
                plain_http_get(port);
                let _ = Command::new("bash")
                    .args([
                        "-c",
                        &format!("printf '\\x16\\x03\\x01\\x00' > /dev/tcp/127.0.0.1/{port}"),
                    ])
                    .status();
            }
        });
        ns.replicaset_becomes_ready("served", 3).await;
        barrage.join().expect("the barrage thread");
        kcm.wait_log(" DEBUG ", Duration::from_secs(30)).await;
        assert_eq!(https_get(kcm.port, "/healthz", &Creds::default()).0, 200);
        let log = kcm.log_text();
        assert!(!log.contains("panicked"), "kcm-rs panicked:\n{}", kcm.log_tail());
        cluster.kubectl(&["delete", "clusterrolebinding", &binding]);
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

#[tokio::test]
async fn a_given_certificate_and_the_min_version_are_served() {
    let cluster = Cluster::connect().await;
    with_namespace(cluster.clone(), "tls-flags", |ns| async move {
        let cluster = &ns.cluster;
        let dir = cluster.run_dir.join(format!("tls-flags-{}", ns.name));
        std::fs::create_dir_all(&dir).expect("dir");
        let (ca, ca_pem) = a_ca("serving-ca");
        let ca_file = dir.join("ca.crt");
        std::fs::write(&ca_file, ca_pem).expect("ca");
        let mut p = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
        p.distinguished_name.push(DnType::CommonName, "kcm-rs-e2e");
        let key = KeyPair::generate().expect("key");
        let (cert, key_file) = (dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&cert, p.signed_by(&key, &ca).expect("cert").pem()).expect("cert");
        std::fs::write(&key_file, key.serialize_pem()).expect("key");
        let namespace = format!("--namespace={}", ns.name);

        let given = KcmRs::start(
            cluster,
            "tls-given",
            &[
                "--shadow",
                &namespace,
                &format!("--tls-cert-file={}", cert.display()),
                &format!("--tls-private-key-file={}", key_file.display()),
                "--tls-min-version=VersionTLS13",
            ],
        )
        .await;
        let curl = |args: &[&str], port: u16| {
            Command::new("curl")
                .args(["-s", "-o", "/dev/null", "--max-time", "10"])
                .args(args)
                .arg(format!("https://127.0.0.1:{port}/healthz"))
                .status()
                .expect("curl")
                .code()
        };
        let ca_arg = ca_file.display().to_string();
        assert_eq!(curl(&["--cacert", &ca_arg], given.port), Some(0), "the given certificate verifies");
        assert_eq!(curl(&["-k", "--tls-max", "1.2"], given.port), Some(35), "TLS 1.2 is refused");

        let generated = KcmRs::start(cluster, "tls-generated", &["--shadow", &namespace]).await;
        assert_eq!(curl(&[], generated.port), Some(60), "a self-signed certificate does not verify");
        assert_eq!(curl(&["-k", "--tls-max", "1.2"], generated.port), Some(0), "TLS 1.2 is served by default");
        let out = Command::new("bash")
            .args([
                "-c",
                &format!(
                    "openssl s_client -connect 127.0.0.1:{} </dev/null 2>/dev/null | openssl x509 -noout -ext subjectAltName",
                    generated.port
                ),
            ])
            .output()
            .expect("openssl");
        let san = String::from_utf8_lossy(&out.stdout);
        assert!(san.contains("DNS:localhost") && san.contains("IP Address:127.0.0.1"), "{san}");
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

/// The headers a client of both servers may depend on: how to read the body, whether a cache may
/// keep it. `Date` and `Content-Length` differ by nature (Go leaves the length out of longer
/// answers), so they are not compared.
const COMPARED_HEADERS: [&str; 3] = ["content-type", "x-content-type-options", "cache-control"];

/// What a profile's answer says of itself beside [`COMPARED_HEADERS`].
const PPROF_HEADERS: [&str; 4] = [
    "content-type",
    "x-content-type-options",
    "content-disposition",
    "x-go-pprof",
];

/// How the two servers' answers to `path` differ in [`COMPARED_HEADERS`], if they do.
fn header_difference(upstream: u16, ours: u16, path: &str, creds: &Creds) -> Option<String> {
    let theirs = https_headers(upstream, path, creds, &COMPARED_HEADERS);
    let ours = https_headers(ours, path, creds, &COMPARED_HEADERS);
    (theirs != ours)
        .then(|| format!("headers {COMPARED_HEADERS:?} differ: upstream {theirs:?}, kcm-rs {ours:?}"))
}

/// Fetches `/debug/pprof/{profile}` from `port` with `token` into `dir` and returns what
/// `go tool pprof -top` prints of it (failing the test if either step fails).
fn pprof_top(dir: &std::path::Path, who: &str, port: u16, profile: &str, token: &str) -> String {
    let name = profile.split('?').next().unwrap_or(profile);
    let file = dir.join(format!("{who}-{name}.pprof"));
    let url = format!("https://127.0.0.1:{port}/debug/pprof/{profile}");
    let out = Command::new("curl")
        .args(["-sk", "--max-time", "30", "-w", "%{http_code}", "-o"])
        .arg(&file)
        .args(["-H", &format!("Authorization: Bearer {token}"), &url])
        .output()
        .expect("curl");
    let code = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(code, "200", "{who}: GET {url}");
    let top = Command::new("go")
        .args(["tool", "pprof", "-top"])
        .arg(&file)
        .env("PPROF_TMPDIR", dir)
        .env("GOTOOLCHAIN", "local")
        .output()
        .expect("go tool pprof");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&top.stdout),
        String::from_utf8_lossy(&top.stderr)
    );
    assert!(
        top.status.success(),
        "go tool pprof -top {}: {text}",
        file.display()
    );
    text
}

/// Where `ours` differs from `theirs`, one line per field (`/path: upstream X, kcm-rs Y`). Every
/// field of `ours` must be in `theirs`; below `depth` 2, inside a section, the other way round too
/// (kcm-rs leaves out whole sections, never a section's field). Arrays are compared whole, as sets
/// where the order is a Go map's (the garbage collector's ignored resources).
fn leaf_differences(
    ours: &serde_json::Value,
    theirs: &serde_json::Value,
    path: &str,
    depth: usize,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (ours, theirs) {
        (Value::Object(o), Value::Object(t)) => {
            for (key, value) in o {
                let at = format!("{path}/{key}");
                match t.get(key) {
                    Some(theirs) => leaf_differences(value, theirs, &at, depth + 1, out),
                    None => out.push(format!("{at}: upstream has no such field, kcm-rs {value}")),
                }
            }
            if depth >= 2 {
                for (key, value) in t.iter().filter(|(key, _)| !o.contains_key(*key)) {
                    out.push(format!(
                        "{path}/{key}: upstream {value}, kcm-rs has no such field"
                    ));
                }
            }
        }
        (Value::Array(o), Value::Array(t)) if path.ends_with("/GCIgnoredResources") => {
            let sorted = |a: &Vec<Value>| {
                let mut a: Vec<String> = a.iter().map(Value::to_string).collect();
                a.sort();
                a
            };
            if sorted(o) != sorted(t) {
                out.push(format!("{path}: upstream {theirs}, kcm-rs {ours}"));
            }
        }
        _ if ours != theirs => out.push(format!("{path}: upstream {theirs}, kcm-rs {ours}")),
        _ => {}
    }
}

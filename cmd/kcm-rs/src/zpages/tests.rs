//! The z-pages' negotiation and layouts, against what KCM 1.36.3 answered the same requests with.

use super::*;

fn pages() -> ZPages {
    let flags = [("leader-elect", "true"), ("namespace", "a,b"), ("kubeconfig", "")]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
    let started = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_888_000);
    ZPages::new(flags, started, vec!["/flagz".into(), "/healthz".into()])
}

/// Upstream's layouts: a blank line, the heading, the warning, then (statusz after a blank line) one
/// line per item with one separator throughout.
#[test]
fn text_pages_are_laid_out_as_upstreams() {
    let p = pages();
    let flagz = flagz_text(&p.flags);
    let lines: Vec<&str> = flagz.lines().collect();
    assert_eq!(lines[..3], ["", "kcm-rs flagz", WARNING]);
    let sep = SEPARATORS
        .iter()
        .filter(|s| lines[3].starts_with(&format!("kubeconfig{s}")))
        .max_by_key(|s| s.len())
        .expect("a known separator");
    assert_eq!(
        lines[3..],
        [
            format!("kubeconfig{sep}"),
            format!("leader-elect{sep}true"),
            format!("namespace{sep}a,b")
        ]
    );

    let started = jiff::Timestamp::try_from(p.started).unwrap();
    let statusz = statusz_text(&p, started, 3_725);
    let lines: Vec<&str> = statusz.lines().collect();
    assert_eq!(lines[..4], ["", "kcm-rs statusz", WARNING, ""]);
    let sep = &lines[4]["Started".len()..lines[4].len() - " Sat Nov 28 17:46:40 UTC 2026".len()];
    assert!(SEPARATORS.contains(&sep), "{statusz}");
    assert_eq!(
        lines[4..],
        [
            format!("Started{sep} Sat Nov 28 17:46:40 UTC 2026"),
            format!("Up{sep} 1 hr 02 min 05 sec"),
            format!("Binary version{sep} {}", BINARY_VERSION),
            format!("Emulation version{sep} 1.36"),
            format!("Paths{sep} /flagz /healthz"),
        ]
    );
}

/// Go's UnixDate pads a one-digit day with a space.
#[test]
fn the_start_reads_as_gos_unix_date() {
    let early = jiff::Timestamp::from_second(1_793_869_200).unwrap(); // 2026-11-05 09:00:00 UTC
    let p = pages();
    let text = statusz_text(&p, early, 0);
    assert!(text.contains(" Thu Nov  5 09:00:00 UTC 2026\n"), "{text}");
}

async fn body(response: Response) -> (StatusCode, HeaderMap, String) {
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    (
        parts.status,
        parts.headers,
        String::from_utf8(bytes.to_vec()).unwrap(),
    )
}

#[tokio::test]
async fn typed_answers_carry_their_kind_version_and_deprecation() {
    let p = Arc::new(pages());
    let ask = |accept: &str, agent: &str| {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, accept.parse().unwrap());
        h.insert(header::USER_AGENT, agent.parse().unwrap());
        h
    };
    let uri: Uri = "/flagz".parse().unwrap();
    let (code, headers, text) = body(
        flagz(
            State(p.clone()),
            ask(
                "application/json;v=v1beta1;g=config.k8s.io;as=Flagz",
                "kcm-rs-e2e",
            ),
            uri.clone(),
        )
        .await,
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        headers[header::CONTENT_TYPE],
        "application/json;g=config.k8s.io;v=v1beta1;as=Flagz"
    );
    assert!(headers.get(header::WARNING).is_none());
    assert!(
        text.starts_with(
            r#"{"kind":"Flagz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"kcm-rs"},"flags":{"#
        ) && text.ends_with("}\n")
            && text.matches('\n').count() == 1,
        "compact for a program, fields in Go's order: {text}"
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["kind"], "Flagz");
    assert_eq!(v["apiVersion"], "config.k8s.io/v1beta1");
    assert_eq!(v["metadata"]["name"], "kcm-rs");
    assert_eq!(v["flags"]["namespace"], "a,b");

    let (_, headers, text) = body(
        statusz(
            State(p.clone()),
            ask(
                "application/json;v=v1alpha1;g=config.k8s.io;as=Statusz",
                "curl/8.0",
            ),
            "/statusz".parse().unwrap(),
        )
        .await,
    )
    .await;
    assert_eq!(
        headers[header::WARNING],
        "299 - \"This version of the statusz endpoint is deprecated. Please use a newer version.\""
    );
    assert!(
        text.contains("\n  \"kind\": \"Statusz\""),
        "indented for curl: {text}"
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["startTime"], "2026-11-28T17:46:40Z");
    assert_eq!(v["emulationVersion"], "1.36");
    assert_eq!(v["paths"], serde_json::json!(["/flagz", "/healthz"]));
    assert!(v["uptimeSeconds"].is_u64(), "{text}");
    // Upstream's field order: the Go type's.
    let order: Vec<usize> = [
        "\"kind\"",
        "\"apiVersion\"",
        "\"metadata\"",
        "\"startTime\"",
        "\"uptimeSeconds\"",
        "\"goVersion\"",
        "\"binaryVersion\"",
        "\"emulationVersion\"",
        "\"paths\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} in {text}")))
    .collect();
    assert!(order.is_sorted(), "{text}");
    assert!(
        !text.ends_with('\n'),
        "no newline after indented JSON, as Go's MarshalIndent"
    );

    let (code, _, text) = body(flagz(State(p), ask("application/json", "curl"), uri).await).await;
    assert_eq!(code, StatusCode::NOT_ACCEPTABLE);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (v["kind"].as_str(), v["reason"].as_str(), v["code"].as_u64()),
        (Some("Status"), Some("NotAcceptable"), Some(406))
    );
}

#[test]
fn pretty_printing_follows_the_query_then_the_user_agent() {
    let agent = |a: &str| {
        let mut h = HeaderMap::new();
        h.insert(header::USER_AGENT, a.parse().unwrap());
        h
    };
    let uri = |u: &str| u.parse::<Uri>().unwrap();
    assert!(pretty(&agent("curl/8.5.0"), &uri("/flagz")));
    assert!(pretty(&agent("Wget/1.21"), &uri("/flagz")));
    assert!(!pretty(&agent("kubectl/v1.36"), &uri("/flagz")));
    assert!(pretty(&agent("kubectl/v1.36"), &uri("/flagz?pretty=true")));
    assert!(!pretty(&agent("curl/8.5.0"), &uri("/flagz?pretty=0")));
    assert!(pretty(&agent("curl/8.5.0"), &uri("/flagz?pretty=")));
}

//! Writes the API server refused as invalid (422), from kube-apiserver's own request counter: a
//! controller that writes an invalid status or object retries it and carries on, so its only trace
//! is there. Nothing else in the suite writes invalid objects (the harness fails on its own 422s),
//! so any increase on the resources the controllers write is theirs.

use std::collections::BTreeMap;

/// The (resource, subresource) pairs the controllers write; `None` matches any subresource. Pods'
/// status is KWOK's to write (the kubelet's), so only the pod itself counts; the Deployment
/// controller writes the Deployment's revision annotation as well as its status.
const WRITTEN: &[(&str, Option<&str>)] = &[
    ("jobs", None),
    ("deployments", None),
    ("replicasets", None),
    ("pods", Some("")),
];

/// 422 answers so far, by "resource[/subresource] VERB".
pub type Refusals = BTreeMap<String, u64>;

/// GET /metrics as the admin and count the 422s on [`WRITTEN`]; tried three times, a second apart,
/// as a busy API server may time a scrape out.
pub async fn refusals(client: &kube::Client) -> Result<Refusals, String> {
    let mut last = String::new();
    for _ in 0..3 {
        let req = http::Request::get("/metrics")
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        match client.request_text(req).await {
            Ok(text) => return Ok(parse(&text)),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    Err(last)
}

/// The labels of one sample line (`name{k="v",...} value`), and its value.
fn sample(line: &str) -> Option<(BTreeMap<&str, String>, f64)> {
    let rest = line.strip_prefix("apiserver_request_total{")?;
    let (labels, value) = rest.rsplit_once("} ")?;
    let mut out = BTreeMap::new();
    let mut s = labels;
    while !s.is_empty() {
        let (key, after) = s.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => value.push(chars.next()?.1),
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        out.insert(key, value);
        s = after[end + 1..].trim_start_matches(',');
    }
    Some((out, value.trim().parse().ok()?))
}

pub fn parse(text: &str) -> Refusals {
    let mut out = Refusals::new();
    for (labels, value) in text.lines().filter_map(sample) {
        let get = |k: &str| labels.get(k).map_or("", String::as_str);
        if get("code") != "422" {
            continue;
        }
        let (resource, sub) = (get("resource"), get("subresource"));
        let watched = WRITTEN
            .iter()
            .any(|(r, s)| *r == resource && s.is_none_or(|s| s == sub));
        if watched {
            let key = if sub.is_empty() {
                format!("{resource} {}", get("verb"))
            } else {
                format!("{resource}/{sub} {}", get("verb"))
            };
            // Counters are integral; the text format writes them as floats.
            *out.entry(key).or_default() += value as u64;
        }
    }
    out
}

/// What rose between two readings ("jobs/status PUT: +2"); a counter that went down (the API
/// server restarted) is ignored.
pub fn increases(before: &Refusals, after: &Refusals) -> Vec<String> {
    after
        .iter()
        .filter_map(|(k, n)| {
            let was = before.get(k).copied().unwrap_or(0);
            (*n > was).then(|| format!("{k}: +{}", n - was))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="batch",resource="jobs",scope="resource",subresource="status",verb="PUT",version="v1"} 40
apiserver_request_total{code="422",component="apiserver",dry_run="",group="batch",resource="jobs",scope="resource",subresource="status",verb="PUT",version="v1"} 2
apiserver_request_total{code="422",component="apiserver",dry_run="",group="batch",resource="jobs",scope="resource",subresource="",verb="PATCH",version="v1"} 7
apiserver_request_total{code="422",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="422",component="apiserver",dry_run="",group="apps",resource="replicasets",scope="resource",subresource="status",verb="PUT",version="v1"} 3
apiserver_request_total{code="422",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="PATCH",version="v1"} 5
apiserver_request_total{code="422",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 4
apiserver_request_duration_seconds_bucket{code="422",resource="pods",le="0.1"} 9
"#;

    #[test]
    fn only_the_controllers_writes_count_not_kwoks_pod_status() {
        let r = parse(TEXT);
        let want: Refusals = [
            ("deployments PATCH".to_owned(), 5),
            ("jobs PATCH".to_owned(), 7),
            ("jobs/status PUT".to_owned(), 2),
            ("pods POST".to_owned(), 1),
            ("replicasets/status PUT".to_owned(), 3),
        ]
        .into_iter()
        .collect();
        assert_eq!(r, want);
    }

    #[test]
    fn increases_name_the_request_and_ignore_a_reset() {
        let before = parse(TEXT);
        let mut after = before.clone();
        *after.get_mut("jobs/status PUT").unwrap() += 1;
        after.insert("pods POST".into(), 0);
        after.insert("replicasets PUT".into(), 4);
        assert_eq!(
            increases(&before, &after),
            vec!["jobs/status PUT: +1".to_owned(), "replicasets PUT: +4".to_owned()]
        );
    }

    #[test]
    fn escaped_label_values_parse() {
        let line =
            r#"apiserver_request_total{code="422",resource="pods",subresource="",verb="a\"b",x="y"} 1"#;
        let (labels, v) = sample(line).unwrap();
        assert_eq!(labels["verb"], "a\"b");
        assert_eq!(v, 1.0);
    }
}

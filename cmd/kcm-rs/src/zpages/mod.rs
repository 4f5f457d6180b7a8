//! `/flagz` and `/statusz`, which kube-controller-manager serves from 1.36 (the `ComponentFlagz` and
//! `ComponentStatusz` gates, beta and on): the flags the process runs with, and when it started,
//! what it is and which paths it serves. Both answer text, meant for people and worded so that no
//! script leans on it (a separator chosen at random among four), or, asked with
//! `Accept: application/json;g=config.k8s.io;v=v1beta1;as=Flagz` (or `v1alpha1`, deprecated, or
//! `as=Statusz`), a typed JSON object, as k8s.io/apiserver's `flagz` and `statusz` packages do.
//! Other media types, YAML among them (upstream also offers it), get a 406 `Status`
//! (`negotiate`). A flag's value is as given on the command line, or its default: not pflag's
//! rendering (`12h` where KCM shows `12h0m0s`, `*` where it shows `[*]`), and fixed at start.

use std::{
    collections::BTreeMap,
    sync::{Arc, OnceLock},
    time::SystemTime,
};

use axum::{
    Router,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, Uri, header},
    response::{IntoResponse, Response},
    routing::any,
};
use rand::seq::IndexedRandom as _;
use serde::Serialize;

mod negotiate;

use negotiate::{Wanted, negotiate};

/// The name in both pages' headings and objects (KCM's is `kube-controller-manager`).
const COMPONENT: &str = "kcm-rs";
/// The API group of the typed answers (k8s.io/apiserver `flagz/api`, `statusz/api`).
const GROUP: &str = "config.k8s.io";
/// Versions of the typed answers; the first is current, the others answer with a warning.
const VERSIONS: [&str; 2] = ["v1beta1", "v1alpha1"];
/// The text answers' separators between a name and its value, one picked at random (upstream's
/// `delimiters`), so that the text is read by people, not parsed.
const SEPARATORS: [&str; 4] = [":", ": ", "=", " "];
/// What both text pages start with (upstream's `headerFmt`).
const WARNING: &str = "Warning: This endpoint is not meant to be machine parseable, has no formatting \
                       compatibility guarantees and is for debugging purposes only.";
/// The Kubernetes release whose controllers kcm-rs behaves as (`emulationVersion`).
const EMULATED: &str = "1.36";

/// `binaryVersion`: a version alone, as KCM's `1.36.3` (the commit is in `--version`).
const BINARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the pages show; fixed once made, as the cached `/flagz` text is made from `flags`.
pub struct ZPages {
    /// Every flag with its value, given or default.
    flags: BTreeMap<String, String>,
    started: SystemTime,
    /// The top-level paths the server answers, but these pages' own `/statusz` (as upstream lists
    /// its mux's paths before it adds `/statusz`).
    paths: Vec<String>,
    /// The text of `/flagz`, made once: upstream caches it, separator and all.
    flagz_text: OnceLock<String>,
}

impl ZPages {
    pub fn new(flags: BTreeMap<String, String>, started: SystemTime, paths: Vec<String>) -> Self {
        Self {
            flags,
            started,
            paths,
            flagz_text: OnceLock::new(),
        }
    }
}

pub fn routes<S: Clone + Send + Sync + 'static>(pages: Arc<ZPages>) -> Router<S> {
    Router::new()
        // Any method, as upstream's mux serves them.
        .route("/flagz", any(flagz))
        .route("/statusz", any(statusz))
        .with_state(pages)
}

async fn flagz(State(pages): State<Arc<ZPages>>, headers: HeaderMap, uri: Uri) -> Response {
    match negotiate(accept(&headers), GROUP, "Flagz", &VERSIONS) {
        Wanted::Text => text(pages.flagz_text.get_or_init(|| flagz_text(&pages.flags)).clone()),
        Wanted::Json {
            version,
            pretty: asked,
        } => typed(
            "Flagz",
            version,
            Flagz { flags: &pages.flags },
            asked || pretty(&headers, &uri),
        ),
        Wanted::NotAcceptable => not_acceptable(),
    }
}

async fn statusz(State(pages): State<Arc<ZPages>>, headers: HeaderMap, uri: Uri) -> Response {
    let started = jiff::Timestamp::try_from(pages.started).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let up = SystemTime::now()
        .duration_since(pages.started)
        .map_or(0, |d| d.as_secs());
    match negotiate(accept(&headers), GROUP, "Statusz", &VERSIONS) {
        Wanted::Text => text(statusz_text(&pages, started, up)),
        Wanted::Json {
            version,
            pretty: asked,
        } => typed(
            "Statusz",
            version,
            Statusz {
                start_time: started.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                uptime_seconds: up,
                go_version: "",
                binary_version: BINARY_VERSION,
                emulation_version: EMULATED,
                paths: &pages.paths,
            },
            asked || pretty(&headers, &uri),
        ),
        Wanted::NotAcceptable => not_acceptable(),
    }
}

/// The typed objects, fields in the order of upstream's Go types (after the type and the name).
#[derive(Serialize)]
struct Typed<'a, T> {
    kind: &'a str,
    #[serde(rename = "apiVersion")]
    api_version: String,
    metadata: Metadata,
    #[serde(flatten)]
    fields: T,
}

#[derive(Serialize)]
struct Metadata {
    name: &'static str,
}

#[derive(Serialize)]
struct Flagz<'a> {
    flags: &'a BTreeMap<String, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Statusz<'a> {
    start_time: String,
    uptime_seconds: u64,
    /// Required in the type; kcm-rs is not built with Go.
    go_version: &'a str,
    binary_version: &'a str,
    emulation_version: &'a str,
    paths: &'a [String],
}

fn accept(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok())
}

fn separator() -> &'static str {
    SEPARATORS.choose(&mut rand::rng()).copied().unwrap_or(":")
}

fn flagz_text(flags: &BTreeMap<String, String>) -> String {
    let sep = separator();
    let mut out = format!("\n{COMPONENT} flagz\n{WARNING}\n");
    for (name, value) in flags {
        out.push_str(&format!("{name}{sep}{value}\n"));
    }
    out
}

/// Upstream's layout, less its `Go version` line.
fn statusz_text(pages: &ZPages, started: jiff::Timestamp, up: u64) -> String {
    let sep = separator();
    // Go's `time.UnixDate`: the day of the month padded with a space.
    let started = started.strftime("%a %b %e %H:%M:%S UTC %Y");
    let up = format!("{} hr {:02} min {:02} sec", up / 3600, (up / 60) % 60, up % 60);
    format!(
        "\n{COMPONENT} statusz\n{WARNING}\n\nStarted{sep} {started}\nUp{sep} {up}\nBinary version{sep} {}\n\
         Emulation version{sep} {EMULATED}\nPaths{sep} {}\n",
        BINARY_VERSION,
        pages.paths.join(" ")
    )
}

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

/// The typed object `kind` in `version`; indented for a person (the range's `pretty=1`,
/// `?pretty=true`, or curl, Wget or a browser), as the API server writes it: Go's `MarshalIndent`
/// without a final newline, its `Encoder` with one.
fn typed<T: Serialize>(kind: &str, version: &str, fields: T, pretty: bool) -> Response {
    let object = Typed {
        kind,
        api_version: format!("{GROUP}/{version}"),
        metadata: Metadata { name: COMPONENT },
        fields,
    };
    let body = if pretty {
        serde_json::to_string_pretty(&object)
    } else {
        serde_json::to_string(&object).map(|s| s + "\n")
    }
    .unwrap_or_default();
    let content_type = format!("application/json;g={GROUP};v={version};as={kind}");
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    if version != VERSIONS[0] {
        let warning = format!(
            "299 - \"This version of the {} endpoint is deprecated. Please use a newer version.\"",
            kind.to_lowercase()
        );
        if let Ok(value) = HeaderValue::try_from(warning) {
            response.headers_mut().insert(header::WARNING, value);
        }
    }
    response
}

/// k8s.io/apiserver's `isPrettyPrint`: `?pretty=` as a Go bool, else the User-Agent of curl, Wget
/// or a browser.
fn pretty(headers: &HeaderMap, uri: &Uri) -> bool {
    if let Some(value) = uri.query().and_then(|q| {
        form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "pretty")
            .map(|(_, v)| v.into_owned())
    }) && !value.is_empty()
    {
        return matches!(value.as_str(), "1" | "t" | "T" | "true" | "TRUE" | "True");
    }
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    ["curl", "Wget", "Mozilla/5.0"]
        .iter()
        .any(|p| agent.starts_with(p))
}

fn not_acceptable() -> Response {
    secure_serving::failure_status(
        StatusCode::NOT_ACCEPTABLE,
        "NotAcceptable",
        "only the following media types are accepted: application/json, text/plain",
    )
}

#[cfg(test)]
mod tests;

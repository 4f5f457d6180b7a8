//! Which kinds a namespace's deletion must empty: every namespaced resource the API server serves,
//! each in its group's preferred version, as client-go's `ServerPreferredNamespacedResources` finds
//! them for upstream's controller.
//!
//! The API server is asked in its aggregated form (`apidiscovery.k8s.io/v2`, two requests: `/api` and
//! `/apis`), as client-go asks by default since 1.30. A group version the server marks stale (an
//! aggregated API whose backend is down) is a partial failure: its kinds are left out and the
//! failure is reported, so that the namespace's `NamespaceDeletionDiscoveryFailure` condition says
//! which group failed, in client-go's words.

use std::collections::{BTreeMap, HashSet};

use http::header::ACCEPT;
use kube::{Client, core::ApiResource};
use serde::{Deserialize, Deserializer};

/// The aggregated discovery document's media type (client-go `discovery.AcceptV2`).
pub const ACCEPT_AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// How often a discovery that left some group out is made in all (client-go `defaultRetries`).
pub const DISCOVERY_ATTEMPTS: usize = 2;
/// How long one discovery request may take (client-go's discovery client sets this timeout when
/// its configuration has none: `defaultTimeout`).
pub const DISCOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(32);

/// One namespaced kind, in the version its group prefers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespacedResource {
    pub group: String,
    pub version: String,
    /// The plural resource name, `configmaps`.
    pub resource: String,
    pub kind: String,
    pub verbs: Vec<String>,
}

impl NamespacedResource {
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// Pods: deleted first, and the only kind with a grace period to wait for.
    pub fn is_pods(&self) -> bool {
        self.group.is_empty() && self.resource == "pods"
    }

    /// The addressing kube's dynamic API needs.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: group_version(&self.group, &self.version),
            kind: self.kind.clone(),
            plural: self.resource.clone(),
        }
    }
}

/// As apimachinery prints a `GroupVersionResource` (`apps/v1, Resource=deployments`, `/v1,
/// Resource=pods`), which the namespace's conditions quote.
impl std::fmt::Display for NamespacedResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}, Resource={}", self.group, self.version, self.resource)
    }
}

/// What discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    /// Sorted by group and resource.
    pub resources: Vec<NamespacedResource>,
    /// Group versions left out (`group/version`, or `v1`), with why.
    pub failed: BTreeMap<String, String>,
}

impl Discovered {
    /// client-go's `ErrGroupDiscoveryFailed` text, if some group version was left out.
    pub fn failure(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        let mut groups: Vec<String> = self.failed.iter().map(|(gv, e)| format!("{gv}: {e}")).collect();
        groups.sort();
        Some(format!(
            "unable to retrieve the complete list of server APIs: {}",
            groups.join(", ")
        ))
    }
}

/// Why discovery failed outright. The text is what the namespace's `NamespaceDeletionDiscoveryFailure`
/// condition says: the API server's message, as upstream's carries the Go error's.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("{message}")]
    Request { path: &'static str, message: String },
    #[error("Get {path}: the request timed out after {DISCOVERY_TIMEOUT:?}")]
    TimedOut { path: &'static str },
    #[error(
        "{path}: the API server does not serve aggregated discovery (apidiscovery.k8s.io/v2, Kubernetes 1.30 and later), answered with kind {kind:?}"
    )]
    NotAggregated { path: &'static str, kind: String },
    #[error("{path}: {source}")]
    Decode {
        path: &'static str,
        source: serde_json::Error,
    },
}

/// Discovers the namespaced resources, again once if a group was left out (client-go's retry).
pub async fn discover(client: &Client) -> Result<Discovered, DiscoveryError> {
    let mut found = discover_once(client).await?;
    for _ in 1..DISCOVERY_ATTEMPTS {
        if found.failed.is_empty() {
            break;
        }
        found = discover_once(client).await?;
    }
    Ok(found)
}

async fn discover_once(client: &Client) -> Result<Discovered, DiscoveryError> {
    let (legacy, groups) = futures::try_join!(fetch(client, "/api"), fetch(client, "/apis"))?;
    Ok(preferred_namespaced(&[legacy, groups]))
}

async fn fetch(client: &Client, path: &'static str) -> Result<GroupList, DiscoveryError> {
    let request = http::Request::get(path)
        .header(ACCEPT, ACCEPT_AGGREGATED)
        .body(Vec::new())
        .expect("a static path and header make a valid request");
    let answer = tokio::time::timeout(DISCOVERY_TIMEOUT, client.request_text(request))
        .await
        .map_err(|_| DiscoveryError::TimedOut { path })?;
    let text = match answer {
        Ok(text) => text,
        // An API server without the core group (client-go tolerates it: an empty list).
        Err(kube::Error::Api(s)) if s.code == 404 && path == "/api" => return Ok(GroupList::empty()),
        Err(e) => {
            return Err(DiscoveryError::Request {
                path,
                message: controller::ControlError::api("discover", path, e).to_string(),
            });
        }
    };
    let list: GroupList =
        serde_json::from_str(&text).map_err(|source| DiscoveryError::Decode { path, source })?;
    if list.kind != "APIGroupDiscoveryList" {
        return Err(DiscoveryError::NotAggregated {
            path,
            kind: list.kind,
        });
    }
    Ok(list)
}

/// The namespaced resources of the documents, each group resource in the first version that serves
/// it (the preferred one comes first), stale group versions left out and reported.
pub fn preferred_namespaced(lists: &[GroupList]) -> Discovered {
    let mut found = Discovered::default();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for group in lists.iter().flat_map(|l| &l.items) {
        let name = &group.metadata.name;
        for version in &group.versions {
            if version.freshness.as_deref() == Some(STALE) {
                let gv = group_version(name, &version.version);
                found
                    .failed
                    .insert(gv.clone(), format!("stale GroupVersion discovery: {gv}"));
                continue;
            }
            for r in &version.resources {
                // A resource without its kind (a parent the API server made up for a subresource) is
                // not returned by client-go's conversion.
                let Some(kind) = r.response_kind.as_ref().filter(|k| !k.is_empty()) else {
                    continue;
                };
                if r.resource.contains('/') || !seen.insert((name.clone(), r.resource.clone())) {
                    continue;
                }
                if r.scope == NAMESPACED {
                    found.resources.push(NamespacedResource {
                        group: name.clone(),
                        version: version.version.clone(),
                        resource: r.resource.clone(),
                        kind: kind.kind.clone(),
                        verbs: r.verbs.clone(),
                    });
                }
            }
        }
    }
    found
        .resources
        .sort_by(|a, b| (&a.group, &a.resource).cmp(&(&b.group, &b.resource)));
    found
}

/// apimachinery's `GroupVersion.String()`: the version alone for the core group.
fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

const STALE: &str = "Stale";
const NAMESPACED: &str = "Namespaced";

/// `APIGroupDiscoveryList`, only what the deletion reads. Every field may be missing or `null`
/// (Go writes an empty slice as `null`; the API server does for the verbs of a parent it made up).
#[derive(Debug, Default, Deserialize)]
pub struct GroupList {
    #[serde(default, deserialize_with = "or_default")]
    kind: String,
    #[serde(default, deserialize_with = "or_default")]
    items: Vec<GroupDoc>,
}

impl GroupList {
    fn empty() -> Self {
        Self {
            kind: "APIGroupDiscoveryList".into(),
            items: Vec::new(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct GroupDoc {
    #[serde(default, deserialize_with = "or_default")]
    metadata: GroupMeta,
    #[serde(default, deserialize_with = "or_default")]
    versions: Vec<VersionDoc>,
}

#[derive(Debug, Default, Deserialize)]
struct GroupMeta {
    #[serde(default, deserialize_with = "or_default")]
    name: String,
}

#[derive(Debug, Default, Deserialize)]
struct VersionDoc {
    #[serde(default, deserialize_with = "or_default")]
    version: String,
    #[serde(default, deserialize_with = "or_default")]
    resources: Vec<ResourceDoc>,
    #[serde(default)]
    freshness: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceDoc {
    #[serde(default, deserialize_with = "or_default")]
    resource: String,
    #[serde(default)]
    response_kind: Option<KindDoc>,
    #[serde(default, deserialize_with = "or_default")]
    scope: String,
    #[serde(default, deserialize_with = "or_default")]
    verbs: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
struct KindDoc {
    #[serde(default, deserialize_with = "or_default")]
    group: String,
    #[serde(default, deserialize_with = "or_default")]
    version: String,
    #[serde(default, deserialize_with = "or_default")]
    kind: String,
}

impl KindDoc {
    /// client-go's `emptyKind`: no group, version or kind at all.
    fn is_empty(&self) -> bool {
        self.group.is_empty() && self.version.is_empty() && self.kind.is_empty()
    }
}

/// `null` read as the type's default.
fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;

//! Which kinds the API server serves: every resource in its group's preferred version, as
//! client-go's `ServerPreferredResources` finds them (the namespace controller keeps the namespaced
//! ones, the garbage collector those it can list, watch and delete), and every kind in every version
//! served, as a REST mapper built from discovery resolves an ownerReference's `apiVersion` and `kind`.
//!
//! The API server is asked as client-go asks it: for the aggregated form (`apidiscovery.k8s.io` v2,
//! else v2beta1: two requests, `/api` and `/apis`), else the legacy one (the group list, then one
//! request per group version), which API servers before 1.26 and some proxies answer. A group
//! version the server marks stale (an aggregated API whose backend is down), or whose legacy
//! request fails, is a partial failure: its kinds are left out and the failure is reported, so that
//! the namespace's `NamespaceDeletionDiscoveryFailure` condition says which group failed, in
//! client-go's words.

use std::collections::{BTreeMap, HashSet};

use futures::future::join_all;

use http::header::ACCEPT;
use kube::{Client, core::ApiResource};

mod documents;

pub use documents::GroupList;
use documents::{GroupDoc, GroupMeta, Kinded, NAMESPACED, ResourceDoc, STALE, VersionDoc, legacy};

/// The aggregated discovery document's media type (client-go `discovery.AcceptV2`).
pub const ACCEPT_AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// What discovery asks for, in client-go's order of preference (`acceptDiscoveryFormats`): v2,
/// v2beta1 (the same fields), the legacy documents.
const ACCEPT_DISCOVERY: &str = concat!(
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,",
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,",
    "application/json"
);
/// How often a discovery that left some group out is made in all (client-go `defaultRetries`).
pub const DISCOVERY_ATTEMPTS: usize = 2;
/// How long one discovery request may take (client-go's discovery client sets this timeout when
/// its configuration has none: `defaultTimeout`).
pub const DISCOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(32);

/// One kind, in the version its group prefers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredResource {
    pub group: String,
    pub version: String,
    /// The plural resource name, `configmaps`.
    pub resource: String,
    pub kind: String,
    pub verbs: Vec<String>,
    pub namespaced: bool,
}

/// Where one kind in one served version lives: what a REST mapping gives for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The plural resource name.
    pub resource: String,
    pub namespaced: bool,
}

impl DiscoveredResource {
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
impl std::fmt::Display for DiscoveredResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}, Resource={}", self.group, self.version, self.resource)
    }
}

/// What discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    /// Sorted by group and resource.
    pub resources: Vec<DiscoveredResource>,
    /// Every kind of every group version served, by `apiVersion` and `kind`.
    pub kinds: BTreeMap<(String, String), Mapping>,
    /// Group versions left out (`group/version`, or `v1`), with why.
    pub failed: BTreeMap<String, String>,
}

impl Discovered {
    /// The namespaced resources alone (client-go's `ServerPreferredNamespacedResources`).
    #[must_use]
    pub fn namespaced(mut self) -> Self {
        self.resources.retain(|r| r.namespaced);
        self
    }

    /// The REST mapping of an ownerReference's `apiVersion` and `kind`, if that version serves it.
    pub fn mapping(&self, api_version: &str, kind: &str) -> Option<&Mapping> {
        self.kinds.get(&(api_version.to_owned(), kind.to_owned()))
    }

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
    Request {
        path: String,
        /// The answer's status code, if there was an answer.
        code: Option<u16>,
        message: String,
    },
    #[error("Get {path}: the request timed out after {DISCOVERY_TIMEOUT:?}")]
    TimedOut { path: String },
    #[error("{path}: the API server answered discovery with kind {kind:?}")]
    Unexpected { path: String, kind: String },
    #[error("{path}: {source}")]
    Decode { path: String, source: serde_json::Error },
}

/// Which documents discovery asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aggregated if the server has it, else legacy, as client-go asks.
    Preferred,
    /// The legacy documents only, as from an API server before 1.26 (the e2e suite checks that
    /// both find the same resources).
    Legacy,
}

impl Format {
    fn accept(self) -> &'static str {
        match self {
            Format::Preferred => ACCEPT_DISCOVERY,
            Format::Legacy => "application/json",
        }
    }
}

/// Discovers the served resources, again once if a group was left out (client-go's retry).
pub async fn discover(client: &Client) -> Result<Discovered, DiscoveryError> {
    discover_as(client, Format::Preferred).await
}

/// [`discover`], asking for the documents of `format`.
pub async fn discover_as(client: &Client, format: Format) -> Result<Discovered, DiscoveryError> {
    let mut found = discover_once(client, format).await?;
    for _ in 1..DISCOVERY_ATTEMPTS {
        if found.failed.is_empty() {
            break;
        }
        found = discover_once(client, format).await?;
    }
    Ok(found)
}

async fn discover_once(client: &Client, format: Format) -> Result<Discovered, DiscoveryError> {
    let (legacy, groups) = futures::try_join!(fetch(client, "/api", format), fetch(client, "/apis", format))?;
    Ok(preferred(&[legacy, groups]))
}

/// `/api` or `/apis`, aggregated or, from a server that answers the legacy documents, made the
/// same shape from them.
async fn fetch(client: &Client, path: &'static str, format: Format) -> Result<GroupList, DiscoveryError> {
    let text = match get(client, path, format.accept()).await {
        // An API server without the core group (client-go tolerates it: an empty list).
        Err(DiscoveryError::Request { code: Some(404), .. }) if path == "/api" => {
            return Ok(GroupList::empty());
        }
        other => other?,
    };
    let decode = |source| DiscoveryError::Decode {
        path: path.to_owned(),
        source,
    };
    let kind: Kinded = serde_json::from_str(&text).map_err(decode)?;
    match kind.kind.as_str() {
        "APIGroupDiscoveryList" => serde_json::from_str(&text).map_err(decode),
        "APIVersions" => {
            let core: legacy::Versions = serde_json::from_str(&text).map_err(decode)?;
            Ok(legacy_groups(client, vec![(String::new(), core.versions)]).await)
        }
        "APIGroupList" => {
            let list: legacy::GroupList = serde_json::from_str(&text).map_err(decode)?;
            let groups = list.groups.into_iter().map(legacy::Group::ordered).collect();
            Ok(legacy_groups(client, groups).await)
        }
        _ => Err(DiscoveryError::Unexpected {
            path: path.to_owned(),
            kind: kind.kind,
        }),
    }
}

/// The legacy documents of each group's versions (the group's name, its versions with the preferred
/// one first), every group version fetched at once; a version whose request failed is reported.
async fn legacy_groups(client: &Client, groups: Vec<(String, Vec<String>)>) -> GroupList {
    let items = groups.into_iter().map(|(name, versions)| async move {
        let versions = join_all(versions.into_iter().map(|version| {
            let name = &name;
            async move {
                match legacy_resources(client, name, &version).await {
                    Ok(resources) => VersionDoc {
                        version,
                        resources,
                        ..VersionDoc::default()
                    },
                    Err(e) => VersionDoc {
                        version,
                        failed: Some(e),
                        ..VersionDoc::default()
                    },
                }
            }
        }))
        .await;
        GroupDoc {
            metadata: GroupMeta { name },
            versions,
        }
    });
    GroupList {
        items: join_all(items).await,
    }
}

/// One group version's `APIResourceList`, in the aggregated shape.
async fn legacy_resources(client: &Client, group: &str, version: &str) -> Result<Vec<ResourceDoc>, String> {
    let path = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let text = get(client, &path, "application/json")
        .await
        .map_err(|e| e.to_string())?;
    let list: legacy::ResourceList = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    Ok(list
        .resources
        .into_iter()
        .map(legacy::Resource::aggregated)
        .collect())
}

/// One discovery request's text.
async fn get(client: &Client, path: &str, accept: &str) -> Result<String, DiscoveryError> {
    let request = http::Request::get(path)
        .header(ACCEPT, accept)
        .body(Vec::new())
        .map_err(|e| DiscoveryError::Request {
            path: path.to_owned(),
            code: None,
            message: e.to_string(),
        })?;
    let answer = tokio::time::timeout(DISCOVERY_TIMEOUT, client.request_text(request))
        .await
        .map_err(|_| DiscoveryError::TimedOut {
            path: path.to_owned(),
        })?;
    answer.map_err(|e| DiscoveryError::Request {
        path: path.to_owned(),
        code: match &e {
            kube::Error::Api(s) => Some(s.code),
            _ => None,
        },
        message: crate::ControlError::api("discover", path, e).to_string(),
    })
}

/// The resources of the documents, each group resource in the first version that serves it (the
/// preferred one comes first), stale group versions left out and reported.
pub fn preferred(lists: &[GroupList]) -> Discovered {
    let mut found = Discovered::default();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for group in lists.iter().flat_map(|l| &l.items) {
        let name = &group.metadata.name;
        for version in &group.versions {
            if let Some(e) = &version.failed {
                found
                    .failed
                    .insert(group_version(name, &version.version), e.clone());
                continue;
            }
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
                if r.resource.contains('/') {
                    continue;
                }
                let namespaced = r.scope == NAMESPACED;
                found
                    .kinds
                    .entry((group_version(name, &version.version), kind.kind.clone()))
                    .or_insert_with(|| Mapping {
                        resource: r.resource.clone(),
                        namespaced,
                    });
                if !seen.insert((name.clone(), r.resource.clone())) {
                    continue;
                }
                found.resources.push(DiscoveredResource {
                    group: name.clone(),
                    version: version.version.clone(),
                    resource: r.resource.clone(),
                    kind: kind.kind.clone(),
                    verbs: r.verbs.clone(),
                    namespaced,
                });
            }
        }
    }
    found
        .resources
        .sort_by(|a, b| (&a.group, &a.resource).cmp(&(&b.group, &b.resource)));
    found
}

/// apimachinery's `GroupVersion.String()`: the version alone for the core group.
pub fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

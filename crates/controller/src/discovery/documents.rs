//! The discovery documents, only the fields kcm-rs reads: the aggregated list
//! (`apidiscovery.k8s.io` v2 and v2beta1, the same fields) and the legacy documents, which
//! [`legacy`] turns into the aggregated shape. Every field may be missing or `null`: Go writes an
//! empty slice as `null`, and the API server does for the verbs of a parent it made up.

use serde::{Deserialize, Deserializer};

/// A group version's `freshness` when its aggregated API could not be asked.
pub(super) const STALE: &str = "Stale";
/// A resource's `scope` in a namespace.
pub(super) const NAMESPACED: &str = "Namespaced";

/// `APIGroupDiscoveryList`.
#[derive(Debug, Default, Deserialize)]
pub struct GroupList {
    #[serde(default, deserialize_with = "or_default")]
    pub(super) items: Vec<GroupDoc>,
}

impl GroupList {
    pub(super) fn empty() -> Self {
        Self { items: Vec::new() }
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct GroupDoc {
    #[serde(default, deserialize_with = "or_default")]
    pub(super) metadata: GroupMeta,
    #[serde(default, deserialize_with = "or_default")]
    pub(super) versions: Vec<VersionDoc>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct GroupMeta {
    #[serde(default, deserialize_with = "or_default")]
    pub(super) name: String,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct VersionDoc {
    #[serde(default, deserialize_with = "or_default")]
    pub(super) version: String,
    #[serde(default, deserialize_with = "or_default")]
    pub(super) resources: Vec<ResourceDoc>,
    #[serde(default)]
    pub(super) freshness: Option<String>,
    /// Why a legacy request for this version failed.
    #[serde(skip)]
    pub(super) failed: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourceDoc {
    #[serde(default, deserialize_with = "or_default")]
    pub(super) resource: String,
    #[serde(default)]
    pub(super) response_kind: Option<KindDoc>,
    #[serde(default, deserialize_with = "or_default")]
    pub(super) scope: String,
    #[serde(default, deserialize_with = "or_default")]
    pub(super) verbs: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct KindDoc {
    #[serde(default, deserialize_with = "or_default")]
    pub(super) group: String,
    #[serde(default, deserialize_with = "or_default")]
    pub(super) version: String,
    #[serde(default, deserialize_with = "or_default")]
    pub(super) kind: String,
}

impl KindDoc {
    /// client-go's `emptyKind`: no group, version or kind at all.
    pub(super) fn is_empty(&self) -> bool {
        self.group.is_empty() && self.version.is_empty() && self.kind.is_empty()
    }
}

/// Any document's `kind`, to tell the aggregated answer from the legacy ones.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Kinded {
    #[serde(default, deserialize_with = "or_default")]
    pub(super) kind: String,
}

/// The legacy documents (`APIVersions`, `APIGroupList`, `APIResourceList`), only the fields kcm-rs
/// reads, each turned into the aggregated shape.
pub(super) mod legacy {
    use serde::Deserialize;

    use super::{KindDoc, NAMESPACED, ResourceDoc, or_default};

    #[derive(Debug, Default, Deserialize)]
    pub(in crate::discovery) struct Versions {
        #[serde(default, deserialize_with = "or_default")]
        pub(in crate::discovery) versions: Vec<String>,
    }

    #[derive(Debug, Default, Deserialize)]
    pub(in crate::discovery) struct GroupList {
        #[serde(default, deserialize_with = "or_default")]
        pub(in crate::discovery) groups: Vec<Group>,
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(in crate::discovery) struct Group {
        #[serde(default, deserialize_with = "or_default")]
        name: String,
        #[serde(default, deserialize_with = "or_default")]
        versions: Vec<Version>,
        #[serde(default)]
        preferred_version: Option<Version>,
    }

    #[derive(Debug, Default, Clone, Deserialize)]
    pub(in crate::discovery) struct Version {
        #[serde(default, deserialize_with = "or_default")]
        version: String,
    }

    impl Group {
        /// The group's name and its versions, the preferred one first:
        /// client-go takes a resource from the preferred version if it has it, else from the
        /// first listed version that does, which "first listed wins" does on this order.
        pub(in crate::discovery) fn ordered(self) -> (String, Vec<String>) {
            let preferred = self.preferred_version.map(|v| v.version);
            let mut versions: Vec<String> = self.versions.into_iter().map(|v| v.version).collect();
            if let Some(p) = preferred
                && let Some(i) = versions.iter().position(|v| *v == p)
            {
                let v = versions.remove(i);
                versions.insert(0, v);
            }
            (self.name, versions)
        }
    }

    #[derive(Debug, Default, Deserialize)]
    pub(in crate::discovery) struct ResourceList {
        #[serde(default, deserialize_with = "or_default")]
        pub(in crate::discovery) resources: Vec<Resource>,
    }

    #[derive(Debug, Default, Deserialize)]
    pub(in crate::discovery) struct Resource {
        #[serde(default, deserialize_with = "or_default")]
        name: String,
        #[serde(default)]
        namespaced: bool,
        #[serde(default, deserialize_with = "or_default")]
        kind: String,
        #[serde(default, deserialize_with = "or_default")]
        verbs: Vec<String>,
    }

    impl Resource {
        pub(in crate::discovery) fn aggregated(self) -> ResourceDoc {
            ResourceDoc {
                resource: self.name,
                response_kind: Some(KindDoc {
                    kind: self.kind,
                    ..KindDoc::default()
                }),
                scope: if self.namespaced {
                    NAMESPACED.to_owned()
                } else {
                    String::new()
                },
                verbs: self.verbs,
            }
        }
    }
}

/// `null` read as the type's default.
pub(super) fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

//! How the graph names an object: by the coordinates an ownerReference gives (`apiVersion`, `kind`,
//! `name`, `uid`) and the namespace (upstream `objectReference`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// The finalizer of a deletion that waits for the object's dependents to go (`--cascade=foreground`).
pub const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer of a deletion that leaves the object's dependents, without their references to it.
pub const ORPHAN: &str = "orphan";

/// An object's coordinates. Fields are declared in the order upstream sorts identities by
/// (`referenceLessThan`): kind, apiVersion, namespace, name, uid; the derived order is that one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Identity {
    pub kind: String,
    pub api_version: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl Identity {
    /// The owner an ownerReference of an object in `namespace` names.
    pub fn of_owner(owner: &OwnerReference, namespace: &str) -> Self {
        Self {
            kind: owner.kind.clone(),
            api_version: owner.api_version.clone(),
            namespace: namespace.to_owned(),
            name: owner.name.clone(),
            uid: owner.uid.clone(),
        }
    }

    /// Whether `owner` names this object by all four coordinates (upstream
    /// `ownerReferenceMatchesCoordinates`).
    pub fn matches(&self, owner: &OwnerReference) -> bool {
        self.uid == owner.uid
            && self.name == owner.name
            && self.kind == owner.kind
            && self.api_version == owner.api_version
    }

    pub fn is_namespaced(&self) -> bool {
        !self.namespace.is_empty()
    }
}

/// As upstream prints an `objectReference`, which the `OwnerRefInvalidNamespace` event quotes.
impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version, self.kind, self.namespace, self.name, self.uid
        )
    }
}

/// Whether an ownerReference blocks its owner's foreground deletion.
pub fn blocks(owner: &OwnerReference) -> bool {
    owner.block_owner_deletion == Some(true)
}

/// Whether an object is being deleted and `finalizer` holds it: the start of a deletion the
/// collector finishes.
pub fn waits_with(deleting: bool, finalizers: &[String], finalizer: &str) -> bool {
    deleting && finalizers.iter().any(|f| f == finalizer)
}

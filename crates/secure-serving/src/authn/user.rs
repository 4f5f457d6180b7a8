//! Who made a request, as the API server's `user.Info` describes a user.

use std::collections::BTreeMap;

/// The name every request without credentials gets (k8s.io/apiserver `user.Anonymous`).
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of anonymous requests (`user.AllUnauthenticated`).
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group every authenticated user is added to (`user.AllAuthenticated`).
pub const ALL_AUTHENTICATED: &str = "system:authenticated";

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// What a request without credentials is served as: anonymous authentication is on in
    /// kube-controller-manager's delegating authenticator, and the authorizer decides.
    pub fn anonymous() -> UserInfo {
        UserInfo {
            name: ANONYMOUS.to_owned(),
            groups: vec![ALL_UNAUTHENTICATED.to_owned()],
            ..UserInfo::default()
        }
    }

    /// Adds `system:authenticated`, as the API server's `AuthenticatedGroupAdder` does for every
    /// user an authenticator vouched for.
    #[must_use]
    pub fn with_authenticated_group(mut self) -> UserInfo {
        let unauthenticated = self.name == ANONYMOUS || self.groups.iter().any(|g| g == ALL_UNAUTHENTICATED);
        if !unauthenticated && !self.groups.iter().any(|g| g == ALL_AUTHENTICATED) {
            self.groups.push(ALL_AUTHENTICATED.to_owned());
        }
        self
    }
}

//! Deciding: which of the accounts every namespace must have are missing from one.

use k8s_openapi::api::core::v1::Namespace;

/// The ServiceAccounts every active namespace gets (upstream
/// `DefaultServiceAccountsControllerOptions`).
pub const ACCOUNTS: &[&str] = &["default"];

/// The accounts of [`ACCOUNTS`] that `exists` does not find in `ns`; none unless the namespace is
/// `Active` (a terminating namespace refuses new objects, and a namespace without a phase has not
/// been admitted).
pub fn missing(ns: &Namespace, exists: impl Fn(&str) -> bool) -> Vec<&'static str> {
    let active = ns.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Active");
    if !active {
        return Vec::new();
    }
    ACCOUNTS.iter().copied().filter(|name| !exists(name)).collect()
}

#[cfg(test)]
#[path = "ensure_tests.rs"]
mod tests;

//! The ServiceAccount controller (upstream `pkg/controller/serviceaccount`, the
//! `serviceaccount-controller` of Kubernetes 1.36): every active namespace has a ServiceAccount
//! named `default`, made again if deleted.
//!
//! kube-controller-manager runs it by default; kcm-rs runs it only when asked
//! (`--controllers=*,serviceaccount-controller`), for clusters without kube-controller-manager,
//! where ServiceAccount admission (on by default in kube-apiserver) refuses every pod of a
//! namespace that has no `default` ServiceAccount.
//!
//! Start here: [`missing`] (`ensure.rs`) is the whole decision, a pure function of the namespace
//! and the cached ServiceAccounts; `controller.rs` wires the Namespace and ServiceAccount informers
//! onto the skeleton and creates what is missing.
//!
//! Upstream records no events here, and neither does kcm-rs.
#![forbid(unsafe_code)]

mod controller;
mod ensure;
mod error;

pub use controller::{COMPONENT, QUEUE_NAME, ROLE, ServiceAccountController, WORKERS, create_missing};
pub use ensure::{ACCOUNTS, missing};
pub use error::SyncError;

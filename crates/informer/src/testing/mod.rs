//! Test support: an in-process fake API server behind a real `kube::Client`.

pub(crate) mod fake_api;

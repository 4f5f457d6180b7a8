//! Test support: an in-process fake API server behind a real `kube::Client`.

pub mod fake_api;

//! Which events wake which namespace, and what a creation sends and forgives, against an in-memory
//! API server (upstream `serviceaccounts_controller_test.go`'s cases).

use serde_json::json;
use testing::{ApiServer, Verb, drain};

use super::*;

fn account(ns: &str, name: &str) -> Arc<ServiceAccount> {
    Arc::new(serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns}})).unwrap())
}

fn namespace(name: &str) -> Arc<Namespace> {
    Arc::new(serde_json::from_value(json!({"metadata": {"name": name}})).unwrap())
}

#[tokio::test]
async fn namespaces_wake_themselves_and_deleted_accounts_their_namespace() {
    let queue = WorkQueue::new();
    let namespaces = NamespaceHandler(queue.clone());
    namespaces.on_add(&namespace("a"), false);
    namespaces.on_update(&namespace("b"), &namespace("b"));
    namespaces.on_delete(&DeletedObject::Final(namespace("c")));
    let accounts = AccountHandler {
        queue: queue.clone(),
        on_add: false,
    };
    accounts.on_add(&account("d", "default"), false);
    accounts.on_update(&account("e", "default"), &account("e", "default"));
    accounts.on_delete(&DeletedObject::Final(account("f", "default")));
    accounts.on_delete(&DeletedObject::Unknown {
        key: ObjectKey::new(Some("g"), "default"),
        last_known: account("g", "default"),
    });
    assert_eq!(drain(&queue), ["a", "b", "f", "g"]);
}

#[tokio::test]
async fn in_shadow_mode_an_added_account_wakes_its_namespace() {
    let queue = WorkQueue::new();
    let accounts = AccountHandler {
        queue: queue.clone(),
        on_add: true,
    };
    accounts.on_add(&account("d", "default"), false);
    assert_eq!(drain(&queue), ["d"]);
}

#[tokio::test]
async fn the_account_is_created_with_its_name_alone() {
    let server = ApiServer::new();
    create_missing(&server.client(), "ns", &["default"])
        .await
        .unwrap();
    let create = server
        .requests()
        .into_iter()
        .find(|r| r.verb == Some(Verb::Create))
        .expect("a create");
    assert_eq!(
        create.body["metadata"],
        json!({"name": "default", "namespace": "ns"})
    );
    assert!(server.get::<ServiceAccount>("ns", "default").is_some());
}

#[tokio::test]
async fn an_account_already_there_or_a_terminating_namespace_is_no_error() {
    let server = ApiServer::new();
    server.on(Verb::Create, "serviceaccounts").fail(
        409,
        "AlreadyExists",
        "serviceaccounts \"default\" already exists",
    );
    create_missing(&server.client(), "ns", &["default"])
        .await
        .unwrap();
    server.clear_rules();
    server.on(Verb::Create, "serviceaccounts").answer(
        403,
        json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403, "reason": "Forbidden",
            "message": "serviceaccounts \"default\" is forbidden: unable to create new content in namespace ns because it is being terminated",
            "details": {"name": "default", "kind": "serviceaccounts", "causes": [
                {"reason": controller::NAMESPACE_TERMINATING_CAUSE, "message": "namespace ns is being terminated", "field": "metadata.namespace"}
            ]},
        }),
    );
    create_missing(&server.client(), "ns", &["default"])
        .await
        .unwrap();
}

#[tokio::test]
async fn any_other_refusal_is_an_error_naming_the_namespace() {
    let server = ApiServer::new();
    server.on(Verb::Create, "serviceaccounts").fail(
        403,
        "Forbidden",
        "serviceaccounts is forbidden: User \"x\" cannot create",
    );
    let err = create_missing(&server.client(), "ns", &["default"])
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("namespace ns: "), "{err}");
    assert!(err.to_string().contains("cannot create"), "{err}");
}

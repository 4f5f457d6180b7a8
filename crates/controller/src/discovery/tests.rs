//! The choice of resources from aggregated discovery documents shaped as kube-apiserver 1.36 answers.

use serde_json::json;

use super::*;

fn preferred_namespaced(lists: &[GroupList]) -> Discovered {
    preferred(lists).namespaced()
}

fn list(items: serde_json::Value) -> GroupList {
    serde_json::from_value(json!({"kind": "APIGroupDiscoveryList", "items": items})).unwrap()
}

fn resource(name: &str, scope: &str, verbs: &[&str]) -> serde_json::Value {
    json!({
        "resource": name,
        "responseKind": {"group": "", "version": "", "kind": "K"},
        "scope": scope,
        "verbs": verbs,
        "subresources": [{"subresource": "status", "responseKind": {"kind": "K"}, "verbs": ["get"]}],
    })
}

fn names(d: &Discovered) -> Vec<String> {
    d.resources.iter().map(ToString::to_string).collect()
}

#[test]
fn namespaced_resources_in_the_preferred_version_only() {
    let legacy = list(
        json!([{"metadata": {"name": ""}, "versions": [{"version": "v1", "resources": [
            resource("pods", "Namespaced", &["delete", "list"]),
            resource("nodes", "Cluster", &["delete", "list"]),
        ]}]}]),
    );
    let groups = list(json!([{"metadata": {"name": "example.com"}, "versions": [
        {"version": "v2", "resources": [resource("widgets", "Namespaced", &["delete"])]},
        {"version": "v1", "resources": [
            resource("widgets", "Namespaced", &["delete"]),
            resource("gadgets", "Namespaced", &["delete"]),
        ]},
    ]}]));
    let found = preferred_namespaced(&[legacy, groups]);
    assert_eq!(
        names(&found),
        [
            "/v1, Resource=pods",
            "example.com/v1, Resource=gadgets",
            "example.com/v2, Resource=widgets"
        ]
    );
    assert_eq!(found.failure(), None);
    assert!(found.resources[0].is_pods());
    assert!(found.resources[0].supports("list") && !found.resources[1].supports("list"));
}

#[test]
fn a_stale_group_version_is_left_out_and_reported_in_client_gos_words() {
    let groups = list(json!([
        {"metadata": {"name": "broken.example.com"}, "versions": [{"version": "v1", "freshness": "Stale"}]},
        {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "freshness": "Current", "resources": [
            resource("deployments", "Namespaced", &["delete"]),
        ]}]},
    ]));
    let found = preferred_namespaced(&[groups]);
    assert_eq!(names(&found), ["apps/v1, Resource=deployments"]);
    assert_eq!(
        found.failure().as_deref(),
        Some(
            "unable to retrieve the complete list of server APIs: broken.example.com/v1: \
             stale GroupVersion discovery: broken.example.com/v1"
        )
    );
}

#[test]
fn a_stale_preferred_version_gives_way_to_the_next() {
    let groups = list(json!([{"metadata": {"name": "example.com"}, "versions": [
        {"version": "v2", "freshness": "Stale"},
        {"version": "v1", "resources": [resource("widgets", "Namespaced", &["delete"])]},
    ]}]));
    let found = preferred_namespaced(&[groups]);
    assert_eq!(names(&found), ["example.com/v1, Resource=widgets"]);
    assert_eq!(found.failed.len(), 1);
}

#[test]
fn nulls_where_go_writes_empty_slices_are_read_as_empty() {
    let groups: GroupList = serde_json::from_value(json!({"kind": "APIGroupDiscoveryList", "items": [
        {"metadata": {"name": "subresources.example.com"}, "versions": [{"version": "v1", "resources": [
            {"resource": "virtualmachines", "responseKind": {"group": "", "version": "", "kind": ""},
             "scope": "Namespaced", "verbs": null,
             "subresources": [{"subresource": "console", "verbs": ["get"]}]},
            {"resource": "widgets", "responseKind": {"kind": "Widget"}, "scope": "Namespaced", "verbs": null},
        ]}]},
        {"metadata": {"name": "empty.example.com"}, "versions": null},
    ]}))
    .unwrap();
    let found = preferred_namespaced(&[groups]);
    assert_eq!(names(&found), ["subresources.example.com/v1, Resource=widgets"]);
    assert!(found.resources[0].verbs.is_empty(), "kept, but not deletable");
}

#[test]
fn a_resource_without_its_kind_is_skipped() {
    let groups = list(
        json!([{"metadata": {"name": "example.com"}, "versions": [{"version": "v1", "resources": [
            {"resource": "parents", "scope": "Namespaced", "verbs": ["delete"]},
            {"resource": "empty", "responseKind": {"group": "", "version": "", "kind": ""}, "scope": "Namespaced"},
        ]}]}]),
    );
    assert!(preferred_namespaced(&[groups]).resources.is_empty());
}

#[test]
fn the_dynamic_addressing_of_core_and_grouped_kinds() {
    let core = DiscoveredResource {
        group: String::new(),
        version: "v1".into(),
        resource: "configmaps".into(),
        kind: "ConfigMap".into(),
        verbs: vec![],
        namespaced: true,
    };
    assert_eq!(core.api_resource().api_version, "v1");
    let apps = DiscoveredResource {
        group: "apps".into(),
        ..core
    };
    assert_eq!(apps.api_resource().api_version, "apps/v1");
}

#[test]
fn legacy_documents_choose_the_preferred_version_wherever_it_is_listed() {
    let group: legacy::Group = serde_json::from_value(json!({
        "name": "example.com",
        "versions": [{"groupVersion": "example.com/v2", "version": "v2"}, {"groupVersion": "example.com/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "example.com/v1", "version": "v1"},
    }))
    .unwrap();
    let (name, versions) = group.ordered();
    assert_eq!(name, "example.com");
    assert_eq!(versions, ["v1", "v2"]);
    let resources = |names: &[(&str, bool)]| -> Vec<ResourceDoc> {
        names
            .iter()
            .map(|(n, namespaced)| {
                serde_json::from_value::<legacy::Resource>(json!({
                    "name": n, "namespaced": namespaced, "kind": "K", "verbs": ["delete"],
                }))
                .unwrap()
                .aggregated()
            })
            .collect()
    };
    let doc = GroupList {
        items: vec![GroupDoc {
            metadata: GroupMeta { name },
            versions: vec![
                VersionDoc {
                    version: "v1".into(),
                    resources: resources(&[("widgets", true), ("nodes", false)]),
                    ..VersionDoc::default()
                },
                VersionDoc {
                    version: "v2".into(),
                    resources: resources(&[("widgets", true), ("gadgets", true)]),
                    ..VersionDoc::default()
                },
                VersionDoc {
                    version: "v3".into(),
                    failed: Some("the server is currently unable to handle the request".into()),
                    ..VersionDoc::default()
                },
            ],
        }],
    };
    let found = preferred_namespaced(&[doc]);
    assert_eq!(
        names(&found),
        [
            "example.com/v2, Resource=gadgets",
            "example.com/v1, Resource=widgets"
        ]
    );
    assert_eq!(
        found.failure().as_deref(),
        Some(
            "unable to retrieve the complete list of server APIs: example.com/v3: \
             the server is currently unable to handle the request"
        )
    );
}

#[test]
fn every_scope_in_its_preferred_version_and_every_served_version_mapped() {
    let groups = list(json!([{"metadata": {"name": "example.com"}, "versions": [
        {"version": "v2", "resources": [resource("widgets", "Namespaced", &["delete"])]},
        {"version": "v1", "resources": [
            resource("widgets", "Namespaced", &["delete"]),
            resource("clusterwidgets", "Cluster", &["delete", "list", "watch"]),
        ]},
        {"version": "v0", "freshness": "Stale"},
    ]}]));
    let found = preferred(&[groups]);
    let scoped: Vec<(String, bool)> = found
        .resources
        .iter()
        .map(|r| (r.to_string(), r.namespaced))
        .collect();
    assert_eq!(
        scoped,
        [
            ("example.com/v1, Resource=clusterwidgets".to_owned(), false),
            ("example.com/v2, Resource=widgets".to_owned(), true),
        ]
    );
    // The kind `K` of both versions maps, to the first resource listed with it in each.
    let widgets = Mapping {
        resource: "widgets".into(),
        namespaced: true,
    };
    assert_eq!(found.mapping("example.com/v2", "K"), Some(&widgets));
    assert_eq!(found.mapping("example.com/v1", "K"), Some(&widgets));
    assert_eq!(found.mapping("example.com/v0", "K"), None);
    assert_eq!(found.clone().namespaced().resources.len(), 1);
}

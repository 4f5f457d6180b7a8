use std::collections::HashMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{Status, response::reason};
use parking_lot::Mutex;

use super::*;

/// Answers each object's patch from a script by name (success unless told), recording the order.
#[derive(Default)]
struct Scripted {
    answers: HashMap<&'static str, (u16, &'static str)>,
    sent: Mutex<Vec<String>>,
}

impl ClaimWrites<ConfigMap> for Scripted {
    fn adopt_patch(&self, owner: &Owner, obj: &ConfigMap) -> Value {
        adopt_patch(owner, obj.metadata.uid.as_deref().unwrap_or(""))
    }

    fn release_patch(&self, owner: &Owner, obj: &ConfigMap) -> Value {
        release_patch(&owner.uid, obj.metadata.uid.as_deref().unwrap_or(""))
    }

    async fn patch(&self, obj: &ConfigMap, _: &Value) -> Result<Option<String>, ControlError> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        self.sent.lock().push(name.clone());
        match self.answers.get(name.as_str()) {
            None => Ok(Some(format!("rv-{name}"))),
            Some((code, why)) => {
                let e = kube::Error::Api(Status::failure(why, why).with_code(*code).boxed());
                Err(ControlError::api("patch configmap", format!("ns/{name}"), e))
            }
        }
    }
}

fn obj(name: &str) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    })
}

fn owner() -> Owner {
    Owner {
        api_version: "v1".into(),
        kind: "Owner".into(),
        namespace: "ns".into(),
        name: "o".into(),
        uid: "uid-o".into(),
        resource_version: String::new(),
        deleting: false,
    }
}

fn plan(adopt: &[&str], release: &[&str]) -> ClaimPlan<ConfigMap> {
    ClaimPlan {
        owned: Vec::new(),
        adopt: adopt.iter().map(|n| obj(n)).collect(),
        release: release.iter().map(|n| obj(n)).collect(),
    }
}

fn names(objs: &[Arc<ConfigMap>]) -> Vec<String> {
    objs.iter().filter_map(|o| o.metadata.name.clone()).collect()
}

#[tokio::test]
async fn only_a_gone_orphan_is_skipped_and_a_gone_or_recreated_release_is_done() {
    let writes = Scripted {
        answers: [
            ("a", (404, reason::NOT_FOUND)),
            ("r1", (404, reason::NOT_FOUND)),
            ("r2", (422, reason::INVALID)),
        ]
        .into(),
        ..Scripted::default()
    };
    let out = execute_claims(&writes, &owner(), &plan(&["a", "b"], &["r1", "r2"]), || async {
        Ok(())
    })
    .await;
    assert_eq!(names(&out.gone), ["a"]);
    assert_eq!(names(&out.adopted), ["b"]);
    assert_eq!(out.adopted_versions, ["rv-b"]);
    assert!(out.first_error().is_none());
}

#[tokio::test]
async fn every_claim_is_tried_and_the_first_failure_is_reported() {
    let writes = Scripted {
        answers: [
            ("a", (422, reason::INVALID)),
            ("b", (500, reason::INTERNAL_ERROR)),
            ("c", (404, reason::NOT_FOUND)),
            ("r", (500, reason::INTERNAL_ERROR)),
        ]
        .into(),
        ..Scripted::default()
    };
    let out = execute_claims(&writes, &owner(), &plan(&["a", "b", "c"], &["r"]), || async {
        Ok(())
    })
    .await;
    assert_eq!(*writes.sent.lock(), ["a", "b", "c", "r"]);
    assert_eq!(out.errors.len(), 3);
    assert!(
        out.first_error().unwrap().is_invalid(),
        "the first failure is reported"
    );
}

#[tokio::test]
async fn a_refused_recheck_adopts_nothing_but_still_releases() {
    let writes = Scripted::default();
    let refused = || async {
        Err(ControlError::Refused {
            what: "adopting".into(),
            message: "gone".into(),
        })
    };
    let out = execute_claims(&writes, &owner(), &plan(&["a"], &["r"]), refused).await;
    assert_eq!(*writes.sent.lock(), ["r"]);
    assert!(out.adopted.is_empty());
    assert!(matches!(out.first_error(), Some(ControlError::Refused { .. })));
}

#[tokio::test]
async fn nothing_to_adopt_asks_no_recheck() {
    let writes = Scripted::default();
    let out = execute_claims(&writes, &owner(), &plan(&[], &["r"]), || async {
        panic!("no adoption, no fresh read")
    })
    .await;
    assert!(out.first_error().is_none());
}

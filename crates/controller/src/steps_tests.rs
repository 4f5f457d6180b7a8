use std::{sync::Arc, time::Duration};

use informer::ObjectKey;
use k8s_openapi::api::core::v1::Namespace;
use parking_lot::Mutex;

use super::{Comparison, Decided, Freshness, Steps, sync};
use crate::shadow::ShadowState;

/// Steps that record which of them ran, with the answers each gives set by the test.
struct Recorded {
    calls: Mutex<Vec<&'static str>>,
    object: Option<u32>,
    /// A cache behind this controller's writes: an error (`Some(None)`) or a quiet recheck.
    stale: Option<Option<Duration>>,
    decided: fn() -> Decided<u32>,
    /// UIDs of orphans the claims find deleted.
    gone: Vec<String>,
    comparison: fn() -> Comparison,
    shadow: Option<ShadowState>,
    client: kube::Client,
}

impl Recorded {
    fn new(object: Option<u32>) -> Self {
        Self {
            calls: Mutex::default(),
            object,
            stale: None,
            decided: || Decided::Plan(7),
            gone: Vec::new(),
            comparison: Comparison::default,
            shadow: None,
            client: kcm_testing::ApiServer::new().client(),
        }
    }

    /// In shadow mode, on a server where the key's namespace exists (in a namespace being deleted,
    /// or gone, nothing is reported).
    fn shadowed(mut self, settle: Duration) -> Self {
        let server = kcm_testing::ApiServer::new();
        let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "ns"}})).unwrap();
        server.insert(&ns);
        self.client = server.client();
        self.shadow = Some(ShadowState::new(settle, |_| {}));
        self
    }

    fn calls(&self) -> Vec<&'static str> {
        self.calls.lock().clone()
    }

    fn call(&self, step: &'static str) {
        self.calls.lock().push(step);
    }
}

impl Steps for Recorded {
    const NAME: &'static str = "test-controller";
    type Object = u32;
    type Plan = u32;
    type Error = String;

    fn ensure_fresh(&self, key: &ObjectKey) -> Result<Freshness, String> {
        self.call("fresh");
        match self.stale {
            Some(None) => Err(format!("{key}: stale")),
            Some(Some(after)) => Ok(Freshness::Recheck(after)),
            None => Ok(Freshness::Fresh),
        }
    }

    fn get(&self, _: &ObjectKey) -> Option<Arc<u32>> {
        self.call("get");
        self.object.map(Arc::new)
    }

    fn forget(&self, _: &ObjectKey) {
        self.call("forget");
    }

    fn shadow(&self) -> Option<&ShadowState> {
        self.shadow.as_ref()
    }

    fn client(&self) -> &kube::Client {
        &self.client
    }

    fn decide(&self, _: &ObjectKey, object: Arc<u32>) -> Result<Decided<u32>, String> {
        assert_eq!(Some(*object), self.object, "decided on what was read");
        self.call("decide");
        Ok((self.decided)())
    }

    fn compare(&self, _: &ObjectKey, plan: u32) -> Comparison {
        assert_eq!(plan, 7);
        self.call("compare");
        (self.comparison)()
    }

    async fn claim(&self, _: &ObjectKey, plan: &u32) -> Result<Vec<String>, String> {
        assert_eq!(*plan, 7);
        self.call("claim");
        Ok(self.gone.clone())
    }

    fn without(&self, _: &ObjectKey, plan: u32, gone: &[String]) -> Result<Decided<u32>, String> {
        assert_eq!(gone, self.gone);
        self.call("without");
        Ok(Decided::Plan(plan + 1))
    }

    async fn execute(&self, _: &ObjectKey, plan: u32) -> Result<Option<Duration>, String> {
        assert!(plan == 7 || plan == 8 && !self.gone.is_empty(), "{plan}");
        self.call("execute");
        Ok(Some(Duration::from_secs(3)))
    }
}

fn key() -> ObjectKey {
    ObjectKey::new(Some("ns"), "web")
}

#[tokio::test]
async fn a_plan_is_executed_and_its_requeue_returned() {
    let steps = Recorded::new(Some(1));
    assert_eq!(sync(&steps, &key()).await, Ok(Some(Duration::from_secs(3))));
    assert_eq!(steps.calls(), ["fresh", "get", "decide", "claim", "execute"]);
}

#[tokio::test]
async fn an_orphan_deleted_before_its_adoption_is_planned_without() {
    let mut steps = Recorded::new(Some(1));
    steps.gone = vec!["uid-1".into()];
    sync(&steps, &key()).await.unwrap();
    assert_eq!(
        steps.calls(),
        ["fresh", "get", "decide", "claim", "without", "execute"]
    );
}

#[tokio::test]
async fn a_gone_object_is_forgotten_without_a_decision() {
    let steps = Recorded::new(None);
    assert_eq!(sync(&steps, &key()).await, Ok(None));
    assert_eq!(steps.calls(), ["fresh", "get", "forget"]);
}

#[tokio::test]
async fn a_stale_cache_holds_back_even_the_forgetting() {
    let mut steps = Recorded::new(None);
    steps.stale = Some(None);
    assert_eq!(sync(&steps, &key()).await, Err("ns/web: stale".to_owned()));
    assert_eq!(steps.calls(), ["fresh"]);
}

#[tokio::test]
async fn a_quiet_recheck_ends_the_sync_with_its_wake_up() {
    let mut steps = Recorded::new(Some(1));
    steps.stale = Some(Some(Duration::from_secs(1)));
    assert_eq!(sync(&steps, &key()).await, Ok(Some(Duration::from_secs(1))));
    assert_eq!(steps.calls(), ["fresh"]);
}

#[tokio::test]
async fn nothing_to_do_ends_the_sync_with_its_wake_up() {
    let mut steps = Recorded::new(Some(1));
    steps.decided = || Decided::Nothing(Some(Duration::from_secs(9)));
    assert_eq!(sync(&steps, &key()).await, Ok(Some(Duration::from_secs(9))));
    assert_eq!(steps.calls(), ["fresh", "get", "decide"]);
}

#[tokio::test]
async fn shadow_mode_compares_and_never_executes() {
    let mut steps = Recorded::new(Some(1)).shadowed(Duration::from_secs(60));
    steps.comparison = || Comparison {
        fingerprint: 1,
        differences: vec!["would create 1 pod".into()],
        again: Some(Duration::from_secs(5)),
    };
    let again = sync(&steps, &key()).await.unwrap();
    assert_eq!(steps.calls(), ["fresh", "get", "decide", "compare"]);
    assert_eq!(
        again,
        Some(Duration::from_secs(5)),
        "the earlier of the decision's wake-up and the settle time"
    );

    steps.comparison = || Comparison {
        fingerprint: 1,
        differences: vec!["would create 1 pod".into()],
        again: None,
    };
    let settle = sync(&steps, &key()).await.unwrap().unwrap();
    assert!(
        settle > Duration::from_secs(50) && settle <= Duration::from_secs(60),
        "{settle:?}"
    );
}

#[tokio::test]
async fn shadow_mode_forgets_a_gone_object_and_one_that_is_not_ours() {
    let steps = Recorded::new(Some(1)).shadowed(Duration::ZERO);
    let differing = || Comparison {
        fingerprint: 1,
        differences: vec!["would delete 1 pod".into()],
        again: None,
    };
    let mut steps = steps;
    steps.comparison = differing;
    sync(&steps, &key()).await.unwrap();
    let state = steps.shadow.as_ref().unwrap();
    assert_eq!(
        state.current().len(),
        1,
        "a difference past its settle time is reported"
    );

    steps.decided = || Decided::NotOurs;
    sync(&steps, &key()).await.unwrap();
    assert!(steps.shadow.as_ref().unwrap().current().is_empty());
    assert!(
        steps.calls().ends_with(&["decide"]),
        "nothing else is dropped, as upstream"
    );

    steps.decided = || Decided::Plan(7);
    sync(&steps, &key()).await.unwrap();
    steps.object = None;
    sync(&steps, &key()).await.unwrap();
    assert!(steps.shadow.as_ref().unwrap().current().is_empty());
}

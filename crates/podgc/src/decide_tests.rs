//! Upstream's `gc_controller_test.go` tables, as far as they are decisions (which pods, in which
//! order); the writes are `force_delete`'s.

use controller::compact_pod::{PodSpec, PodStatus};
use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};

use super::*;

fn at(seconds: i64) -> Time {
    Time(Timestamp::from_second(1_800_000_000 + seconds).unwrap())
}

fn pod(name: &str, phase: &'static str, node: &str, created: i64) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            creation_timestamp: Some(at(created)),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: (!node.is_empty()).then(|| node.to_owned()),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: (!phase.is_empty()).then(|| phase.into()),
            ..PodStatus::default()
        }),
    })
}

fn evicted(p: Arc<Pod>) -> Arc<Pod> {
    let mut p = (*p).clone();
    p.status.as_mut().unwrap().reason = Some("Evicted".into());
    Arc::new(p)
}

fn terminating(p: Arc<Pod>) -> Arc<Pod> {
    let mut p = (*p).clone();
    p.metadata.deletion_timestamp = Some(at(1_000));
    Arc::new(p)
}

fn names(pods: &[Arc<Pod>]) -> Vec<&str> {
    pods.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect()
}

fn ready_nodes(names: &[&str]) -> HashMap<String, NodeState> {
    names
        .iter()
        .map(|n| {
            (
                (*n).to_owned(),
                NodeState {
                    ready: true,
                    out_of_service: false,
                },
            )
        })
        .collect()
}

#[test]
fn terminated_pods_beyond_the_threshold_go_evicted_first_then_oldest_then_by_name() {
    let pods = vec![
        pod("a", "Failed", "n", 3),
        pod("b", "Succeeded", "n", 1),
        pod("c", "Running", "n", 0),
        evicted(pod("d", "Failed", "n", 9)),
        pod("e", "Succeeded", "n", 1),
        pod("f", "", "n", 0),
        pod("g", "Pending", "n", 0),
        pod("h", "Unknown", "n", 0),
    ];
    let nodes = ready_nodes(&["n"]);
    let plan = decide(&pods, &nodes, 2);
    // Terminated: a, b, d, e, f (an empty phase counts); 5 - 2 = 3 go.
    assert_eq!(names(&plan.terminated), ["d", "f", "b"]);
    assert!(decide(&pods, &nodes, 5).terminated.is_empty());
    assert!(decide(&pods, &nodes, 0).terminated.is_empty(), "0 turns it off");
    assert!(decide(&pods, &nodes, -1).terminated.is_empty());
}

#[test]
fn terminating_pods_go_only_from_a_node_not_ready_and_out_of_service() {
    let mut nodes = HashMap::new();
    nodes.insert(
        "down".to_owned(),
        NodeState {
            ready: false,
            out_of_service: true,
        },
    );
    nodes.insert(
        "tainted-ready".to_owned(),
        NodeState {
            ready: true,
            out_of_service: true,
        },
    );
    nodes.insert(
        "not-ready".to_owned(),
        NodeState {
            ready: false,
            out_of_service: false,
        },
    );
    let pods = vec![
        terminating(pod("late", "Running", "down", 5)),
        terminating(pod("early", "Running", "down", 1)),
        pod("running", "Running", "down", 0),
        terminating(pod("ready", "Running", "tainted-ready", 0)),
        terminating(pod("untainted", "Running", "not-ready", 0)),
        terminating(pod("nowhere", "Running", "missing", 0)),
    ];
    let plan = decide(&pods, &nodes, 12_500);
    assert_eq!(names(&plan.out_of_service), ["early", "late"]);
    assert_eq!(plan.missing_nodes, BTreeSet::from(["missing".to_owned()]));
}

#[test]
fn pods_of_missing_nodes_wait_for_the_lookup_and_unscheduled_terminating_ones_go() {
    let pods = vec![
        pod("bound", "Running", "gone", 0),
        pod("also", "Pending", "gone", 0),
        pod("home", "Running", "here", 0),
        pod("waiting", "Pending", "", 0),
        terminating(pod("leaving", "Pending", "", 0)),
    ];
    let plan = decide(&pods, &ready_nodes(&["here"]), 12_500);
    assert_eq!(plan.missing_nodes, BTreeSet::from(["gone".to_owned()]));
    assert_eq!(names(&plan.unscheduled), ["leaving"]);
    assert_eq!(
        names(&orphans(&pods, &BTreeSet::from(["gone".to_owned()]))),
        ["bound", "also"]
    );
    assert!(orphans(&pods, &BTreeSet::new()).is_empty());
}

#[test]
fn a_node_is_ready_by_its_ready_condition_and_out_of_service_by_its_taint() {
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "n"},
        "spec": {"taints": [{"key": OUT_OF_SERVICE_TAINT, "value": "nodeshutdown", "effect": "NoExecute"}]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }))
    .unwrap();
    assert_eq!(
        NodeState::of(&node),
        NodeState {
            ready: false,
            out_of_service: true
        }
    );
    assert_eq!(
        NodeState::of(&Node::default()),
        NodeState {
            ready: false,
            out_of_service: false
        },
        "no Ready condition is not ready"
    );
}

//! The orphan worker: which pods lose the finalizer (a Job deleted with background or orphan
//! propagation, a finished Job, no owner) and which keep it (a live Job's, another controller's, an
//! externally managed Job's), by pod key and by selector sweep.

use controller::compact_pod::Pod;
use std::sync::Arc;

use controller::{EventRecorder, KubePodControl};
use informer::{Lister, Store, store::namespace_index};
use k8s_openapi::api::batch::v1::Job;
use testing::{ApiServer, Verb};

use super::*;
use crate::{
    conditions::{COMPLETE, new_condition},
    fixtures::{job, pod, ts},
    spec::has_tracking_finalizer,
};

fn lister<K: kube::Resource<DynamicType = ()> + Clone>(objs: Vec<K>) -> Lister<K> {
    let store = Store::new();
    store.add_index(informer::store::NAMESPACE_INDEX, namespace_index());
    for o in objs {
        store.upsert(ObjectKey::of(&o), Arc::new(o));
    }
    Lister::new(store)
}

fn finished(mut j: Job) -> Job {
    j.status.get_or_insert_default().conditions = Some(vec![new_condition(COMPLETE, "True", "", "", ts(1))]);
    j
}

/// A second Job `other` (uid `other-uid`) selecting the same labels.
fn other_job() -> Job {
    let mut j = job(1, Some(1));
    j.metadata.name = Some("other".into());
    j.metadata.uid = Some("other-uid".into());
    j
}

fn owned_by_other(name: &str) -> Pod {
    let mut p = (*pod(name).build()).clone();
    let r = &mut p.metadata.owner_references.as_mut().unwrap()[0];
    r.name = "other".into();
    r.uid = "other-uid".into();
    p
}

/// The server holds the pods (the orphan worker writes only pods); the caches hold the Jobs too.
struct World {
    server: ApiServer,
    control: KubePodControl,
    pods: Lister<Pod>,
    jobs: Lister<Job>,
}

impl World {
    fn new(jobs: Vec<Job>, pods: Vec<Pod>) -> Self {
        let server = ApiServer::new();
        for p in &pods {
            server.insert(p);
        }
        World {
            control: KubePodControl::new(server.client(), EventRecorder::in_memory()),
            server,
            pods: lister(pods),
            jobs: lister(jobs),
        }
    }

    fn cleaner(&self) -> OrphanCleaner<'_, KubePodControl> {
        OrphanCleaner {
            pods: &self.pods,
            jobs: &self.jobs,
            control: &self.control,
            read_only: false,
        }
    }

    /// Every pod write, as `<verb> <name>`.
    fn patched(&self) -> Vec<String> {
        self.server.writes("pods")
    }

    /// Pods still carrying the tracking finalizer.
    fn with_finalizer(&self) -> Vec<String> {
        let pods = self.server.list::<Pod>().into_iter();
        pods.filter(|p| has_tracking_finalizer(&p.metadata))
            .filter_map(|p| p.metadata.name)
            .collect()
    }
}

fn key(name: &str) -> OrphanKey {
    OrphanKey::Pod(ObjectKey::new(Some("ns"), name))
}

#[tokio::test]
async fn pods_of_a_job_deleted_in_the_background_lose_the_finalizer() {
    let w = World::new(vec![], vec![(*pod("p").node("n").running().build()).clone()]);
    w.cleaner().sync(&key("p")).await.unwrap();
    assert_eq!(w.patched(), ["patch p"]);
    assert!(w.with_finalizer().is_empty());
}

#[tokio::test]
async fn pods_orphaned_by_orphan_propagation_lose_the_finalizer() {
    let w = World::new(vec![job(1, Some(1))], vec![(*pod("p").orphan().build()).clone()]);
    w.cleaner().sync(&key("p")).await.unwrap();
    assert_eq!(w.patched(), ["patch p"]);
}

#[tokio::test]
async fn a_recreated_job_of_the_same_name_does_not_own_the_old_pods() {
    let mut j = job(1, Some(1));
    j.metadata.uid = Some("new-uid".into());
    let w = World::new(vec![j], vec![(*pod("p").build()).clone()]);
    assert!(w.cleaner().must_clean(&w.pods.get(Some("ns"), "p").unwrap()));
}

#[tokio::test]
async fn live_external_and_foreign_pods_keep_the_finalizer() {
    let mut external = job(1, Some(1));
    external.spec.as_mut().unwrap().managed_by = Some("example.com/queue".into());
    let mut rs_pod = testing::pod("rs").owner("ReplicaSet", "web", "rs-uid").build();
    rs_pod.metadata.finalizers = Some(vec![crate::spec::JOB_TRACKING_FINALIZER.into()]);
    let w = World::new(
        vec![job(1, Some(1))],
        vec![(*pod("live").build()).clone(), rs_pod.clone()],
    );
    let c = w.cleaner();
    assert!(
        !c.must_clean(&pod("live").build()),
        "its Job is live and unfinished"
    );
    assert!(!c.must_clean(&rs_pod), "another kind of controller's pod");
    let w2 = World::new(vec![external], vec![]);
    assert!(
        !w2.cleaner().must_clean(&pod("ext").build()),
        "an externally managed Job's"
    );
    assert!(
        !c.must_clean(&pod("none").no_finalizer().orphan().build()),
        "nothing to remove"
    );
    c.sync(&key("live")).await.unwrap();
    c.sync(&key("gone")).await.unwrap();
    assert!(w.patched().is_empty());
}

#[tokio::test]
async fn a_selector_sweep_cleans_a_finished_jobs_pods_and_spares_a_live_jobs() {
    let pods = vec![
        (*pod("mine-1").succeeded().build()).clone(),
        (*pod("mine-2").node("n").running().build()).clone(),
        owned_by_other("theirs"),
        (*pod("stray").orphan().build()).clone(),
    ];
    let mine = finished(job(2, Some(2)));
    let w = World::new(vec![mine.clone(), other_job()], pods);
    let k = OrphanKey::selector_of(&mine).unwrap();
    assert!(matches!(&k, OrphanKey::Selector { namespace, .. } if namespace == "ns"));
    assert_eq!(
        k,
        OrphanKey::selector_of(&mine).unwrap(),
        "equal selectors dedup in the queue"
    );
    w.cleaner().sync(&k).await.unwrap();
    let mut patched = w.patched();
    patched.sort();
    assert_eq!(patched, ["patch mine-1", "patch mine-2", "patch stray"]);
    assert_eq!(w.with_finalizer(), ["theirs"]);
}

#[tokio::test]
async fn a_failed_patch_retries_a_pod_key_but_not_a_sweep() {
    let w = World::new(
        vec![],
        vec![(*pod("p").build()).clone(), (*pod("q").build()).clone()],
    );
    w.server
        .on(Verb::Patch, "pods")
        .named("p")
        .fail(500, "InternalError", "an internal error");
    let err = w.cleaner().sync(&key("p")).await.unwrap_err();
    assert!(err.to_string().contains("ns/p"), "{err}");
    let sweep = OrphanKey::selector_of(&job(1, Some(1))).unwrap();
    w.cleaner().sync(&sweep).await.expect("logged, not retried");
    assert_eq!(w.with_finalizer(), ["p"]);
}

#[tokio::test]
async fn shadow_mode_decides_but_never_writes() {
    let w = World::new(vec![], vec![(*pod("p").build()).clone()]);
    let mut c = w.cleaner();
    c.read_only = true;
    c.sync(&key("p")).await.unwrap();
    assert!(w.patched().is_empty());
}

#[test]
fn an_invalid_selector_has_no_sweep_key() {
    let mut j = job(1, Some(1));
    let sel = j.spec.as_mut().unwrap().selector.as_mut().unwrap();
    sel.match_labels = Some([("bad key!".to_owned(), "v".to_owned())].into());
    assert!(OrphanKey::selector_of(&j).is_err());
}

/// Upstream leaves this pod's finalizer for good (the Job, deleted in the foreground, waits for the
/// pod; the pod for its finalizer): kcm-rs removes it, a deliberate difference.
#[tokio::test]
async fn a_pod_its_deleting_job_no_longer_selects_loses_the_finalizer() {
    let mut deleting = job(1, Some(1));
    deleting.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(5)));
    let relabelled = (*pod("p").running().annotation("x", "y").build()).clone();
    let mut relabelled = relabelled;
    relabelled
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("app".into(), "released".into());
    let still_selected = (*pod("q").running().build()).clone();
    let w = World::new(vec![deleting.clone()], vec![relabelled.clone(), still_selected]);
    w.cleaner().sync(&key("p")).await.unwrap();
    w.cleaner().sync(&key("q")).await.unwrap();
    assert_eq!(
        w.patched(),
        ["patch p"],
        "the selected pod is the Job sync's to unfinalize"
    );
    // While the Job lives, its sync releases the pod instead.
    let live = World::new(vec![job(1, Some(1))], vec![relabelled]);
    live.cleaner().sync(&key("p")).await.unwrap();
    assert!(live.patched().is_empty());
}

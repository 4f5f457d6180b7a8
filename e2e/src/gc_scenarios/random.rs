//! Seeded random programs for the garbage collector: the fixed scenarios reach only the orders their
//! authors thought of. A seed makes a forest of ConfigMaps (owners always made before their
//! dependents; some references blocking, some dangling, some naming an owner under another UID;
//! some objects held by a finalizer of the test's), then steps: deletions with every propagation
//! policy, releases of the holds, references added and removed, new objects. Each program runs under
//! upstream's collector and then kcm-rs's, and what is left after each step, once the namespace has
//! been quiet for [`QUIET`], must be the same.
//!
//! On every watch event, under both collectors, [`Guard`] (`guard.rs`) checks the invariant whose breach is data
//! loss: an object the test did not delete starts going only once none of its owners is solid
//! (present under its UID, and not waiting for its dependents in a foreground deletion). ConfigMaps
//! only, so that one watch orders every event by resourceVersion. A breach under kcm-rs fails the
//! run; under upstream it is printed: upstream is the reference.
//!
//! `KCM_RS_RANDOM_SEED` replays a program (program `i` of a run uses seed + i);
//! `KCM_RS_RANDOM_PROGRAMS` and `KCM_RS_RANDOM_STEPS` size the run.

use std::{
    collections::{BTreeMap, HashMap},
    time::Duration,
};

use k8s_openapi::{
    api::core::v1::ConfigMap,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use kube::api::{DeleteParams, PostParams, PropagationPolicy};
use rand::{Rng as _, SeedableRng as _, rngs::StdRng};

use super::guard::Guard;
use crate::{TestNamespace, differential::Outcome, namespace_scenarios::HOLD, random_differential::Config};

/// How long the namespace must not change for a step to count as done: the collector acts within
/// milliseconds, but an owner not yet seen is retried with backoff.
pub const QUIET: Duration = Duration::from_secs(3);
/// The foreground-deletion finalizer: an owner deleting with it does not hold its dependents.
const FOREGROUND: &str = "foregroundDeletion";
/// A step that never goes quiet is reported after this.
const SETTLE_LIMIT: Duration = Duration::from_secs(45);
const POLL: Duration = Duration::from_millis(250);

/// How an ownerReference is made.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// Object `i`, under its UID.
    Object(usize),
    /// Object `i`'s name under a UID no object has.
    WrongUid(usize),
    /// A name nothing has.
    Ghost,
}

#[derive(Debug, Clone)]
struct Reference {
    target: Target,
    block: bool,
}

#[derive(Debug, Clone)]
enum Step {
    Delete(usize, Option<PropagationPolicy>),
    Release(usize),
    AddOwner(usize, Reference),
    DropOwners(usize),
    Create(Vec<Reference>, bool),
}

/// One seed's program.
#[derive(Debug, Clone)]
pub struct Program {
    pub seed: u64,
    /// Each object's references and whether the test's finalizer holds it.
    objects: Vec<(Vec<Reference>, bool)>,
    steps: Vec<Step>,
}

fn reference(rng: &mut StdRng, before: usize) -> Reference {
    let roll = rng.random_range(0..10);
    let target = if before == 0 || roll == 0 {
        Target::Ghost
    } else if roll == 1 {
        Target::WrongUid(rng.random_range(0..before))
    } else {
        Target::Object(rng.random_range(0..before))
    };
    Reference {
        target,
        block: rng.random_bool(0.5),
    }
}

fn references(rng: &mut StdRng, before: usize) -> Vec<Reference> {
    let n = rng.random_range(0..=2.min(before + 1));
    (0..n).map(|_| reference(rng, before)).collect()
}

impl Program {
    pub fn generate(seed: u64, steps: usize) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let count = rng.random_range(5..=9);
        let objects: Vec<_> = (0..count)
            .map(|i| (references(&mut rng, i), rng.random_bool(0.2)))
            .collect();
        let mut total = count;
        // Objects the test's finalizer holds. A held object deleted in the foreground loses its
        // foregroundDeletion finalizer at once if nothing blocks it, and then holds its non-blocking
        // dependents for good: whether one was collected before depends on which of the two a
        // collector did first, under either collector. Such a deletion is made a background one.
        let mut held: Vec<bool> = objects.iter().map(|(_, hold)| *hold).collect();
        let steps = (0..steps)
            .map(|_| {
                let any = rng.random_range(0..total);
                match rng.random_range(0..10) {
                    0..=4 => {
                        let mut policy = [
                            None,
                            Some(PropagationPolicy::Background),
                            Some(PropagationPolicy::Foreground),
                            Some(PropagationPolicy::Orphan),
                        ][rng.random_range(0..4)]
                        .clone();
                        if held[any] && policy == Some(PropagationPolicy::Foreground) {
                            policy = Some(PropagationPolicy::Background);
                        }
                        Step::Delete(any, policy)
                    }
                    5 => {
                        held[any] = false;
                        Step::Release(any)
                    }
                    6 => Step::AddOwner(any, reference(&mut rng, total)),
                    7 => Step::DropOwners(any),
                    _ => {
                        total += 1;
                        let hold = rng.random_bool(0.2);
                        held.push(hold);
                        Step::Create(references(&mut rng, total - 1), hold)
                    }
                }
            })
            .collect();
        Self { seed, objects, steps }
    }
}

impl Program {
    /// The command that runs this program alone again (on a running control plane).
    pub fn replay(&self) -> String {
        format!(
            "KCM_RS_RANDOM_SEED={} KCM_RS_RANDOM_PROGRAMS=1 KCM_RS_RANDOM_STEPS={} \
             cargo test -p kcm-rs-e2e --test garbage_collector disruptive_random",
            self.seed,
            self.steps.len()
        )
    }
}

fn name(i: usize) -> String {
    format!("o{i}")
}

/// What the test knows of its objects: each name's UID, and the UIDs it deleted itself.
#[derive(Debug, Default)]
struct Made {
    uids: HashMap<String, String>,
}

impl Made {
    fn owner_ref(&self, r: &Reference, rng: &mut StdRng) -> OwnerReference {
        let (name, uid) = match r.target {
            Target::Object(i) => (name(i), self.uids.get(&name(i)).cloned().unwrap_or_default()),
            Target::WrongUid(i) => (name(i), format!("{:032x}", rng.random::<u128>())),
            Target::Ghost => ("ghost".to_owned(), format!("{:032x}", rng.random::<u128>())),
        };
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name,
            uid: if uid.is_empty() {
                format!("{:032x}", rng.random::<u128>())
            } else {
                uid
            },
            block_owner_deletion: r.block.then_some(true),
            ..OwnerReference::default()
        }
    }
}

/// Runs `program` in `ns` under whichever collector runs; the projection after each step.
pub async fn run(ns: TestNamespace, program: &Program, guard: &Guard) -> Outcome {
    let api = ns.api::<ConfigMap>();
    collector_working(&ns).await;
    // UIDs the references need but the projection never shows; a stream of its own.
    let mut rng = StdRng::seed_from_u64(program.seed ^ 0x5eed);
    let mut made = Made::default();
    let mut out = Outcome::new();
    let create = |made: &Made, rng: &mut StdRng, i: usize, refs: &[Reference], hold: bool| {
        let owners: Vec<OwnerReference> = refs.iter().map(|r| made.owner_ref(r, rng)).collect();
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name(i)),
                owner_references: Some(owners).filter(|o| !o.is_empty()),
                finalizers: hold.then(|| vec![HOLD.to_owned()]),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    };
    for (i, (refs, hold)) in program.objects.iter().enumerate() {
        let cm = create(&made, &mut rng, i, refs, *hold);
        let created = api.create(&PostParams::default(), &cm).await.expect("create");
        made.uids
            .insert(name(i), created.metadata.uid.unwrap_or_default());
    }
    out.insert("step 0".into(), settle(&ns, &made).await);
    let mut next = program.objects.len();
    for (s, step) in program.steps.iter().enumerate() {
        let what = match step {
            Step::Delete(i, policy) => {
                guard.deleting(&made.uids.get(&name(*i)).cloned().unwrap_or_default());
                let dp = DeleteParams {
                    propagation_policy: policy.clone(),
                    ..DeleteParams::default()
                };
                let _ = api.delete(&name(*i), &dp).await;
                format!("delete {} {policy:?}", name(*i))
            }
            Step::Release(i) => {
                edit(&ns, &name(*i), |m| {
                    if let Some(f) = m.finalizers.as_mut() {
                        f.retain(|f| f != HOLD);
                    }
                })
                .await;
                format!("release {}", name(*i))
            }
            Step::AddOwner(i, r) => {
                let owner = made.owner_ref(r, &mut rng);
                edit(&ns, &name(*i), |m| {
                    m.owner_references
                        .get_or_insert_with(Vec::new)
                        .push(owner.clone());
                })
                .await;
                format!("add an owner to {}", name(*i))
            }
            Step::DropOwners(i) => {
                edit(&ns, &name(*i), |m| m.owner_references = None).await;
                format!("drop {}'s owners", name(*i))
            }
            Step::Create(refs, hold) => {
                let cm = create(&made, &mut rng, next, refs, *hold);
                let created = api.create(&PostParams::default(), &cm).await.expect("create");
                made.uids
                    .insert(name(next), created.metadata.uid.unwrap_or_default());
                next += 1;
                format!("create {}", name(next - 1))
            }
        };
        out.insert(format!("step {}: {what}", s + 1), settle(&ns, &made).await);
    }
    out
}

/// Waits until the collector deletes a ConfigMap whose owner never existed: each collector has just
/// started (each half begins with a restart), and its first lists must be done before step 0's
/// projection, which waits only for a quiet namespace.
async fn collector_working(ns: &TestNamespace) {
    let api = ns.api::<ConfigMap>();
    let canary = ConfigMap {
        metadata: ObjectMeta {
            name: Some("canary".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "ghost".into(),
                uid: "00000000-0000-4000-8000-000000000000".into(),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    api.create(&PostParams::default(), &canary)
        .await
        .expect("create the canary");
    let started = tokio::time::Instant::now();
    while api.get_opt("canary").await.expect("read the canary").is_some() {
        assert!(
            started.elapsed() < SETTLE_LIMIT,
            "the collector never deleted the canary"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Changes one object's metadata on a fresh read, again on conflicts; gone is fine.
async fn edit(ns: &TestNamespace, name: &str, change: impl Fn(&mut ObjectMeta)) {
    let api = ns.api::<ConfigMap>();
    for _ in 0..10 {
        let Ok(mut cm) = api.get(name).await else { return };
        change(&mut cm.metadata);
        match api.replace(name, &PostParams::default(), &cm).await {
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            _ => return,
        }
    }
    panic!("{name}: conflicts on every one of 10 edits");
}

/// The namespace's objects once it has been quiet for [`QUIET`], each as `owners [...]; finalizers
/// [...]; deleting`, owners by name with `~` for a UID other than the named object's and `!` for
/// blocking.
async fn settle(ns: &TestNamespace, made: &Made) -> String {
    let api = ns.api::<ConfigMap>();
    let started = tokio::time::Instant::now();
    let (mut last, mut since) = (String::new(), tokio::time::Instant::now());
    loop {
        let list = api.list(&Default::default()).await.expect("list");
        // The owners that hold their dependents: present under their UID, not waiting for them in a
        // foreground deletion.
        let solid: HashMap<String, String> = list
            .items
            .iter()
            .filter(|cm| {
                let m = &cm.metadata;
                let waiting =
                    m.deletion_timestamp.is_some() && m.finalizers.iter().flatten().any(|f| f == FOREGROUND);
                !waiting
            })
            .filter_map(|cm| Some((cm.metadata.name.clone()?, cm.metadata.uid.clone()?)))
            .collect();
        let mut objects = BTreeMap::new();
        for cm in list.items {
            let m = cm.metadata;
            let Some(n) = m.name.clone().filter(|n| made.uids.contains_key(n)) else {
                continue;
            };
            // An object on its way out keeps whichever references its collector had not yet
            // dropped when it decided to delete it: when two of its owners go in one cascade, that
            // is a race both collectors may run either way. Only its references to owners that
            // still hold it are shown.
            let deleting = m.deletion_timestamp.is_some();
            let owners: Vec<String> = m
                .owner_references
                .iter()
                .flatten()
                .filter(|r| !deleting || solid.get(&r.name) == Some(&r.uid))
                .map(|r| {
                    let same = made.uids.get(&r.name) == Some(&r.uid);
                    let block = r.block_owner_deletion == Some(true);
                    format!(
                        "{}{}{}",
                        r.name,
                        if same { "" } else { "~" },
                        if block { "!" } else { "" }
                    )
                })
                .collect();
            let mut finalizers = m.finalizers.clone().unwrap_or_default();
            finalizers.sort();
            let deleting = if deleting { "; deleting" } else { "" };
            objects.insert(
                n,
                format!(
                    "owners [{}]; finalizers [{}]{deleting}",
                    owners.join(" "),
                    finalizers.join(" ")
                ),
            );
        }
        let now: String = objects.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
        if now != last {
            (last, since) = (now, tokio::time::Instant::now());
        } else if since.elapsed() >= QUIET {
            return last;
        }
        if started.elapsed() > SETTLE_LIMIT {
            return format!("never quiet; last:\n{last}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The short run of `make test`: four programs side by side, five steps each, about half a minute
/// per collector.
const PROGRAMS: usize = 4;
const STEPS: usize = 5;

/// The run's size and first seed, from the environment, with the random differential's knobs
/// (`KCM_RS_RANDOM_SEED`, `_PROGRAMS`, `_STEPS`, `_SECONDS`).
pub fn config() -> Config {
    Config::from_env_with(PROGRAMS, STEPS)
}

/// Round `round`'s programs: the seeds after the previous rounds'.
pub fn programs(config: &Config, round: usize) -> Vec<Program> {
    let first = config.seed.wrapping_add((round * config.programs) as u64);
    (0..config.programs)
        .map(|i| Program::generate(first.wrapping_add(i as u64), config.steps))
        .collect()
}

/// One program's run: what was left after each step, and the invariant's breaches.
pub type ProgramRun = Result<(Outcome, Vec<String>), String>;

/// Runs `programs` side by side under `actor`, each in a namespace of its own, deleted after it.
pub async fn run_programs(cluster: &crate::Cluster, programs: &[Program], actor: &str) -> Vec<ProgramRun> {
    futures::future::join_all(programs.iter().map(|p| async move {
        let meta = ObjectMeta {
            generate_name: Some(format!("e2e-gcr-{}-{actor}-", p.seed % 100_000)),
            ..ObjectMeta::default()
        };
        let ns = super::helpers::new_namespace(cluster, meta).await?;
        let guard = Guard::start(&ns).await;
        let result =
            futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run(ns.clone(), p, &guard)))
                .await
                .map_err(|panic| crate::differential::panic_message(&*panic));
        let breaches = guard.breaches();
        drop(guard);
        super::helpers::drop_namespace(&ns).await;
        result.map(|outcome| (outcome, breaches))
    }))
    .await
}

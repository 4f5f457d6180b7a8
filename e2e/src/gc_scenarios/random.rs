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
        let steps = (0..steps)
            .map(|_| {
                let any = rng.random_range(0..total);
                match rng.random_range(0..10) {
                    0..=4 => {
                        let policy = [
                            None,
                            Some(PropagationPolicy::Background),
                            Some(PropagationPolicy::Foreground),
                            Some(PropagationPolicy::Orphan),
                        ][rng.random_range(0..4)]
                        .clone();
                        Step::Delete(any, policy)
                    }
                    5 => Step::Release(any),
                    6 => Step::AddOwner(any, reference(&mut rng, total)),
                    7 => Step::DropOwners(any),
                    _ => {
                        total += 1;
                        Step::Create(references(&mut rng, total - 1), rng.random_bool(0.2))
                    }
                }
            })
            .collect();
        Self { seed, objects, steps }
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
        let mut objects = BTreeMap::new();
        for cm in list.items {
            let m = cm.metadata;
            let Some(n) = m.name.clone().filter(|n| made.uids.contains_key(n)) else {
                continue;
            };
            let owners: Vec<String> = m
                .owner_references
                .iter()
                .flatten()
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
            let deleting = if m.deletion_timestamp.is_some() {
                "; deleting"
            } else {
                ""
            };
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

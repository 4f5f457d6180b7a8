//! Whether kcm-rs replicas kept to their shards, judged from the API server's audit log rather than
//! from what the replicas say of themselves.
//!
//! The log (`hack/cluster.sh sharding on|off --audit-writes`) holds every write of the admin user and
//! the kcm-rs ServiceAccount, with the request bodies of Lease writes in kube-system. A sharded replica names itself in its
//! User-Agent (`kcm-rs/<client>/<identity>`), so each write says who sent it, and each successful
//! write of a shard Lease says who held the shard from then on. A replica's term on a shard runs
//! from the answer to the write that made it the holder to the arrival of the next write that made
//! someone else (or no one) the holder. Every write a replica sent into a namespace must lie within
//! one of its own terms on that namespace's shard, from its arrival to its answer (by when it was
//! applied): then no namespace was written by two replicas in one term, the property the write fence
//! exists for. Judging by arrival alone would pass a write that waited in the server and was applied
//! after the next holder had begun. (A write answered 504 by the server's timeout filter may still be
//! applied after its answer; the fence keeps such a write's Lease from being released, so it
//! expires instead, and the term only ends a lease duration later.)

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

/// Audit timestamps are `metav1.MicroTime` in UTC (`2026-11-26T00:12:05.123456Z`): fixed width, so
/// they order as strings. Anything else is refused rather than compared wrongly.
const TIMESTAMP_LEN: usize = "2026-11-26T00:12:05.123456Z".len();

/// What the log showed, for the test to print and to check it was not vacuous.
#[derive(Debug, Default)]
pub struct AuditSummary {
    /// Writes of the replicas into the checked namespaces, by identity.
    pub writes: BTreeMap<String, usize>,
    /// Terms (holder changes to a replica) per shard Lease.
    pub terms: BTreeMap<String, usize>,
}

impl AuditSummary {
    pub fn total_writes(&self) -> usize {
        self.writes.values().sum()
    }

    pub fn total_terms(&self) -> usize {
        self.terms.values().sum()
    }
}

/// One term: `holder` held `lease` from `from` (inclusive) to `until` (exclusive; `None`: the log ends).
#[derive(Debug)]
struct Term {
    holder: String,
    from: String,
    until: Option<String>,
}

/// A write of one of the replicas into a namespace.
#[derive(Debug)]
struct Write {
    identity: String,
    namespace: String,
    arrived: String,
    /// When its answer was complete: the change was applied by then.
    answered: String,
    what: String,
}

/// Checks `log` (JSON lines) for writes of the replicas `identities` into the namespaces `leases_of`
/// maps to the shard Leases covering them, one per layout (namespaces it maps to none are not
/// checked). A write must lie in one of its sender's terms on one of those Leases. Errors list every
/// write outside its sender's terms, or what could not be read.
pub fn check_writes_within_terms(
    log: &str,
    identities: &[String],
    leases_of: impl Fn(&str) -> Vec<String>,
) -> Result<AuditSummary, Vec<String>> {
    check_writes_within_terms_or_unfenced(log, identities, leases_of, None)
}

/// [`check_writes_within_terms`], where `unfenced` (the unsharded leader's lock, among the Leases
/// `leases_of` gives) holds no fence, as upstream's leader holds none: a write of its holder passes
/// when it arrived inside the holder's term on it and was answered before any other replica's term
/// on a Lease covering the namespace began (no two writers at once), even if after the holder's
/// own release.
pub fn check_writes_within_terms_or_unfenced(
    log: &str,
    identities: &[String],
    leases_of: impl Fn(&str) -> Vec<String>,
    unfenced: Option<&str>,
) -> Result<AuditSummary, Vec<String>> {
    let ours: HashSet<&str> = identities.iter().map(String::as_str).collect();
    let mut lease_writes: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    let mut writes = Vec::new();
    let mut errors = Vec::new();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let event: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                errors.push(format!("unreadable audit line ({e}): {line}"));
                continue;
            }
        };
        if event["stage"] != "ResponseComplete" {
            continue;
        }
        let Some(identity) = event["userAgent"]
            .as_str()
            .and_then(replica_of)
            .filter(|i| ours.contains(i))
        else {
            continue;
        };
        let object = &event["objectRef"];
        let namespace = object["namespace"].as_str().unwrap_or_default();
        let (Some(arrived), Some(answered)) = (
            timestamp(&event["requestReceivedTimestamp"]),
            timestamp(&event["stageTimestamp"]),
        ) else {
            errors.push(format!("audit event without readable timestamps: {line}"));
            continue;
        };
        let name = object["name"].as_str().unwrap_or_default();
        // Shard Leases, and the unsharded lock, whose terms cover every namespace.
        if object["resource"] == "leases"
            && namespace == "kube-system"
            && (name.starts_with("kcm-rs-shard-") || Some(name) == unfenced)
        {
            let code = event["responseStatus"]["code"].as_u64().unwrap_or(0);
            if (200..300).contains(&code) {
                let holder = event["requestObject"]["spec"]["holderIdentity"]
                    .as_str()
                    .unwrap_or_default();
                lease_writes
                    .entry(name.to_owned())
                    .or_default()
                    .push((answered, arrived, holder.to_owned()));
            }
        } else if !leases_of(namespace).is_empty() {
            writes.push(Write {
                identity: identity.to_owned(),
                namespace: namespace.to_owned(),
                arrived,
                answered,
                what: format!(
                    "{} {}{} {name}",
                    event["verb"].as_str().unwrap_or_default(),
                    object["resource"].as_str().unwrap_or_default(),
                    object["subresource"]
                        .as_str()
                        .map(|s| format!("/{s}"))
                        .unwrap_or_default(),
                ),
            });
        }
    }

    let terms: BTreeMap<String, Vec<Term>> = lease_writes
        .into_iter()
        .map(|(lease, mut updates)| {
            updates.sort();
            (lease, terms_of(&updates))
        })
        .collect();
    let mut summary = AuditSummary::default();
    for (lease, t) in &terms {
        summary.terms.insert(lease.clone(), t.len());
    }
    for w in &writes {
        *summary.writes.entry(w.identity.clone()).or_default() += 1;
        let leases = leases_of(&w.namespace);
        // The unsharded lock's terms end only at its next write (a leader killed writes none), so
        // they count only under the rule below.
        let within = leases
            .iter()
            .filter(|l| Some(l.as_str()) != unfenced)
            .any(|lease| {
                terms.get(lease).is_some_and(|ts| {
                    ts.iter().any(|t| {
                        t.holder == w.identity
                            && t.from <= w.arrived
                            && t.until.as_ref().is_none_or(|until| w.answered < *until)
                    })
                })
            });
        let unfenced_within = || {
            let lock = unfenced.and_then(|l| terms.get(l))?;
            let arrived_in_term = lock.iter().any(|t| {
                t.holder == w.identity
                    && t.from <= w.arrived
                    && t.until.as_ref().is_none_or(|until| w.arrived < *until)
            });
            let others_meanwhile = leases.iter().filter_map(|l| terms.get(l)).flatten().any(|t| {
                t.holder != w.identity
                    && t.from <= w.answered
                    && t.until.as_ref().is_none_or(|until| w.arrived < *until)
            });
            Some(arrived_in_term && !others_meanwhile)
        };
        if !within && unfenced_within() != Some(true) {
            let theirs: Vec<_> = leases.iter().map(|l| (l, terms.get(l))).collect();
            errors.push(format!(
                "{} by {} arrived at {} and answered at {}, not inside one of its terms on {leases:?} \
                 (namespace {}); the terms: {theirs:?}",
                w.what, w.identity, w.arrived, w.answered, w.namespace,
            ));
        }
    }
    if errors.is_empty() {
        Ok(summary)
    } else {
        Err(errors)
    }
}

/// `(answered, arrived, holder)` of a Lease's successful writes, in order, as terms. A renewal
/// (same holder) continues a term; another holder, or none (a release), ends it when its write
/// arrived.
fn terms_of(updates: &[(String, String, String)]) -> Vec<Term> {
    let mut terms: Vec<Term> = Vec::new();
    for (answered, arrived, holder) in updates {
        let current = terms
            .last()
            .filter(|t| t.until.is_none())
            .map(|t| t.holder.as_str());
        if current == Some(holder.as_str()) {
            continue;
        }
        if let Some(open) = terms.last_mut().filter(|t| t.until.is_none()) {
            open.until = Some(arrived.clone());
        }
        if !holder.is_empty() {
            terms.push(Term {
                holder: holder.clone(),
                from: answered.clone(),
                until: None,
            });
        }
    }
    terms
}

/// The identity in a sharded replica's User-Agent, `kcm-rs/<client>/<identity>`.
/// Per namespace, how many creates of `resource` by kcm-rs the server answered 504. Its timeout
/// filter answers when a request's `?timeout=` (a fenced write carries its window's remainder) runs
/// out, while the handler may still commit the object: such a create may have made one, and the
/// controller, taking it as failed, makes another at its next sync (so does upstream's, which
/// lowers its expectations on any create error).
pub fn timed_out_creates(log: &str, resource: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for line in log.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let ours = event["userAgent"].as_str().and_then(replica_of).is_some();
        let object = &event["objectRef"];
        if event["stage"] == "ResponseComplete"
            && ours
            && event["verb"] == "create"
            && object["resource"] == resource
            && event["responseStatus"]["code"] == 504
        {
            let namespace = object["namespace"].as_str().unwrap_or_default().to_owned();
            *out.entry(namespace).or_default() += 1;
        }
    }
    out
}

/// How long before a replica dropped a create unanswered the server may have answered it: the answer
/// was on its way back when the window closed.
const ANSWER_IN_FLIGHT: std::time::Duration = std::time::Duration::from_secs(1);

/// How many creates of `resource` (under `prefix`, `/api/v1` or `/apis/<g>/<v>`) in `namespace` a
/// replica dropped unanswered when its shard's write window closed (its fence logs each, `logs` is the
/// replicas' logs) while the server was applying them: each counts only if the audit `log` holds a
/// create there by a replica, answered 201, that arrived before the drop and was answered no earlier
/// than [`ANSWER_IN_FLIGHT`] before it, and no such create counts for two drops. A drop of a write that
/// never left, or that the server refused, made no object and allows for none.
pub fn lost_creates(log: &str, logs: &str, namespace: &str, prefix: &str, resource: &str) -> usize {
    let path = format!("method=POST path={prefix}/namespaces/{namespace}/{resource} ");
    let drops: Vec<Timestamp> = logs
        .lines()
        .filter(|l| l.contains("write dropped unanswered") && l.contains(&path))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    let mut applied: Vec<(Timestamp, Timestamp)> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| {
            let object = &e["objectRef"];
            e["stage"] == "ResponseComplete"
                && e["userAgent"].as_str().and_then(replica_of).is_some()
                && e["verb"] == "create"
                && object["resource"] == resource
                && object["namespace"] == namespace
                && e["responseStatus"]["code"] == 201
        })
        .filter_map(|e| {
            let arrived = e["requestReceivedTimestamp"].as_str()?.parse().ok()?;
            let answered = e["stageTimestamp"].as_str()?.parse().ok()?;
            Some((arrived, answered))
        })
        .collect();
    let mut lost = 0;
    for drop in drops {
        let earliest = drop - ANSWER_IN_FLIGHT;
        if let Some(i) = applied
            .iter()
            .position(|(arrived, answered)| *arrived < drop && *answered >= earliest)
        {
            applied.swap_remove(i);
            lost += 1;
        }
    }
    lost
}

/// Every create of `resource` in `namespace` by a kcm-rs replica, in the order the server answered
/// them: who sent it, when it arrived and was answered, the answer's code, the object's name.
pub fn creates_in(log: &str, resource: &str, namespace: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in log.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let object = &event["objectRef"];
        let Some(identity) = event["userAgent"].as_str().and_then(replica_of) else {
            continue;
        };
        if event["stage"] == "ResponseComplete"
            && event["verb"] == "create"
            && object["resource"] == resource
            && object["namespace"] == namespace
        {
            let answered = event["stageTimestamp"].as_str().unwrap_or_default().to_owned();
            let line = format!(
                "{identity}: arrived {}, answered {answered} with {}, name {:?}",
                event["requestReceivedTimestamp"].as_str().unwrap_or_default(),
                event["responseStatus"]["code"],
                object["name"].as_str().unwrap_or_default(),
            );
            out.push((answered, line));
        }
    }
    out.sort();
    out.into_iter().map(|(_, line)| line).collect()
}

fn replica_of(agent: &str) -> Option<&str> {
    let mut parts = agent.splitn(3, '/');
    (parts.next()? == "kcm-rs").then_some(())?;
    parts.next()?;
    parts.next()
}

fn timestamp(v: &Value) -> Option<String> {
    v.as_str()
        .filter(|s| s.len() == TIMESTAMP_LEN && s.ends_with('Z'))
        .map(str::to_owned)
}

#[cfg(test)]
#[path = "shard_audit_tests.rs"]
mod tests;

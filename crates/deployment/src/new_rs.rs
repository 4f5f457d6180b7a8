//! Settling the new ReplicaSet: finding the one whose template is the Deployment's and keeping its
//! revision and annotations current, or building it (upstream `sync.go: getNewReplicaSet`,
//! `getAllReplicaSetsAndSyncRevision`; `deployment_util.go: NewRSNewReplicas`).

use controller::PlannedEvent;
use std::{collections::BTreeMap, sync::Arc};

use controller::{Owner, events::TYPE_NORMAL};
use k8s_openapi::{
    api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};

use crate::{
    annotations,
    conditions::{self, PROGRESSING, TRUE},
    hash::{POD_TEMPLATE_HASH_LABEL, compute_hash},
    replica_sets as rsu,
    spec::{self, InvalidIntOrPercent, Strategy},
    work::{NewLookup, REASON_SCALING, Slot, Work},
};

/// Why the new ReplicaSet's size cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("deployment type {0:?} isn't supported")]
    UnknownStrategy(String),
    #[error(transparent)]
    Invalid(#[from] InvalidIntOrPercent),
}

/// The size a new ReplicaSet should grow to now: for a rolling update as far as maxSurge allows
/// above spec.replicas counting every ReplicaSet, never beyond spec.replicas; for Recreate, all of
/// it (upstream `NewRSNewReplicas`).
pub fn new_rs_new_replicas(d: &Deployment, total_replicas: i32, new_replicas: i32) -> Result<i32, SizeError> {
    let replicas = spec::replicas(d);
    match spec::strategy(d) {
        Strategy::RollingUpdate { max_surge, .. } => {
            // int32 arithmetic as upstream's: past MaxInt32 the total wraps negative, and the
            // new ReplicaSet stays at its size (0 for `--replicas=2147483647` with a surge).
            #[allow(clippy::cast_possible_truncation)]
            let surge = spec::scaled_value(&max_surge, replicas, true)? as i32;
            let max_total = replicas.wrapping_add(surge);
            if total_replicas >= max_total {
                return Ok(new_replicas);
            }
            let up = max_total
                .wrapping_sub(total_replicas)
                .min(replicas.wrapping_sub(new_replicas));
            Ok(new_replicas.wrapping_add(up))
        }
        Strategy::Recreate => Ok(replicas),
        Strategy::Unknown(t) => Err(SizeError::UnknownStrategy(t)),
    }
}

/// Longest object name the API server accepts for a ReplicaSet: a DNS-1123 subdomain (apimachinery
/// `validation.DNS1123SubdomainMaxLength`).
pub const MAX_OBJECT_NAME_LEN: usize = 253;
/// Between the Deployment's name and the template hash in a ReplicaSet's name (upstream
/// `replicaSetNameSeparator`).
pub const NAME_SEPARATOR: &str = "-";

/// `<deployment>-<hash>`, the Deployment's part cut short enough for the whole to be a valid name;
/// a hash so long that nothing of the name would fit leaves the name whole (upstream
/// `generateReplicaSetName`). Nothing more is done about the cut: a name cut just after a `.`
/// gives a name the API refuses, as upstream's does.
pub fn replica_set_name(deployment: &str, hash: &str) -> String {
    let room = MAX_OBJECT_NAME_LEN.saturating_sub(NAME_SEPARATOR.len() + hash.len());
    let mut cut = deployment.len();
    if cut > room && room > 0 {
        // Names the API accepts are ASCII; a hand-built one is cut on a character boundary.
        cut = room;
        while !deployment.is_char_boundary(cut) {
            cut -= 1;
        }
    }
    format!("{}{NAME_SEPARATOR}{hash}", &deployment[..cut])
}

/// The ReplicaSet to create for the Deployment's template: named by [`replica_set_name`] (the same
/// name every time, so a repeated create fails instead of duplicating), the hash added to its labels,
/// selector and template, controlled by the Deployment.
pub fn build_new_replica_set(
    d: &Deployment,
    replicas: i32,
    annotations: BTreeMap<String, String>,
) -> ReplicaSet {
    let spec = d.spec.clone().unwrap_or_default();
    let hash = compute_hash(&spec.template, d.status.as_ref().and_then(|s| s.collision_count));
    let mut template = spec.template;
    let meta = template.metadata.get_or_insert_with(ObjectMeta::default);
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.clone());
    let labels = meta.labels.clone();
    let mut selector = spec.selector;
    selector
        .match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.clone());
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(replica_set_name(d.metadata.name.as_deref().unwrap_or(""), &hash)),
            namespace: d.metadata.namespace.clone(),
            owner_references: Some(vec![Owner::of(d).controller_ref()]),
            labels,
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            min_ready_seconds: spec.min_ready_seconds,
            selector,
            template: Some(template),
        }),
        status: None,
    }
}

impl Work<'_> {
    /// Settles the new ReplicaSet, building it if `create` and none exists. An existing one gets the
    /// Deployment's annotations, a revision above every old one and the Deployment's
    /// minReadySeconds; if it needed any, that is all for this step (as upstream, which returns the
    /// written ReplicaSet there), else the Deployment takes its revision and, with a deadline and no
    /// Progressing condition yet, FoundNewReplicaSet. A built one gets the next revision and its
    /// first size, and the Deployment NewReplicaSetCreated.
    pub fn ensure_new(&mut self, create: bool) -> Result<(), SizeError> {
        match self.lookup {
            NewLookup::Settled => return Ok(()),
            NewLookup::Missing if !create => return Ok(()),
            _ => {}
        }
        let template = self
            .d
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let originals: Vec<&ReplicaSet> = self.slots.iter().map(Slot::rs).collect();
        self.new = rsu::find_new(&template, originals);
        // int64 as upstream's, wrapping past a hand-written maximum.
        let new_revision =
            annotations::max_revision(self.olds().iter().map(|i| &self.rs(*i).metadata)).wrapping_add(1);
        if let Some(i) = self.new {
            self.lookup = NewLookup::Settled;
            self.refresh_existing_new(i, new_revision);
            self.snapshot();
            return Ok(());
        }
        if !create {
            self.lookup = NewLookup::Missing;
            return Ok(());
        }
        let total = rsu::sum_replicas(self.olds().iter().map(|i| self.rs(*i)));
        let replicas = new_rs_new_replicas(&self.d, total, 0)?;
        let desired = spec::replicas(&self.d);
        let mut ann = BTreeMap::new();
        annotations::set_new_replica_set(
            self.d.metadata.annotations.as_ref(),
            &mut ann,
            new_revision,
            Some((desired, desired.wrapping_add(spec::max_surge(&self.d)))),
        );
        let rs = build_new_replica_set(&self.d, replicas, ann);
        let name = rsu::name(&rs).to_owned();
        let mut slot = Slot::new(Arc::new(rs), true);
        if replicas > 0 {
            slot.events.push(PlannedEvent {
                type_: TYPE_NORMAL,
                reason: REASON_SCALING.into(),
                message: format!("Scaled up replica set {name} from 0 to {replicas}"),
            });
        }
        self.slots.push(slot);
        self.new = Some(self.slots.len() - 1);
        self.lookup = NewLookup::Settled;
        self.set_revision(&new_revision.to_string());
        if spec::progress_deadline(&self.d).is_some() {
            let c = conditions::new(
                PROGRESSING,
                TRUE,
                conditions::NEW_REPLICA_SET,
                format!("Created new replica set {}", conditions::quoted(&name)),
                self.now,
            );
            conditions::set(self.d.status.get_or_insert_with(Default::default), c);
        }
        self.snapshot();
        Ok(())
    }

    fn refresh_existing_new(&mut self, i: usize, new_revision: i64) {
        let d_annotations = self.d.metadata.annotations.clone();
        let min_ready = self.d.spec.as_ref().and_then(|s| s.min_ready_seconds);
        let rs = self.rs(i);
        let mut ann = rs.metadata.annotations.clone().unwrap_or_default();
        let changed = annotations::set_new_replica_set(d_annotations.as_ref(), &mut ann, new_revision, None);
        let rs_min_ready = rs.spec.as_ref().and_then(|s| s.min_ready_seconds);
        if changed || rs_min_ready.unwrap_or(0) != min_ready.unwrap_or(0) {
            let rs = self.rs_mut(i);
            rs.metadata.annotations = Some(ann);
            rs.spec.get_or_insert_with(Default::default).min_ready_seconds = min_ready;
            return;
        }
        let revision = ann.get(annotations::REVISION).cloned().unwrap_or_default();
        self.set_revision(&revision);
        let has_progressing = self
            .d
            .status
            .as_ref()
            .and_then(|s| conditions::get(s, PROGRESSING))
            .is_some();
        if spec::progress_deadline(&self.d).is_some() && !has_progressing {
            let name = rsu::name(self.slots[i].rs());
            let c = conditions::new(
                PROGRESSING,
                TRUE,
                conditions::FOUND_NEW_RS,
                format!("Found new replica set {}", conditions::quoted(name)),
                self.now,
            );
            conditions::set(self.d.status.get_or_insert_with(Default::default), c);
        }
    }

    fn set_revision(&mut self, revision: &str) {
        let ann = self.d.metadata.annotations.get_or_insert_with(BTreeMap::new);
        if ann.get(annotations::REVISION).map(String::as_str) != Some(revision) {
            ann.insert(annotations::REVISION.to_owned(), revision.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{deployment, int, pct};

    #[test]
    fn new_replica_set_size_respects_max_surge_and_replicas() {
        // Cases of upstream's TestNewRSNewReplicas and TestDeploymentController_reconcileNewReplicaSet.
        let d = |surge| deployment("foo", 10).rolling(surge, int(0)).build();
        assert_eq!(new_rs_new_replicas(&d(int(0)), 10, 0), Ok(0), "no room above 10");
        assert_eq!(new_rs_new_replicas(&d(int(2)), 10, 0), Ok(2));
        assert_eq!(new_rs_new_replicas(&d(int(2)), 5, 0), Ok(7));
        assert_eq!(new_rs_new_replicas(&d(int(2)), 12, 2), Ok(2));
        assert_eq!(
            new_rs_new_replicas(&d(pct("25%")), 10, 0),
            Ok(3),
            "25% of 10 rounds up"
        );
        assert_eq!(
            new_rs_new_replicas(&d(int(20)), 0, 0),
            Ok(10),
            "never above spec.replicas"
        );
        let recreate = deployment("foo", 10).recreate().build();
        assert_eq!(new_rs_new_replicas(&recreate, 10, 0), Ok(10));
        let mut unknown = deployment("foo", 10).build();
        unknown.spec.as_mut().unwrap().strategy.as_mut().unwrap().type_ = Some("X".into());
        assert_eq!(
            new_rs_new_replicas(&unknown, 0, 0),
            Err(SizeError::UnknownStrategy("X".into()))
        );
    }

    #[test]
    fn long_deployment_names_are_cut_to_fit_the_replica_set_name() {
        // Upstream TestDeploymentController_generateReplicaSetName: the Deployment's part is cut so
        // that `<name>-<hash>` stays a valid object name.
        for len in [13, 242, 250, 253] {
            let name = "a".repeat(len);
            let d = deployment(&name, 1).build();
            let hash = compute_hash(&d.spec.as_ref().unwrap().template, None);
            let rs = build_new_replica_set(&d, 1, BTreeMap::new());
            let got = rs.metadata.name.unwrap();
            let cut = MAX_OBJECT_NAME_LEN - 1 - hash.len();
            assert_eq!(got, format!("{}-{hash}", &name[..len.min(cut)]), "{len}");
            assert!(got.len() <= MAX_OBJECT_NAME_LEN, "{len}: {}", got.len());
        }
    }

    #[test]
    fn replica_set_names_as_upstream_generates_them() {
        // Upstream TestGenerateReplicaSetName.
        let (a, b, d) = ("a".repeat(242), "b".repeat(250), "d".repeat(252));
        let h = "h".repeat(252);
        let cases = [
            (
                "my-deployment",
                "abcde12345",
                "my-deployment-abcde12345".to_owned(),
            ),
            (a.as_str(), "abcde12345", format!("{a}-abcde12345")),
            (b.as_str(), "abcde12345", format!("{}-abcde12345", &b[..242])),
            (d.as_str(), h.as_str(), format!("{d}-{h}")),
        ];
        for (name, hash, want) in cases {
            assert_eq!(
                replica_set_name(name, hash),
                want,
                "{} {}",
                name.len(),
                hash.len()
            );
        }
    }

    #[test]
    fn built_replica_set_carries_the_hash_everywhere() {
        let d = deployment("foo", 3).min_ready(5).build();
        let rs = build_new_replica_set(&d, 3, BTreeMap::new());
        let hash = compute_hash(&d.spec.as_ref().unwrap().template, None);
        assert_eq!(rs.metadata.name.as_deref(), Some(format!("foo-{hash}").as_str()));
        let spec = rs.spec.as_ref().unwrap();
        let h = Some(&hash);
        assert_eq!(
            rs.metadata.labels.as_ref().unwrap().get(POD_TEMPLATE_HASH_LABEL),
            h
        );
        assert_eq!(
            spec.selector
                .match_labels
                .as_ref()
                .unwrap()
                .get(POD_TEMPLATE_HASH_LABEL),
            h
        );
        let t = spec.template.as_ref().unwrap();
        assert_eq!(
            t.metadata
                .as_ref()
                .unwrap()
                .labels
                .as_ref()
                .unwrap()
                .get(POD_TEMPLATE_HASH_LABEL),
            h
        );
        assert_eq!(spec.min_ready_seconds, Some(5));
        let r = &rs.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((r.kind.as_str(), r.controller), ("Deployment", Some(true)));
        assert!(rsu::equal_ignore_hash(t, &d.spec.as_ref().unwrap().template));
    }
}

use super::*;

#[test]
fn the_table_is_in_declaration_order() {
    for (i, s) in GATES.iter().enumerate() {
        assert_eq!(s.gate as usize, i, "{}", s.name);
        assert_eq!(s.gate.spec().name, s.name);
    }
}

#[test]
fn defaults_are_kubernetes_1_36() {
    let g = FeatureGates::default();
    assert!(g.pod_deletion_cost && g.logarithmic_scale_down);
    assert!(g.deployment_replica_set_terminating_replicas);
    assert!(g.stale_controller_consistency_replica_set && g.stale_controller_consistency_job);
    assert!(g.atomic_fifo);
    assert!(g.job_managed_by && g.job_pod_replacement_policy);
    assert!(g.job_success_policy && g.job_backoff_limit_per_index && g.sidecar_containers);
    assert!(g.mutable_scheduling_directives_for_suspended_jobs);
    assert!(!g.workload_with_job && !g.generic_workload);
    for s in GATES {
        assert_eq!(g.enabled(s.gate), s.default, "{}", s.name);
        assert_eq!(s.locked, s.stage == Stage::Ga, "{}", s.name);
    }
}

#[test]
fn kcm_syntax_with_the_last_setting_winning() {
    let g =
        FeatureGates::parse(" PodDeletionCost = false,,DeploymentReplicaSetTerminatingReplicas=F").unwrap();
    assert!(!g.pod_deletion_cost);
    assert!(!g.deployment_replica_set_terminating_replicas);
    assert!(
        g.stale_controller_consistency_replica_set,
        "untouched gates keep their default"
    );
    let g = FeatureGates::parse("PodDeletionCost=false,PodDeletionCost=1").unwrap();
    assert!(g.pod_deletion_cost);
    assert_eq!(FeatureGates::parse("").unwrap(), FeatureGates::default());
}

#[test]
fn unknown_gates_and_bad_values_are_named() {
    let err = FeatureGates::parse("PodDeletionCost=true,NoSuchGate=true").unwrap_err();
    assert!(matches!(&err, FeatureGateError::Unknown { name, .. } if name == "NoSuchGate"));
    assert!(
        err.to_string()
            .starts_with("unrecognized feature gate: NoSuchGate"),
        "{err}"
    );
    let err = FeatureGates::parse("PodDeletionCost").unwrap_err();
    assert_eq!(err.to_string(), "missing bool value for PodDeletionCost");
    let err = FeatureGates::parse("PodDeletionCost=yes").unwrap_err();
    assert!(err.to_string().contains("PodDeletionCost=yes"), "{err}");
}

#[test]
fn locked_gates_keep_their_default() {
    let err = FeatureGates::parse("JobManagedBy=false").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot set feature gate JobManagedBy to false, feature is locked to true"
    );
    assert!(FeatureGates::parse("LogarithmicScaleDown=false").is_err());
    // Setting a locked gate to its default is allowed (KCM only warns).
    assert!(
        FeatureGates::parse("LogarithmicScaleDown=true")
            .unwrap()
            .logarithmic_scale_down
    );
}

#[test]
fn all_beta_and_all_alpha_yield_to_named_gates() {
    let g = FeatureGates::parse("PodDeletionCost=true,AllBeta=false").unwrap();
    assert!(g.pod_deletion_cost, "named explicitly, before AllBeta");
    assert!(!g.deployment_replica_set_terminating_replicas);
    assert!(!g.stale_controller_consistency_replica_set && !g.atomic_fifo);
    assert!(g.job_managed_by, "GA gates are not beta");
    let g = FeatureGates::parse("AllAlpha=true").unwrap();
    assert!(g.workload_with_job && g.generic_workload);
}

#[test]
fn a_gate_needs_its_dependencies() {
    let err = FeatureGates::parse("AtomicFIFO=false").unwrap_err();
    assert!(
        matches!(err, FeatureGateError::DependencyDisabled { .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("depends on features that are disabled: [AtomicFIFO]"),
        "{err}"
    );
    let g = FeatureGates::parse(
        "AtomicFIFO=false,StaleControllerConsistencyReplicaSet=false,StaleControllerConsistencyJob=false",
    )
    .unwrap();
    assert!(!g.atomic_fifo);
    assert!(FeatureGates::parse("WorkloadWithJob=true").is_err());
    assert!(FeatureGates::parse("WorkloadWithJob=true,GenericWorkload=true").is_ok());
}

//! `--controllers` with kube-controller-manager's syntax.
//!
//! Each entry is `*` (every controller that is on by default), `name` (enable) or `-name` (disable);
//! the first entry that mentions a controller decides for it, and `*` decides for the rest. Unknown
//! names are an error listing the known ones, as KCM's flag validation does.

use thiserror::Error;

use super::{CONTROLLERS, Descriptor};

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ControllersError {
    #[error("--controllers: unknown controller {given:?}; known controllers are {known}")]
    Unknown { given: String, known: String },
    #[error("--controllers: empty entry")]
    Empty,
    #[error(
        "--feature-gates: {gate}=true asks {controller} for something kcm-rs does not implement; \
         turn the gate off, or leave {controller} to kube-controller-manager (--controllers=*,-{controller})"
    )]
    UnimplementedGate {
        gate: &'static str,
        controller: &'static str,
    },
    #[error("{controller} acts on every namespace and cannot run with {flag}")]
    ClusterWide {
        controller: &'static str,
        flag: &'static str,
    },
}

/// Refuses a feature gate that changes what an enabled controller must do when kcm-rs does not do
/// it (each descriptor's `unimplemented_gate`).
pub fn check_gates(
    enabled: &[&'static str],
    gates: &controller::FeatureGates,
) -> Result<(), ControllersError> {
    for d in CONTROLLERS.iter().filter(|d| enabled.contains(&d.name)) {
        if let Some(gate) = (d.unimplemented_gate)(gates) {
            return Err(ControllersError::UnimplementedGate {
                gate,
                controller: d.name,
            });
        }
    }
    Ok(())
}

/// Refuses a controller that acts on namespaces themselves ([`Descriptor::cluster_wide`]) where
/// kcm-rs is told to serve only some namespaces: `--namespace`, or `--shards`, whose shards are cuts
/// of the namespaces. It would act on every namespace, or on every one once per shard.
pub fn check_scope(
    enabled: &[&'static str],
    namespaces: &[String],
    shards: u32,
) -> Result<(), ControllersError> {
    let Some(d) = CONTROLLERS
        .iter()
        .find(|d| d.cluster_wide && enabled.contains(&d.name))
    else {
        return Ok(());
    };
    let flag = match (namespaces.is_empty(), shards > 1) {
        (false, _) => "--namespace",
        (true, true) => "--shards",
        (true, false) => return Ok(()),
    };
    Err(ControllersError::ClusterWide {
        controller: d.name,
        flag,
    })
}

/// Resolves the `--controllers` entries to the set of enabled controller names (KCM names, sorted).
/// Entries are taken as given, spaces included, as KCM's string-slice flag keeps them; an empty
/// value (`--controllers=`) is no entry at all and enables nothing, as in KCM.
pub fn enabled_controllers(entries: &[String]) -> Result<Vec<&'static str>, ControllersError> {
    let mut decided: Vec<(&'static str, bool)> = Vec::new();
    let mut star = false;
    let entries = if entries == [""] { &[][..] } else { entries };
    for entry in entries {
        let entry = entry.as_str();
        if entry.is_empty() {
            return Err(ControllersError::Empty);
        }
        if entry == "*" {
            star = true;
            continue;
        }
        let (enable, name) = match entry.strip_prefix('-') {
            Some(rest) => (false, rest),
            None => (true, entry),
        };
        let known = lookup(name).ok_or_else(|| ControllersError::Unknown {
            given: name.to_owned(),
            known: CONTROLLERS.iter().map(|c| c.name).collect::<Vec<_>>().join(", "),
        })?;
        if !decided.iter().any(|(n, _)| *n == known.name) {
            decided.push((known.name, enable));
        }
    }
    Ok(CONTROLLERS
        .iter()
        .filter(|c| {
            decided
                .iter()
                .find(|(n, _)| *n == c.name)
                .map_or(star && c.on_by_default, |(_, on)| *on)
        })
        .map(|c| c.name)
        .collect())
}

/// The `--controllers` entries as KCM's configuration keeps them (`/configz`): an alias replaced by
/// its controller's name, a leading `-` kept, anything else as given, untrimmed (controller-manager's
/// `GenericControllerManagerConfigurationOptions.ApplyTo`).
pub fn canonical_entries(entries: &[String]) -> Vec<String> {
    entries
        .iter()
        .map(|entry| {
            let (minus, name) = match entry.strip_prefix('-') {
                Some(rest) => ("-", rest),
                None => ("", entry.as_str()),
            };
            lookup(name).map_or_else(|| entry.clone(), |c| format!("{minus}{}", c.name))
        })
        .collect()
}

fn lookup(name: &str) -> Option<&'static Descriptor> {
    CONTROLLERS.iter().find(|c| c.name == name || c.alias == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Vec<&'static str>, ControllersError> {
        enabled_controllers(&s.split(',').map(str::to_owned).collect::<Vec<_>>())
    }

    /// KCM's flag keeps what is between the commas: a space is part of the name, and an empty
    /// value is an empty list.
    #[test]
    fn entries_are_taken_as_given() {
        assert_eq!(
            parse("*, -job-controller"),
            Err(ControllersError::Unknown {
                given: " -job-controller".into(),
                known: CONTROLLERS.iter().map(|c| c.name).collect::<Vec<_>>().join(", "),
            })
        );
        assert_eq!(parse(""), Ok(vec![]));
        assert_eq!(parse("*,,job"), Err(ControllersError::Empty));
    }

    #[test]
    fn star_enables_all_on_by_default() {
        assert_eq!(
            parse("*").unwrap(),
            [
                "cronjob-controller",
                "deployment-controller",
                "job-controller",
                "replicaset-controller",
                "replicationcontroller-controller",
                "ttl-after-finished-controller"
            ]
        );
    }

    #[test]
    fn minus_disables_and_aliases_work() {
        assert_eq!(
            parse("*,-job-controller,-deployment,-ttl-after-finished,-replicationcontroller,-cronjob")
                .unwrap(),
            ["replicaset-controller"]
        );
    }

    #[test]
    fn the_companions_run_only_when_named() {
        assert!(!parse("*").unwrap().contains(&"namespace-controller"));
        assert!(!parse("*").unwrap().contains(&"serviceaccount-controller"));
        assert!(
            parse("*,serviceaccount")
                .unwrap()
                .contains(&"serviceaccount-controller")
        );
        assert!(parse("*,namespace").unwrap().contains(&"namespace-controller"));
        assert_eq!(
            parse("namespace-controller,-namespace").unwrap(),
            ["namespace-controller"]
        );
    }

    #[test]
    fn the_namespace_controller_serves_every_namespace_or_none() {
        let on = parse("*,namespace").unwrap();
        check_scope(&on, &[], 1).expect("unrestricted");
        check_scope(&parse("*").unwrap(), &["a".into()], 4).expect("not enabled");
        let err = check_scope(&on, &["a".into()], 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "namespace-controller acts on every namespace and cannot run with --namespace"
        );
        assert!(
            check_scope(&on, &[], 2)
                .unwrap_err()
                .to_string()
                .ends_with("--shards")
        );
    }

    #[test]
    fn the_garbage_collector_is_off_by_default_and_serves_every_namespace_or_none() {
        assert!(!parse("*").unwrap().contains(&"garbage-collector-controller"));
        let on = parse("*,garbagecollector").unwrap();
        assert!(on.contains(&"garbage-collector-controller"));
        check_scope(&on, &[], 1).expect("unrestricted");
        assert_eq!(
            check_scope(&on, &[], 3).unwrap_err().to_string(),
            "garbage-collector-controller acts on every namespace and cannot run with --shards"
        );
    }

    #[test]
    fn named_without_star_enables_only_those() {
        assert_eq!(parse("replicaset").unwrap(), ["replicaset-controller"]);
    }

    #[test]
    fn aliases_become_names_as_in_kcms_configuration() {
        let given = ["*", "-job", "cronjob", "deployment-controller", " -job", "nope"].map(str::to_owned);
        assert_eq!(
            canonical_entries(&given),
            [
                "*",
                "-job-controller",
                "cronjob-controller",
                "deployment-controller",
                " -job",
                "nope"
            ]
        );
    }

    #[test]
    fn first_match_wins() {
        assert_eq!(
            parse("-job,job,*").unwrap(),
            [
                "cronjob-controller",
                "deployment-controller",
                "replicaset-controller",
                "replicationcontroller-controller",
                "ttl-after-finished-controller"
            ]
        );
    }

    #[test]
    fn workload_with_job_is_refused_while_the_job_controller_runs() {
        let gates = controller::FeatureGates::parse("GenericWorkload=true,WorkloadWithJob=true").unwrap();
        let err = check_gates(&parse("*").unwrap(), &gates).unwrap_err();
        assert!(err.to_string().contains("WorkloadWithJob"), "{err}");
        check_gates(&parse("*,-job").unwrap(), &gates).expect("no Job controller, nothing refused");
        check_gates(&parse("*").unwrap(), &controller::FeatureGates::default()).expect("default gates");
    }

    #[test]
    fn unknown_name_lists_the_known_ones() {
        let err = parse("*,-statefulset").unwrap_err();
        assert!(err.to_string().contains("replicaset-controller"), "{err}");
        assert!(err.to_string().contains("\"statefulset\""), "{err}");
    }
}

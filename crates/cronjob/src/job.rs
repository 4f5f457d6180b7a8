//! The Job a slot starts (upstream `getJobFromTemplate2`): the template's spec, labels and
//! annotations, the name from the slot, the slot in an annotation, and the CronJob as controller.

use jiff::{Timestamp, tz::TimeZone};
use k8s_openapi::{
    api::batch::v1::{CronJob, Job},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};

use crate::times::job_name;

/// The slot a Job was started for, in RFC 3339 (upstream's, GA in 1.32 and written always since
/// 1.35).
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// The Job for `scheduled`. `zone` is the CronJob's `spec.timeZone` as loaded (the annotation is in
/// it; in UTC without one).
pub fn job_for(cron_job: &CronJob, scheduled: Timestamp, zone: Option<&TimeZone>) -> Job {
    let template = &cron_job.spec.job_template;
    let template_meta = template.metadata.as_ref();
    let mut annotations = template_meta
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    annotations.insert(
        SCHEDULED_TIMESTAMP_ANNOTATION.to_owned(),
        rfc3339(scheduled, zone.unwrap_or(&TimeZone::UTC)),
    );
    let name = cron_job.metadata.name.clone().unwrap_or_default();
    Job {
        metadata: ObjectMeta {
            name: Some(job_name(&name, scheduled)),
            namespace: cron_job.metadata.namespace.clone(),
            labels: template_meta.and_then(|m| m.labels.clone()),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "CronJob".into(),
                name,
                uid: cron_job.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Go's `time.RFC3339` in `zone`: whole seconds, `Z` for a zero offset, `+02:00` otherwise.
fn rfc3339(t: Timestamp, zone: &TimeZone) -> String {
    let zoned = t.to_zoned(zone.clone());
    if zoned.offset().seconds() == 0 {
        zoned.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cron_job() -> CronJob {
        serde_json::from_value(json!({
            "metadata": {"name": "mycronjob", "namespace": "snazzycats", "uid": "1a2b3c"},
            "spec": {"schedule": "0 * * * ?", "jobTemplate": {
                "metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
                "spec": {"parallelism": 1, "completions": 1, "template": {"spec": {"containers": []}}}}},
        }))
        .unwrap()
    }

    /// Upstream's `TestGetJobFromTemplate2`.
    #[test]
    fn the_job_carries_the_template_the_slot_and_its_controller() {
        let scheduled: Timestamp = "2016-05-19T10:00:00Z".parse().unwrap();
        let job = job_for(&cron_job(), scheduled, None);
        assert_eq!(job.metadata.name.as_deref(), Some("mycronjob-24394200"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("snazzycats"));
        assert_eq!(
            job.metadata.labels,
            cron_job().spec.job_template.metadata.unwrap().labels
        );
        let annotations = job.metadata.annotations.unwrap();
        assert_eq!(annotations.len(), 2);
        assert_eq!(annotations["x"], "y");
        assert_eq!(
            annotations[SCHEDULED_TIMESTAMP_ANNOTATION],
            "2016-05-19T10:00:00Z"
        );
        let owner = &job.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str()
            ),
            ("batch/v1", "CronJob", "mycronjob", "1a2b3c")
        );
        assert_eq!(
            (owner.controller, owner.block_owner_deletion),
            (Some(true), Some(true))
        );
        assert_eq!(job.spec, cron_job().spec.job_template.spec);
        let rome = TimeZone::get("Europe/Rome").unwrap();
        let job = job_for(&cron_job(), scheduled, Some(&rome));
        assert_eq!(
            job.metadata.annotations.unwrap()[SCHEDULED_TIMESTAMP_ANNOTATION],
            "2016-05-19T12:00:00+02:00"
        );
        let utc = TimeZone::get("UTC").unwrap();
        let job = job_for(&cron_job(), scheduled, Some(&utc));
        assert_eq!(
            job.metadata.annotations.unwrap()[SCHEDULED_TIMESTAMP_ANNOTATION],
            "2016-05-19T10:00:00Z"
        );
    }
}

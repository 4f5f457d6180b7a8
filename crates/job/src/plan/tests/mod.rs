//! The planner's tests, each file after an upstream test: `cases` (`TestControllerSyncJob`'s cases
//! and `TestSyncJobPastDeadline`), `table` (the `TestControllerSyncJob` table row by row), `policy`
//! (pod failure policy, backoffLimitPerIndex, successPolicy, the uncounted cap), `tracking`
//! (`TestTrackJobStatusAndRemoveFinalizers`) and `props` (plans converge). They share `support` and
//! the imports below.

use controller::compact_pod::Pod;
use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::batch::v1::{Job, JobStatus},
    apimachinery::pkg::apis::meta::v1::Time,
};

use super::{state::AfterRemoval, *};
use crate::{backoff::BackoffRecord, conditions::*, spec::*};

mod cases;
mod policy;
mod props;
pub(crate) mod support;
mod table;
mod tracking;

//! What an event is before the recorder takes it: the record it queues, and the event a plan asks
//! for. A leaf, so that the recorder and its correlator both read it without importing each other.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::ObjectReference;

/// Events a recorder holds before it drops new ones (client-go's broadcaster queue length).
pub const EVENT_QUEUE_LENGTH: usize = 1000;

pub const TYPE_NORMAL: &str = "Normal";
pub const TYPE_WARNING: &str = "Warning";

/// One event to record.
#[derive(Debug, Clone)]
pub struct EventRecord {
    pub object: ObjectReference,
    pub type_: &'static str,
    /// Borrowed for the fixed reasons, owned for those a user's object supplies (a Job's
    /// failure reason).
    pub reason: Cow<'static, str>,
    pub message: String,
}

/// An event a plan asks for; the executor records it on the plan's object once the write it
/// belongs to succeeds. One shape for every controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEvent {
    pub type_: &'static str,
    pub reason: Cow<'static, str>,
    pub message: String,
}

impl PlannedEvent {
    pub fn normal(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            type_: TYPE_NORMAL,
            reason: reason.into(),
            message: message.into(),
        }
    }

    pub fn warning(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            type_: TYPE_WARNING,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

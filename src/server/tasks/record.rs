//! A task as the state store keeps it: everything any instance needs to answer `tasks/get`,
//! `tasks/update` and `tasks/cancel` (its status, input requests, answers, result or error),
//! read and changed by compare-and-set so that two instances never both move it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::super::types::HandlerError;
use super::super::{ServerConfig, Shared, StoreError};
use crate::wire::{ErrorCode, ErrorObject};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub(super) fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// One task, as stored under `task:ID` (times in milliseconds since the Unix epoch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Record {
    pub(super) status: Status,
    pub(super) created: u64,
    pub(super) updated: u64,
    pub(super) ttl: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<Value>,
    /// The input requests not answered yet, by key.
    #[serde(default)]
    pub(super) asked: Map<String, Value>,
    /// Every answer given so far, by key: the next run gets them all.
    #[serde(default)]
    pub(super) answers: Map<String, Value>,
    /// The state the handler gave with its last input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) state: Option<Value>,
    /// Since when the task waits for input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) parked: Option<u64>,
    /// The current run; an outcome of an older one is dropped.
    pub(super) run: u64,
    /// The instance that runs the task's handler.
    pub(super) owner: String,
}

pub(super) fn now_ms() -> u64 {
    millis_of(SystemTime::now())
}

fn millis_of(time: SystemTime) -> u64 {
    u64::try_from(
        time.duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis(),
    )
    .unwrap_or(u64::MAX)
}

fn time_of(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

pub(super) fn task_key(id: &str) -> String {
    format!("task:{id}")
}

pub(super) fn lease_key(id: &str) -> String {
    format!("lease:{id}")
}

/// A store failure as the request's answer.
pub(super) fn store_failed(error: &StoreError) -> HandlerError {
    HandlerError::internal(format!("the task could not be read or written: {error}"))
}

pub(super) fn error_value(error: &ErrorObject) -> Value {
    serde_json::to_value(error)
        .unwrap_or_else(|_| json!({"code": error.code.0, "message": error.message}))
}

impl Record {
    /// Moves the task to `status` now.
    pub(super) fn settle(&mut self, status: Status) {
        self.status = status;
        self.updated = now_ms();
    }

    pub(super) fn fail(&mut self, error: &ErrorObject) {
        self.settle(Status::Failed);
        self.asked.clear();
        self.parked = None;
        self.error = Some(error_value(error));
    }

    /// How long the task is kept from now (zero once past its TTL).
    fn left(&self) -> Duration {
        let until = self.created.saturating_add(self.ttl);
        Duration::from_millis(until.saturating_sub(now_ms()))
    }

    /// The task as `tasks/get` shows it (and, less its outcome, as it is created).
    pub(super) fn describe(&self, id: &str, config: &ServerConfig) -> Map<String, Value> {
        let mut object = Map::new();
        object.insert("taskId".into(), Value::from(id));
        object.insert("status".into(), Value::from(self.status.as_str()));
        if let Some(message) = &self.message {
            object.insert("statusMessage".into(), Value::from(message.clone()));
        }
        object.insert(
            "createdAt".into(),
            Value::from(super::iso8601(time_of(self.created))),
        );
        object.insert(
            "lastUpdatedAt".into(),
            Value::from(super::iso8601(time_of(self.updated))),
        );
        object.insert("ttlMs".into(), Value::from(self.ttl));
        if !self.status.is_terminal() {
            let poll = config.task_poll_interval.as_millis().max(1) as u64;
            object.insert("pollIntervalMs".into(), Value::from(poll));
        }
        object
    }

    /// What a task's description inlines for its status: the result, the error, or the
    /// input requests it waits on.
    pub(super) fn inline_outcome(&self, object: &mut Map<String, Value>) {
        match self.status {
            Status::Completed => {
                object.insert("result".into(), self.result.clone().unwrap_or_default());
            }
            Status::Failed => {
                object.insert("error".into(), self.error.clone().unwrap_or_default());
            }
            Status::InputRequired => {
                object.insert("inputRequests".into(), Value::Object(self.asked.clone()));
            }
            Status::Working | Status::Cancelled => {}
        }
    }

    /// Fails the task when it waited for input past the bound, or when its instance's lease
    /// `lapsed`; true when it changed.
    pub(super) fn overdue(&mut self, config: &ServerConfig, lapsed: bool) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        if lapsed {
            let text = format!(
                "the server instance running the task stopped: its lease of {:?} passed without \
                 renewal, so the task was ended and not run again",
                config.task_lease
            );
            self.fail(&ErrorObject::new(ErrorCode::INTERNAL_ERROR, text));
            return true;
        }
        let limit = u64::try_from(config.task_input_timeout.as_millis()).unwrap_or(u64::MAX);
        let waited = self
            .parked
            .is_some_and(|since| now_ms().saturating_sub(since) >= limit);
        if self.status == Status::InputRequired && waited {
            let text = format!(
                "no answer to the task's input requests came within {:?}",
                config.task_input_timeout
            );
            self.fail(&ErrorObject::new(super::super::REQUEST_TIMEOUT, text));
            return true;
        }
        false
    }
}

/// The task `id` as stored, with the bytes it was read as (`None`: unknown, or past its TTL).
pub(super) fn load(server: &Shared, id: &str) -> Result<Option<(Vec<u8>, Record)>, HandlerError> {
    let Some(bytes) = server
        .store
        .get(&task_key(id))
        .map_err(|error| store_failed(&error))?
    else {
        return Ok(None);
    };
    let record = serde_json::from_slice(&bytes).map_err(|error| {
        HandlerError::internal(format!("the stored task {id:?} is not readable: {error}"))
    })?;
    Ok(Some((bytes, record)))
}

/// Stores a new task.
pub(super) fn create(server: &Shared, id: &str, record: &Record) -> Result<(), HandlerError> {
    let bytes = serde_json::to_vec(record)
        .map_err(|error| HandlerError::internal(format!("a task was not encoded: {error}")))?;
    server
        .store
        .put(
            &task_key(id),
            &bytes,
            record.left().max(Duration::from_millis(1)),
        )
        .map_err(|error| store_failed(&error))
}

/// Changes the stored task with `change` (which says whether it changed anything), by
/// compare-and-set, again from a fresh read when another change came first. The task as it
/// now stands; `None` when it is unknown or past its TTL.
pub(super) fn modify(
    server: &Shared,
    id: &str,
    mut change: impl FnMut(&mut Record) -> bool,
) -> Result<Option<Record>, HandlerError> {
    for _ in 0..16 {
        let Some((bytes, mut record)) = load(server, id)? else {
            return Ok(None);
        };
        if !change(&mut record) {
            return Ok(Some(record));
        }
        let left = record.left();
        if left.is_zero() {
            return Ok(None);
        }
        let changed = serde_json::to_vec(&record)
            .map_err(|error| HandlerError::internal(format!("a task was not encoded: {error}")))?;
        if server
            .store
            .swap(&task_key(id), Some(&bytes), &changed, left)
            .map_err(|error| store_failed(&error))?
        {
            return Ok(Some(record));
        }
    }
    Err(HandlerError::internal(format!(
        "the task {id:?} changed too often to be updated; try again"
    )))
}

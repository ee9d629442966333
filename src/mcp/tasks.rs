//! Tasks: a tool call that the server runs in the background, polled to its end.
//!
//! Two generations of the feature are spoken:
//!
//! - the 2025-11-25 tasks utility (handshake era): the client asks for a task with a `task`
//!   param on `tools/call` when the server declares `tasks.requests.tools.call` and the tool's
//!   `execution.taskSupport` calls for it ([`super::TaskPolicy`]); the reply is
//!   `{task: {...}}`; `tasks/get` is polled, and once the task is terminal (or needs input,
//!   which the server delivers on that request's stream) `tasks/result` returns what the call
//!   would have;
//! - the 2026-07-28 tasks extension ([`TASKS_EXTENSION`]): the client declares the extension
//!   in every request's capabilities and the server decides; the reply has `resultType:
//!   "task"`; `tasks/get` carries the result, the error or the input requests (answered with
//!   `tasks/update`, each key once).
//!
//! Either way a blocking call waits for the task within its own deadline, at the poll
//! interval the server suggests (between [`super::McpConfig::min_task_poll`] and
//! [`super::McpConfig::max_task_poll`]), woken early by the server's status notices; a call
//! that times out or is cancelled sends `tasks/cancel` (the work may still go on: the server
//! decides).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver};
use serde_json::{json, Value};

use super::paging::item_text;
use super::requests::ServerRequests;
use super::result::CallToolResult;
use super::types::Era;
use super::{methods, McpClient, McpInner, Session};
use crate::client::CallOptions;
use crate::error::{Error, Result};
use crate::wire::ErrorObject;

/// The identifier of the 2026-07-28 tasks extension, declared in `clientCapabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Where a task is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client's answers to the server's requests.
    InputRequired,
    /// Done; its result is there (a tool's `isError` result included).
    Completed,
    /// Ended by an error.
    Failed,
    /// Cancelled.
    Cancelled,
    /// A status this client does not know, as sent.
    Other(String),
}

impl TaskStatus {
    fn from_text(text: &str) -> TaskStatus {
        match text {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            other => TaskStatus::Other(other.to_owned()),
        }
    }

    /// The status as the protocol writes it.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Other(text) => text,
        }
    }

    /// Completed, failed or cancelled: nothing more will happen.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task as the server last described it.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The server's id for it.
    pub task_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// What the server says about it, when it says something.
    pub status_message: Option<String>,
    /// When it was created (ISO 8601, as sent).
    pub created_at: Option<String>,
    /// When it last changed (ISO 8601, as sent).
    pub last_updated_at: Option<String>,
    /// How long the server keeps it from its creation; `None` for unlimited or unsaid.
    pub ttl: Option<Duration>,
    /// How often the server suggests polling it.
    pub poll_interval: Option<Duration>,
    /// The whole object as sent (a 2026-07-28 task carries its result, error or input
    /// requests here).
    pub raw: Value,
}

fn millis(value: Option<&Value>) -> Option<Duration> {
    value.and_then(Value::as_u64).map(Duration::from_millis)
}

impl Task {
    /// Reads a task object (both generations: `ttl`/`pollInterval` and `ttlMs`/
    /// `pollIntervalMs`).
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] without a string `taskId` and `status`.
    pub fn from_value(value: &Value) -> Result<Task> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let task_id = text("taskId")
            .ok_or_else(|| Error::Protocol(format!("a task without a string `taskId`: {value}")))?;
        let status = text("status")
            .ok_or_else(|| Error::Protocol(format!("task {task_id:?} has no string `status`")))?;
        Ok(Task {
            status: TaskStatus::from_text(&status),
            status_message: text("statusMessage"),
            created_at: text("createdAt"),
            last_updated_at: text("lastUpdatedAt"),
            ttl: millis(value.get("ttlMs").or_else(|| value.get("ttl"))),
            poll_interval: millis(
                value
                    .get("pollIntervalMs")
                    .or_else(|| value.get("pollInterval")),
            ),
            task_id,
            raw: value.clone(),
        })
    }

    /// True when nothing more will happen to it.
    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }
}

/// The task a `tools/call` result creates, if it creates one: `resultType: "task"` (the
/// 2026-07-28 extension) or `{task: {...}}` without content (2025-11-25).
pub(super) fn created_task(era: Era, value: &Value) -> Result<Option<Task>> {
    match era {
        Era::Stateless if value.get("resultType").and_then(Value::as_str) == Some("task") => {
            Task::from_value(value).map(Some)
        }
        Era::Handshake => match value.get("task") {
            Some(task) if task.is_object() && value.get("content").is_none() => {
                Task::from_value(task).map(Some)
            }
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

impl McpInner {
    /// A `tasks/*` request about one task, within `timeout`.
    fn task_request(&self, method: &str, task_id: &str, timeout: Duration) -> Result<Value> {
        self.request(
            method,
            json!({"taskId": task_id}),
            CallOptions::new().timeout(timeout.max(Duration::from_millis(1))),
        )
    }

    /// Asks the server to cancel a task, within the cancel timeout; a failure is logged.
    fn cancel_quietly(&self, task_id: &str) -> bool {
        match self.task_request(
            methods::TASKS_CANCEL,
            task_id,
            self.config.task_cancel_timeout,
        ) {
            Ok(_) => true,
            Err(error) => {
                log::debug!("toolwire: tasks/cancel for task {task_id:?} failed: {error}");
                false
            }
        }
    }
}

impl McpClient {
    /// `tasks/get`: where the task is now.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`] (an unknown task is usually [`Error::Rpc`] with -32602), or
    /// [`Error::Protocol`] for a reply that is not a task.
    pub fn get_task(&self, task_id: &str) -> Result<Task> {
        let timeout = self.inner.config.rpc.request_timeout;
        let value = self
            .inner
            .task_request(methods::TASKS_GET, task_id, timeout)?;
        Task::from_value(&value)
    }

    /// `tasks/cancel`: asks the server to stop the task (it may still end completed or
    /// failed; the server decides).
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`]: a 2025-11-25 server refuses to cancel a terminal task with
    /// -32602.
    pub fn cancel_task(&self, task_id: &str) -> Result<()> {
        let timeout = self.inner.config.task_cancel_timeout;
        self.inner
            .task_request(methods::TASKS_CANCEL, task_id, timeout)
            .map(drop)
    }

    /// The result of a finished tool task: `tasks/result` (2025-11-25, which blocks until the
    /// task is terminal), or the result a 2026-07-28 `tasks/get` carries.
    ///
    /// # Errors
    ///
    /// [`Error::Rpc`] for a task that failed with an error; [`Error::Protocol`] for a
    /// 2026-07-28 task that is not completed (or was cancelled); as [`McpClient::request`].
    pub fn task_result(&self, task_id: &str) -> Result<CallToolResult> {
        let session = self.inner.session()?;
        let timeout = self.inner.config.rpc.request_timeout;
        let value = match session.info.era {
            Era::Handshake => self
                .inner
                .task_request(methods::TASKS_RESULT, task_id, timeout)?,
            Era::Stateless => {
                let task = self.get_task(task_id)?;
                terminal_value(&task)?
            }
        };
        let mut result = self.read_tool_result(value)?;
        result.task_id = Some(task_id.to_owned());
        Ok(result)
    }

    /// `tasks/list`: every task the server keeps for this client (all pages; 2025-11-25
    /// only: the 2026-07-28 extension has no listing).
    ///
    /// # Errors
    ///
    /// As [`McpClient::list_tools`]; [`Error::Protocol`] in the 2026-07-28 era.
    pub fn list_tasks(&self) -> Result<Vec<Task>> {
        if self.inner.session()?.info.era == Era::Stateless {
            return Err(Error::Protocol(
                "the 2026-07-28 tasks extension has no tasks/list".into(),
            ));
        }
        self.inner
            .list_all(methods::TASKS_LIST, "tasks")?
            .into_iter()
            .map(|raw| Task::from_value(&item_text(&raw)?))
            .collect()
    }
}

/// What a terminal 2026-07-28 task ends the call with: its result, its error.
fn terminal_value(task: &Task) -> Result<Value> {
    match &task.status {
        TaskStatus::Completed => task
            .raw
            .get("result")
            .filter(|result| result.is_object())
            .cloned()
            .ok_or_else(|| {
                Error::Protocol(format!(
                    "task {:?} is completed but carries no `result` object",
                    task.task_id
                ))
            }),
        TaskStatus::Failed => match task.raw.get("error").map(ErrorObject::from_value) {
            Some(Ok(error)) => Err(Error::Rpc(Box::new(error))),
            _ => Err(Error::Protocol(format!(
                "task {:?} failed{}",
                task.task_id,
                message_suffix(task)
            ))),
        },
        other => Err(Error::Protocol(format!(
            "task {:?} is {other}, not completed{}",
            task.task_id,
            message_suffix(task)
        ))),
    }
}

fn message_suffix(task: &Task) -> String {
    task.status_message
        .as_deref()
        .map(|message| format!(": {message}"))
        .unwrap_or_default()
}

/// The deadlines a task a tool call became follows: the call's own.
pub(super) struct TaskDeadlines {
    /// The call's timeout, the client's default resolved.
    pub(super) timeout: Duration,
    /// With reset-on-progress, the limit no reset passes (`None` without it).
    pub(super) hard: Option<Instant>,
}

impl TaskDeadlines {
    /// The deadlines `options` give a call started at `started`, the client's defaults filling in.
    pub(super) fn from_options(
        client: &McpClient,
        started: Instant,
        options: &CallOptions,
    ) -> TaskDeadlines {
        let config = &client.inner.config;
        let timeout = options.timeout.unwrap_or(config.rpc.request_timeout);
        let hard = options
            .reset_on_progress
            .then(|| started + options.max_total.unwrap_or(config.rpc.max_total_timeout));
        TaskDeadlines { timeout, hard }
    }
}

/// A task a tool call is waiting for.
pub(super) struct TaskWait {
    task: Task,
    started: Instant,
    deadline: Instant,
    /// With reset-on-progress: the timeout each change of the task restarts, and the limit.
    reset: Option<(Duration, Instant)>,
    next_poll: Instant,
    /// The input requests already answered (2026-07-28 keys are unique for a task's life).
    answered: HashSet<String>,
    updates: Receiver<Value>,
    client: McpClient,
}

impl std::fmt::Debug for TaskWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskWait")
            .field("task", &self.task)
            .finish_non_exhaustive()
    }
}

impl TaskWait {
    /// Starts following `task`, within the call's deadlines (from `started`).
    pub(super) fn new(
        client: &McpClient,
        task: Task,
        started: Instant,
        deadlines: TaskDeadlines,
    ) -> TaskWait {
        let TaskDeadlines { timeout, hard } = deadlines;
        let reset = hard.map(|hard| (timeout, hard));
        let deadline = match reset {
            Some((timeout, hard)) => (Instant::now() + timeout).min(hard),
            None => started + timeout,
        };
        let (tx, updates) = bounded(1);
        client
            .inner
            .shared
            .task_watchers
            .lock()
            .insert(task.task_id.clone(), tx);
        log::debug!(
            "toolwire: the call runs as task {:?} ({})",
            task.task_id,
            task.status
        );
        let mut wait = TaskWait {
            next_poll: Instant::now(),
            task: task.clone(),
            started,
            deadline,
            reset,
            answered: HashSet::new(),
            updates,
            client: client.clone(),
        };
        wait.observe(task);
        wait
    }

    /// The task as last seen.
    pub(super) fn task(&self) -> &Task {
        &self.task
    }

    /// Takes in a newer view of the task: the next poll is due after its interval, and with
    /// reset-on-progress a change restarts the deadline.
    fn observe(&mut self, task: Task) {
        let changed = task.status != self.task.status
            || task.status_message != self.task.status_message
            || task.last_updated_at != self.task.last_updated_at;
        if changed {
            log::debug!(
                "toolwire: task {:?} is {}{}",
                task.task_id,
                task.status,
                message_suffix(&task)
            );
            if let Some((timeout, hard)) = self.reset {
                self.deadline = (Instant::now() + timeout).min(hard);
            }
        }
        let config = &self.client.inner.config;
        let interval = task
            .poll_interval
            .unwrap_or(config.task_poll_interval)
            .clamp(
                config.min_task_poll,
                config.max_task_poll.max(config.min_task_poll),
            );
        self.next_poll = Instant::now() + interval;
        self.task = task;
    }

    /// Cancels the task on the server (bounded by the cancel timeout).
    pub(super) fn cancel(&self) -> bool {
        self.client.inner.cancel_quietly(&self.task.task_id)
    }

    fn timed_out(&self) -> Error {
        log::debug!(
            "toolwire: task {:?} passed the call's deadline; cancelling it",
            self.task.task_id
        );
        self.cancel();
        Error::Timeout {
            method: format!("{} (task {})", methods::TOOLS_CALL, self.task.task_id),
            after: self.started.elapsed(),
        }
    }

    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Moves the task on, waiting at most until `limit`: `Some` with the call's outcome (the
    /// tool's raw result) once it is over, `None` when `limit` came first.
    pub(super) fn step(&mut self, session: &Session, limit: Instant) -> Option<Result<Value>> {
        self.step_or(session, Some(limit), &[])
    }

    /// [`TaskWait::step`] that also returns `None` as soon as one of `stops` fires, waiting
    /// on them together with the task's status notices between polls.
    pub(super) fn step_or(
        &mut self,
        session: &Session,
        limit: Option<Instant>,
        stops: &[&crossbeam_channel::Receiver<()>],
    ) -> Option<Result<Value>> {
        let client = self.client.clone();
        let inner = &client.inner;
        loop {
            match (&self.task.status, session.info.era) {
                (status, Era::Stateless) if status.is_terminal() => {
                    return Some(terminal_value(&self.task))
                }
                (TaskStatus::Cancelled, Era::Handshake) => return Some(terminal_value(&self.task)),
                // Terminal, or waiting for input that only its result stream delivers:
                // `tasks/result` blocks until the end and returns what the call would have.
                (
                    TaskStatus::Completed | TaskStatus::Failed | TaskStatus::InputRequired,
                    Era::Handshake,
                ) => {
                    let outcome =
                        inner.task_request(methods::TASKS_RESULT, &self.task.task_id, self.left());
                    return Some(match outcome {
                        Err(Error::Timeout { .. }) => Err(self.timed_out()),
                        other => other,
                    });
                }
                _ => {}
            }
            if self.task.status == TaskStatus::InputRequired {
                if let Err(error) = self.answer_inputs() {
                    return Some(Err(error));
                }
            }
            let now = Instant::now();
            if now >= self.deadline {
                return Some(Err(self.timed_out()));
            }
            if limit.is_some_and(|limit| now >= limit) {
                return None;
            }
            if now < self.next_poll {
                let until = limit.map_or(self.next_poll, |limit| self.next_poll.min(limit));
                let until = until.min(self.deadline);
                let updates = self.updates.clone();
                let mut select = crossbeam_channel::Select::new();
                let notices = select.recv(&updates);
                for stop in stops {
                    select.recv(stop);
                }
                match select.select_deadline(until) {
                    Ok(operation) if operation.index() == notices => {
                        if let Ok(params) = operation.recv(&updates) {
                            // A status notice: as good as a poll.
                            if let Ok(task) = Task::from_value(&params) {
                                self.observe(task);
                            }
                        }
                    }
                    Ok(operation) => {
                        let stop = stops[operation.index() - 1];
                        let _ = operation.recv(stop);
                        return None;
                    }
                    Err(_) => {}
                }
                continue;
            }
            match inner.task_request(methods::TASKS_GET, &self.task.task_id, self.left()) {
                Ok(value) => match Task::from_value(&value) {
                    Ok(task) => self.observe(task),
                    Err(error) => return Some(Err(error)),
                },
                // The deadline check above turns it into the call's timeout.
                Err(Error::Timeout { .. }) => {}
                Err(error) => return Some(Err(error)),
            }
        }
    }

    /// Answers the input requests of a 2026-07-28 task that were not answered yet, with
    /// `tasks/update`.
    fn answer_inputs(&mut self) -> Result<()> {
        let Some(requests) = self
            .task
            .raw
            .get("inputRequests")
            .and_then(Value::as_object)
        else {
            return Ok(());
        };
        let fresh: serde_json::Map<String, Value> = requests
            .iter()
            .filter(|(key, _)| !self.answered.contains(*key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let inner = &self.client.inner;
        let handlers = ServerRequests::from_config(&inner.config);
        let responses = handlers.answer_input_requests(&json!({"inputRequests": fresh}))?;
        inner.request(
            methods::TASKS_UPDATE,
            json!({"taskId": self.task.task_id, "inputResponses": responses}),
            CallOptions::new().timeout(self.left().max(Duration::from_millis(1))),
        )?;
        self.answered.extend(fresh.into_iter().map(|(key, _)| key));
        Ok(())
    }
}

impl Drop for TaskWait {
    fn drop(&mut self) {
        self.client
            .inner
            .shared
            .task_watchers
            .lock()
            .remove(&self.task.task_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_generations_of_task_objects_are_read() {
        let old = created_task(
            Era::Handshake,
            &json!({"task": {"taskId": "t1", "status": "working", "ttl": 60000, "pollInterval": 500}}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(old.poll_interval, Some(Duration::from_millis(500)));
        assert_eq!(old.ttl, Some(Duration::from_secs(60)));
        let new = created_task(
            Era::Stateless,
            &json!({"resultType": "task", "taskId": "t2", "status": "input_required",
                    "ttlMs": null, "pollIntervalMs": 50}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(new.status, TaskStatus::InputRequired);
        assert_eq!(new.ttl, None);
        assert!(created_task(Era::Stateless, &json!({"content": []}))
            .unwrap()
            .is_none());
        assert!(
            created_task(Era::Handshake, &json!({"content": [], "task": {}}))
                .unwrap()
                .is_none()
        );
        assert!(Task::from_value(&json!({"status": "working"})).is_err());
    }

    #[test]
    fn a_terminal_task_ends_with_its_result_or_error() {
        let task = |value: Value| Task::from_value(&value).unwrap();
        let done = task(json!({"taskId": "a", "status": "completed", "result": {"content": []}}));
        assert_eq!(terminal_value(&done).unwrap(), json!({"content": []}));
        let failed = task(json!({"taskId": "a", "status": "failed",
                                  "error": {"code": -32603, "message": "boom"}}));
        assert!(
            matches!(terminal_value(&failed), Err(Error::Rpc(error)) if error.message == "boom")
        );
        let cancelled =
            task(json!({"taskId": "a", "status": "cancelled", "statusMessage": "by admin"}));
        let error = terminal_value(&cancelled).unwrap_err().to_string();
        assert!(
            error.contains("cancelled") && error.contains("by admin"),
            "{error}"
        );
    }
}

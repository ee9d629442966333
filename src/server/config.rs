//! The server's settings: who it is, which protocol revisions it speaks, and every bound.

use std::time::Duration;

use super::types::LogLevel;
use crate::error::{Error, Result};
use crate::mcp::{HANDSHAKE_VERSIONS, STATELESS_VERSION};

/// Settings for a [`super::Server`]. Every bound is finite; `ServerConfig::new` spells out
/// each value, and each knob has a setter that says its default.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) title: Option<String>,
    pub(crate) instructions: Option<String>,
    pub(crate) workers: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) client_request_timeout: Duration,
    pub(crate) page_size: usize,
    pub(crate) handshake_versions: Vec<String>,
    pub(crate) stateless: bool,
    pub(crate) logging: bool,
    pub(crate) default_log_level: Option<LogLevel>,
    pub(crate) answer_cancelled: bool,
    pub(crate) max_in_flight: usize,
    pub(crate) input_state_ttl: Duration,
    pub(crate) close_grace: Duration,
    pub(crate) list_ttl: Duration,
    pub(crate) max_line_bytes: usize,
    pub(crate) writer_queue: usize,
    pub(crate) max_tasks: usize,
    pub(crate) task_ttl: Duration,
    pub(crate) task_poll_interval: Duration,
    pub(crate) task_input_timeout: Duration,
    pub(crate) max_task_result_bytes: usize,
    pub(crate) metrics: Option<crate::metrics::Metrics>,
    // Running several instances (issue 25): the requestState key ring.
    pub(crate) state_keys: Option<super::StateKeys>,
    // Shared state (issue 25): the state store and the lease of a task's instance.
    pub(crate) state_store: Option<std::sync::Arc<dyn super::StateStore>>,
    pub(crate) task_lease: Duration,
}

impl ServerConfig {
    /// A server named `name` at `version` (its `serverInfo`), with every other setting at its
    /// default.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            version: version.into(),
            title: None,
            instructions: None,
            workers: 16,
            request_timeout: Duration::from_secs(60),
            client_request_timeout: Duration::from_secs(60),
            page_size: 100,
            handshake_versions: HANDSHAKE_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
            stateless: true,
            logging: true,
            default_log_level: Some(LogLevel::Info),
            answer_cancelled: false,
            max_in_flight: 65_536,
            input_state_ttl: Duration::from_secs(600),
            close_grace: Duration::from_secs(2),
            list_ttl: Duration::from_secs(300),
            max_line_bytes: 16 * 1024 * 1024,
            writer_queue: 1024,
            max_tasks: 1024,
            task_ttl: Duration::from_secs(3600),
            task_poll_interval: Duration::from_millis(500),
            task_input_timeout: Duration::from_secs(600),
            max_task_result_bytes: 4 * 1024 * 1024,
            metrics: None,
            state_keys: None,
            // Shared state (issue 25).
            state_store: None,
            task_lease: Duration::from_secs(10),
        }
    }

    /// A display title in `serverInfo`. Defaults to none.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Instructions for the client's model, sent at `initialize` and `server/discover`.
    /// Defaults to none.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// How many requests may run at once on the worker pool (1 to 1,024). One more is
    /// answered at once with [`super::BUSY`], never queued. Defaults to 16.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// How long a handler may run (tools have their own bound,
    /// [`crate::harness::ToolOptions::timeout`]);
    /// past it the request is abandoned: the client is answered with
    /// [`super::REQUEST_TIMEOUT`] and the handler's cancel flag is set, but the handler keeps
    /// its worker until it returns (cancellation is not termination). 1 ms to 1 hour.
    /// Defaults to 60 s.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The deadline of a request back to the client (sampling, elicitation, roots) when the
    /// handler does not give one; never past the handler's own bound. Defaults to 60 s.
    pub fn client_request_timeout(mut self, timeout: Duration) -> Self {
        self.client_request_timeout = timeout;
        self
    }

    /// How many items a page of `tools/list`, `resources/list`, `resources/templates/list` and
    /// `prompts/list` holds (1 to 10,000); the next page is behind an opaque cursor. Defaults
    /// to 100.
    pub fn page_size(mut self, items: usize) -> Self {
        self.page_size = items;
        self
    }

    /// The handshake revisions `initialize` accepts (a client asking for another gets the
    /// newest of these). Empty turns the handshake era off. Defaults to 2024-11-05,
    /// 2025-03-26, 2025-06-18 and 2025-11-25.
    pub fn handshake_versions<I, S>(mut self, versions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.handshake_versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the 2026-07-28 stateless protocol is served (`server/discover`, per-request
    /// `_meta`). Off, `server/discover` is an unknown method, so clients fall back to the
    /// handshake. Defaults to true.
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// Whether the `logging` capability is declared and `logging/setLevel` answered.
    /// Defaults to true.
    pub fn logging(mut self, logging: bool) -> Self {
        self.logging = logging;
        self
    }

    /// The lowest level of log messages sent to a handshake-era client that never called
    /// `logging/setLevel` (`None`: none until it does). A 2026-07-28 request gets log
    /// messages only when its `_meta` asks for a level. Defaults to `Some(Info)`.
    pub fn default_log_level(mut self, level: Option<LogLevel>) -> Self {
        self.default_log_level = level;
        self
    }

    /// Whether a request the client cancelled is still answered when its handler returns,
    /// and its progress still sent. The protocol says it SHOULD NOT be; a test server may
    /// want to, to exercise a client's handling of late answers. Defaults to false.
    pub fn answer_cancelled(mut self, answer: bool) -> Self {
        self.answer_cancelled = answer;
        self
    }

    /// The most requests one connection may have unanswered at once (running, or deferred
    /// with [`super::RequestContext::defer`]); one more is answered with [`super::BUSY`].
    /// Defaults to 65,536.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests;
        self
    }

    /// How long a signed `requestState` stays valid (2026-07-28 input rounds); an older one is
    /// refused. 1 s to 1 day. Defaults to 10 minutes.
    pub fn input_state_ttl(mut self, ttl: Duration) -> Self {
        self.input_state_ttl = ttl;
        self
    }

    /// When a connection ends (stdin reaches end of file, a session is deleted), how long its
    /// running handlers get to finish, with their cancel flags set, before the connection is
    /// closed without them. At most 1 hour. Defaults to 2 s.
    pub fn close_grace(mut self, grace: Duration) -> Self {
        self.close_grace = grace;
        self
    }

    /// The caching hint `ttlMs` of 2026-07-28 list results (`cacheScope` is `public`; reads
    /// get `private` with the same TTL). Defaults to 5 minutes.
    pub fn list_ttl(mut self, ttl: Duration) -> Self {
        self.list_ttl = ttl;
        self
    }

    /// The longest stdin line read over stdio; a longer one is discarded while it is read.
    /// Defaults to 16 MiB.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// How many frames may wait for stdout over stdio; past it a response waits for room up to
    /// the request timeout. Defaults to 1,024.
    pub fn writer_queue(mut self, frames: usize) -> Self {
        self.writer_queue = frames;
        self
    }

    /// The most tasks (2026-07-28 tasks extension) the server holds at once, running,
    /// waiting for input or finished (a finished one is held until its TTL); a call that
    /// would make one more is answered with [`super::BUSY`] and runs nothing. 1 to 1,000,000.
    /// Defaults to 1,024.
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.max_tasks = tasks;
        self
    }

    /// How long a task is kept from its creation (its `ttlMs`): its result can be read until
    /// then and never after; a task still running or waiting for input when it passes is
    /// dropped and its handler told to stop. 1 ms to 7 days. Defaults to 1 hour.
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = ttl;
        self
    }

    /// The polling interval a task suggests to its client (`pollIntervalMs`). 1 ms to 1 hour.
    /// Defaults to 500 ms.
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.task_poll_interval = interval;
        self
    }

    /// How long a task may wait in `input_required` for `tasks/update` to answer its input
    /// requests; past it the task fails with [`super::REQUEST_TIMEOUT`]. 1 ms to 1 day.
    /// Defaults to 10 minutes.
    pub fn task_input_timeout(mut self, timeout: Duration) -> Self {
        self.task_input_timeout = timeout;
        self
    }

    /// The largest task result kept, as JSON bytes; a larger one fails the task (-32603)
    /// instead of being held until the TTL. At least 1 KiB. Defaults to 4 MiB.
    pub fn max_task_result_bytes(mut self, bytes: usize) -> Self {
        self.max_task_result_bytes = bytes;
        self
    }

    /// Records every request the server answers into `metrics`
    /// (`mcp_server_operation_duration_seconds`, see [`crate::metrics`]), which
    /// [`super::HttpServer::bind_metrics`] serves. Defaults to none: nothing is recorded.
    pub fn metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The keys that sign and verify 2026-07-28 `requestState` tokens: the first signs, every
    /// one verifies. Give every instance behind one load balancer the same ring (for example
    /// [`super::StateKeys::from_file`]) so the retry of an input round may land on any of
    /// them; rotate by putting the new key first and keeping the old one until
    /// [`ServerConfig::input_state_ttl`] has passed. Defaults to 32 random bytes made once
    /// per process: states verify only in the process that signed them.
    pub fn state_keys(mut self, keys: super::StateKeys) -> Self {
        self.state_keys = Some(keys);
        self
    }

    /// The ring in use: the configured one, else the process's own.
    pub(crate) fn keys(&self) -> &super::StateKeys {
        self.state_keys
            .as_ref()
            .unwrap_or_else(|| super::StateKeys::process())
    }

    // Shared state (issue 25): what several instances of one server share.

    /// Where tasks (2026-07-28 tasks extension) are kept and events other instances must get
    /// are published: a shared store (such as [`super::RedisStore`], feature `redis`) lets any
    /// instance behind a load balancer answer `tasks/get`, `tasks/update` and `tasks/cancel`
    /// for a task another created, and carries resource updates to the subscriptions every
    /// instance holds. A request that needs a store that is down is answered at once with an
    /// internal error naming the store. Defaults to a [`super::MemoryStore`] of this process
    /// alone.
    pub fn state_store(mut self, store: std::sync::Arc<dyn super::StateStore>) -> Self {
        self.state_store = Some(store);
        self
    }

    /// With a shared [`ServerConfig::state_store`]: how long a task's instance holds the task
    /// without renewing it (it renews every third of it while it lives). A task whose instance
    /// stopped is failed by the first instance that reads it past this, with an error saying
    /// so, and is never run again. 100 ms to 1 hour. Defaults to 10 s.
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.task_lease = lease;
        self
    }

    /// The revisions `server/discover` lists.
    pub(crate) fn stateless_versions(&self) -> Vec<&'static str> {
        if self.stateless {
            vec![STATELESS_VERSION]
        } else {
            Vec::new()
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        let bad = |text: String| Err(Error::Config(text));
        if !(1..=1024).contains(&self.workers) {
            return bad(format!("workers must be 1 to 1024, not {}", self.workers));
        }
        if !(1..=10_000).contains(&self.page_size) {
            return bad(format!(
                "page_size must be 1 to 10000, not {}",
                self.page_size
            ));
        }
        let hour = Duration::from_secs(3600);
        let ms = Duration::from_millis(1);
        for (name, value) in [
            ("request_timeout", self.request_timeout),
            ("client_request_timeout", self.client_request_timeout),
        ] {
            if value < ms || value > hour {
                return bad(format!("{name} must be 1 ms to 1 hour, not {value:?}"));
            }
        }
        if self.close_grace > hour {
            return bad(format!(
                "close_grace must be at most 1 hour, not {:?}",
                self.close_grace
            ));
        }
        if self.input_state_ttl < Duration::from_secs(1)
            || self.input_state_ttl > Duration::from_secs(86_400)
        {
            return bad(format!(
                "input_state_ttl must be 1 s to 1 day, not {:?}",
                self.input_state_ttl
            ));
        }
        if self.max_in_flight == 0 || self.writer_queue == 0 || self.max_line_bytes == 0 {
            return bad("max_in_flight, writer_queue and max_line_bytes must be positive".into());
        }
        if !(1..=1_000_000).contains(&self.max_tasks) {
            return bad(format!(
                "max_tasks must be 1 to 1000000, not {}",
                self.max_tasks
            ));
        }
        for (name, value, most) in [
            ("task_ttl", self.task_ttl, Duration::from_secs(7 * 86_400)),
            ("task_poll_interval", self.task_poll_interval, hour),
            (
                "task_input_timeout",
                self.task_input_timeout,
                Duration::from_secs(86_400),
            ),
        ] {
            if value < ms || value > most {
                return bad(format!("{name} must be 1 ms to {most:?}, not {value:?}"));
            }
        }
        if self.max_task_result_bytes < 1024 {
            return bad(format!(
                "max_task_result_bytes must be at least 1024, not {}",
                self.max_task_result_bytes
            ));
        }
        if self.task_lease < Duration::from_millis(100) || self.task_lease > hour {
            return bad(format!(
                "task_lease must be 100 ms to 1 hour, not {:?}",
                self.task_lease
            ));
        }
        if self.handshake_versions.is_empty() && !self.stateless {
            return bad("the server must speak some revision: handshake or stateless".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_checked() {
        assert!(ServerConfig::new("s", "1").check().is_ok());
        for config in [
            ServerConfig::new("s", "1").workers(0),
            ServerConfig::new("s", "1").page_size(0),
            ServerConfig::new("s", "1").request_timeout(Duration::ZERO),
            ServerConfig::new("s", "1")
                .handshake_versions(Vec::<String>::new())
                .stateless(false),
        ] {
            assert!(
                matches!(config.check(), Err(Error::Config(_))),
                "{config:?}"
            );
        }
    }
}

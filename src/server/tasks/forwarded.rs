//! Tasks a server does not run itself: a proxy (the gateway) passes its clients' `tasks/*`
//! requests on to the servers behind it.

use serde_json::Value;

use crate::server::{HandlerError, RequestContext, Server};

impl Server {
    /// Has `hook` answer `tasks/get`, `tasks/update` and `tasks/cancel` (2026-07-28, the
    /// tasks extension declared by the request; the method and the params are given) on a
    /// worker, for tasks a tool's handler returned as they came from elsewhere (a result
    /// whose `raw` is a `CreateTaskResult`, `resultType: "task"`, is sent as it is). `None`
    /// from the hook leaves the request to the server's own tasks. Once set, the server
    /// declares the tasks extension to 2026-07-28 clients. Defaults to none.
    pub fn set_forwarded_tasks(
        &self,
        hook: impl Fn(&RequestContext, &str, &Value) -> Option<std::result::Result<Value, HandlerError>>
            + Send
            + Sync
            + 'static,
    ) {
        self.shared.catalog.write().forwarded_tasks = Some(std::sync::Arc::new(hook));
    }
}

/// What a sealed task id names: the server behind the proxy and its own task id.
const SEALED_FOR: &str = "tasks";

impl Server {
    /// A task of the server `owner` behind this one (a proxy's), as this server's clients
    /// name it: `task` and `owner` signed with the server's state keys
    /// ([`crate::server::ServerConfig::state_keys`]), for the request's caller, valid for
    /// `ttl` (so it names no other server's task, and no one but its caller can use it).
    /// [`Server::open_task`] reads it back.
    pub fn seal_task(
        &self,
        context: &RequestContext,
        owner: &str,
        task: &str,
        ttl: std::time::Duration,
    ) -> String {
        super::super::state::sign(
            self.shared.config.keys(),
            SEALED_FOR,
            "",
            context.caller(),
            &serde_json::json!({"server": owner, "task": task}),
            ttl,
        )
    }

    /// The server and its task id a sealed id ([`Server::seal_task`]) names, when it is one
    /// this server sealed for the request's caller and it has not expired; `None` otherwise.
    pub fn open_task(&self, context: &RequestContext, sealed: &str) -> Option<(String, String)> {
        let state = super::super::state::verify(
            self.shared.config.keys(),
            sealed,
            SEALED_FOR,
            "",
            context.caller(),
        )
        .ok()?;
        Some((
            state.get("server")?.as_str()?.to_owned(),
            state.get("task")?.as_str()?.to_owned(),
        ))
    }
}

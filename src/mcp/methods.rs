//! The MCP method names this crate sends, answers or reads. Nothing below `mcp/` names one.

/// Opens a session (handshake era).
pub const INITIALIZE: &str = "initialize";
/// Completes the handshake.
pub const INITIALIZED: &str = "notifications/initialized";
/// Describes a 2026-07-28 server: its versions and capabilities.
pub const SERVER_DISCOVER: &str = "server/discover";
/// Liveness, both ways (handshake era).
pub const PING: &str = "ping";
/// Progress reports for a request that carried a progress token.
pub const PROGRESS: &str = "notifications/progress";
/// A request was given up by its sender.
pub const CANCELLED: &str = "notifications/cancelled";
/// Lists tools (paged).
pub const TOOLS_LIST: &str = "tools/list";
/// Calls a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// The server's tool list changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// Lists resources (paged).
pub const RESOURCES_LIST: &str = "resources/list";
/// Lists resource templates (paged).
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Reads a resource.
pub const RESOURCES_READ: &str = "resources/read";
/// Subscribes to a resource's updates.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Ends a subscription.
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// The server's resource list (or its templates) changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// A subscribed resource changed.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// Lists prompts (paged).
pub const PROMPTS_LIST: &str = "prompts/list";
/// Gets a prompt with its arguments filled in.
pub const PROMPTS_GET: &str = "prompts/get";
/// The server's prompt list changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// Completes an argument of a prompt or resource template.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// Sets the level of the server's log messages (handshake era).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// A log message from the server.
pub const LOG_MESSAGE: &str = "notifications/message";
/// The server asks for the client's roots.
pub const ROOTS_LIST: &str = "roots/list";
/// The client's roots changed.
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// The server asks the client's model for a completion.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// The server asks the user for input.
pub const ELICITATION_CREATE: &str = "elicitation/create";

/// A task's state (tasks utility of 2025-11-25, and the 2026-07-28 tasks extension).
pub const TASKS_GET: &str = "tasks/get";
/// A task's result, blocking until it is terminal (2025-11-25 only).
pub const TASKS_RESULT: &str = "tasks/result";
/// Asks the server to stop a task.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// Lists tasks (paged; 2025-11-25 only).
pub const TASKS_LIST: &str = "tasks/list";
/// Answers a task's input requests (the 2026-07-28 tasks extension).
pub const TASKS_UPDATE: &str = "tasks/update";
/// A task's status changed (2025-11-25).
pub const TASKS_STATUS: &str = "notifications/tasks/status";
/// A task's state, pushed (the 2026-07-28 tasks extension).
pub const TASKS_NOTIFICATION: &str = "notifications/tasks";

/// Lists the skills a server serves (paged; the Skills extension, SEP-2640).
pub const SKILLS_LIST: &str = "skills/list";
/// One skill's entry by the URI of its `SKILL.md` (the Skills extension).
pub const SKILLS_GET: &str = "skills/get";
/// The direct children of a directory resource (the Skills extension's `directoryRead`).
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";

/// The target a request names, for routing headers (`Mcp-Name`): the param that holds it.
pub(crate) fn target_param(method: &str) -> Option<&'static str> {
    match method {
        TOOLS_CALL | PROMPTS_GET => Some("name"),
        RESOURCES_READ => Some("uri"),
        TASKS_GET | TASKS_UPDATE | TASKS_CANCEL => Some("taskId"),
        _ => None,
    }
}

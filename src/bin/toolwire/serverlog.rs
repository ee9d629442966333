//! The server's log messages (`notifications/message`) on stderr: `server LEVEL [logger]:
//! text`, plain text (a string payload as it is, anything else as compact JSON), at
//! `--server-log` and above (warning by default). Control characters are shown escaped, and
//! the line is drawn around the progress bar.

use std::io::Write;

use serde_json::Value;
use toolwire::mcp::LogMessage;

use crate::cli::ServerLog;

/// The syslog levels MCP uses, lowest first.
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The rank of a level; an unknown one counts as `info`.
fn rank(level: &str) -> usize {
    LEVELS.iter().position(|known| *known == level).unwrap_or(1)
}

/// The line shown for a message.
pub fn line(message: &LogMessage) -> String {
    let text = match &message.data {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    // The level as the server sent it (bounded: it is the peer's text).
    let level: String = message.level.chars().take(16).collect();
    match &message.logger {
        Some(logger) => {
            let logger: String = logger.chars().take(64).collect();
            format!("server {level} [{logger}]: {text}\n")
        }
        None => format!("server {level}: {text}\n"),
    }
}

/// Shows `message` when it is at `threshold` or above.
pub fn show(message: &LogMessage, threshold: ServerLog) {
    let Some(minimum) = threshold.level() else {
        return;
    };
    if rank(&message.level) < rank(minimum) {
        return;
    }
    let shown = crate::terminal::shown(&line(message)).into_owned();
    crate::progress::suspend(|| {
        // A closed stderr is not worth failing over.
        let _ = std::io::stderr().lock().write_all(shown.as_bytes());
    });
}

/// A 2026-07-28 server sends log messages only at the level each request's `_meta` names:
/// the command names `--server-log`'s (no request is sent for it). A handshake-era server
/// keeps its own default, and the command filters.
pub fn ask_stateless(client: &toolwire::McpClient, threshold: ServerLog) {
    let stateless = client
        .session_info()
        .is_ok_and(|info| info.era == toolwire::mcp::Era::Stateless);
    if let (true, Some(level)) = (stateless, threshold.level()) {
        if let Err(error) = client.set_logging_level(level) {
            log::debug!("asking for the server's log messages: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_plain_text_with_the_level() {
        let message = LogMessage {
            level: "warning".into(),
            logger: Some("db".into()),
            data: json!("disk almost full"),
        };
        assert_eq!(line(&message), "server warning [db]: disk almost full\n");
        let message = LogMessage {
            level: "error".into(),
            logger: None,
            data: json!({"code": 5}),
        };
        assert_eq!(line(&message), "server error: {\"code\":5}\n");
        assert!(rank("critical") > rank("warning"));
        assert!(rank("weird") < rank("warning"));
    }
}

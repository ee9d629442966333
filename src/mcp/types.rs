//! MCP data shapes of the session and of what a server asks of the client: the era, server
//! info, roots, elicitation, log messages.

use serde_json::{json, Map, Value};

/// Which generation of the protocol a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// The `initialize` handshake (2024-11-05 … 2025-11-25).
    Handshake,
    /// Stateless 2026-07-28: `server/discover` and per-request `_meta`.
    Stateless,
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Era::Handshake => "handshake (initialize)",
            Era::Stateless => "stateless (server/discover)",
        })
    }
}

/// A server's or client's name and version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Implementation {
    /// The name.
    pub name: String,
    /// The version.
    pub version: String,
    /// A display title, when given.
    pub title: Option<String>,
}

impl Implementation {
    fn from_value(value: Option<&Value>) -> Implementation {
        let text = |key: &str| {
            value
                .and_then(|value| value.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Implementation {
            name: text("name").unwrap_or_default(),
            version: text("version").unwrap_or_default(),
            title: text("title"),
        }
    }
}

/// What the client learned when it connected.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The protocol era in use.
    pub era: Era,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The server's name and version.
    pub server: Implementation,
    /// The server's capabilities object, as sent.
    pub capabilities: Value,
    /// The server's instructions, when it sent some.
    pub instructions: Option<String>,
}

impl SessionInfo {
    pub(crate) fn from_result(era: Era, protocol_version: String, result: &Value) -> SessionInfo {
        SessionInfo {
            era,
            protocol_version,
            // 2026-07-28 moved it into `_meta`.
            server: Implementation::from_value(result.get("serverInfo").or_else(|| {
                result
                    .get("_meta")
                    .and_then(|meta| meta.get("io.modelcontextprotocol/serverInfo"))
            })),
            capabilities: result
                .get("capabilities")
                .cloned()
                .unwrap_or_else(|| json!({})),
            instructions: result
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }

    /// True when the server declared the capability `name` (e.g. "tools", "resources").
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities
            .get(name)
            .is_some_and(|value| !value.is_null())
    }
}

/// A root the client exposes to servers (`roots/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    pub name: Option<String>,
}

impl Root {
    pub(crate) fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("uri".into(), Value::from(self.uri.clone()));
        if let Some(name) = &self.name {
            object.insert("name".into(), Value::from(name.clone()));
        }
        Value::Object(object)
    }
}

/// An `elicitation/create` request from the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitRequest {
    /// The message to show the user.
    pub message: String,
    /// The schema of the answer (form mode), when given.
    pub requested_schema: Option<Value>,
    /// The params as sent.
    pub raw: Value,
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitResult {
    /// Accepted, with the content (an object matching the requested schema).
    Accept(Value),
    /// Declined.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

impl ElicitResult {
    /// Accepts with every default the requested schema declares, the answer a non-interactive
    /// client can give in good conscience.
    pub fn accept_defaults(request: &ElicitRequest) -> ElicitResult {
        let mut content = Map::new();
        if let Some(properties) = request
            .requested_schema
            .as_ref()
            .and_then(|schema| schema.get("properties"))
            .and_then(Value::as_object)
        {
            for (name, property) in properties {
                if let Some(default) = property.get("default") {
                    content.insert(name.clone(), default.clone());
                }
            }
        }
        ElicitResult::Accept(Value::Object(content))
    }

    pub(crate) fn to_value(&self) -> Value {
        match self {
            ElicitResult::Accept(content) => json!({"action": "accept", "content": content}),
            ElicitResult::Decline => json!({"action": "decline"}),
            ElicitResult::Cancel => json!({"action": "cancel"}),
        }
    }
}

/// A log message from the server (`notifications/message`).
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    /// The syslog-style level ("debug" … "emergency").
    pub level: String,
    /// The logger name, when given.
    pub logger: Option<String>,
    /// The payload.
    pub data: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_defaults_fills_declared_defaults_only() {
        let request = ElicitRequest {
            message: "?".into(),
            requested_schema: Some(json!({"type": "object", "properties": {
                "name": {"type": "string", "default": "Ada"},
                "age": {"type": "integer"},
                "tier": {"type": "string", "enum": ["a", "b"], "default": "b"}
            }})),
            raw: json!({}),
        };
        assert_eq!(
            ElicitResult::accept_defaults(&request).to_value(),
            json!({"action": "accept", "content": {"name": "Ada", "tier": "b"}})
        );
    }
}

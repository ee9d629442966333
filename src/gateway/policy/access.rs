//! Who may use a tool: the policy's `scopes` and `subjects` keys, at the top, server and
//! tool levels, decided per authenticated caller.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::server::{Caller, ToolAccess};

/// The most scopes or subjects one key may list.
const MAX_NAMES: usize = 256;

/// One level's `scopes` and `subjects`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Access {
    /// Scopes the caller's token must all hold.
    scopes: BTreeSet<String>,
    /// Only these subjects, when set.
    allow: Option<BTreeSet<String>>,
    /// Never these subjects.
    deny: BTreeSet<String>,
}

impl Access {
    /// Whether this level says nothing about callers.
    pub(super) fn is_empty(&self) -> bool {
        self.scopes.is_empty() && self.allow.is_none() && self.deny.is_empty()
    }

    /// Reads `key` when it is `scopes` or `subjects`; false when it is neither.
    pub(super) fn key(&mut self, key: &str, value: &Value, at: &str) -> Result<bool> {
        match key {
            "scopes" => self.scopes = strings(value, at, "scopes")?,
            "subjects" => {
                let object = value.as_object().ok_or_else(|| {
                    Error::Config(format!(
                        "the policy's {at} must be an object with \"allow\" and/or \"deny\""
                    ))
                })?;
                for (key, value) in object {
                    let here = format!("{at}/{key}");
                    match key.as_str() {
                        "allow" => self.allow = Some(strings(value, &here, "subjects")?),
                        "deny" => self.deny = strings(value, &here, "subjects")?,
                        _ => {
                            return Err(Error::Config(format!(
                                "the policy's {at} has an unknown key {key:?} (known: allow, \
                                 deny)"
                            )))
                        }
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The decision for a caller over a tool's levels (top, server, tool): a subject denied at
/// any level, or missing from any level's allow list, is [`ToolAccess::Hidden`]; otherwise the
/// scopes of every level are needed. With no caller (stdio, or HTTP without authorization)
/// nothing is checked: the gateway refuses to start with such a policy and no authorization
/// in front of it.
pub(super) fn decide(levels: &[&Access], caller: Option<&Caller>) -> ToolAccess {
    let Some(caller) = caller else {
        return ToolAccess::Allowed;
    };
    let subject = caller.subject();
    let permitted = levels.iter().all(|level| {
        !level.deny.contains(subject)
            && level
                .allow
                .as_ref()
                .is_none_or(|allow| allow.contains(subject))
    });
    if !permitted {
        return ToolAccess::Hidden;
    }
    let needed: BTreeSet<&String> = levels.iter().flat_map(|level| &level.scopes).collect();
    if needed.iter().all(|scope| caller.has_scope(scope)) {
        ToolAccess::Allowed
    } else {
        ToolAccess::NeedsScopes(needed.into_iter().cloned().collect())
    }
}

fn strings(value: &Value, at: &str, what: &str) -> Result<BTreeSet<String>> {
    let bad = || {
        Error::Config(format!(
            "the policy's {at} must be an array of at most {MAX_NAMES} non-empty {what} \
             (a scope without spaces, quotes or backslashes)"
        ))
    };
    let items = value.as_array().ok_or_else(bad)?;
    if items.len() > MAX_NAMES {
        return Err(bad());
    }
    items
        .iter()
        .map(|item| match item.as_str() {
            // A scope travels in a challenge's quoted, space-separated `scope`.
            Some(text)
                if !text.is_empty()
                    && (what != "scopes"
                        || !text
                            .chars()
                            .any(|c| c.is_whitespace() || c == '"' || c == '\\')) =>
            {
                Ok(text.to_owned())
            }
            _ => Err(bad()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::Policy;
    use super::*;

    fn caller(subject: &str, scopes: &[&str]) -> Caller {
        Caller {
            subject: subject.into(),
            client_id: None,
            scopes: scopes.iter().map(|scope| scope.to_string()).collect(),
            issuer: None,
        }
    }

    #[test]
    fn scopes_add_up_over_levels_and_subjects_must_pass_every_level() {
        let policy = Policy::parse(
            r#"{"scopes": ["mcp"], "subjects": {"deny": ["mallory"]},
                "servers": {"files": {
                    "subjects": {"allow": ["alice", "bob"]},
                    "tools": {"write": {"scopes": ["files:write"]},
                              "admin": {"subjects": {"allow": ["alice"]}}}}}}"#,
        )
        .unwrap();
        assert!(policy.names_callers());
        let alice = caller("alice", &["mcp"]);
        let bob = caller("bob", &["mcp", "files:write"]);
        assert_eq!(
            policy.decide("files", "write", Some(&alice)),
            ToolAccess::NeedsScopes(vec!["files:write".into(), "mcp".into()])
        );
        assert_eq!(
            policy.decide("files", "write", Some(&bob)),
            ToolAccess::Allowed
        );
        assert_eq!(
            policy.decide("files", "admin", Some(&alice)),
            ToolAccess::Allowed
        );
        assert_eq!(
            policy.decide("files", "admin", Some(&bob)),
            ToolAccess::Hidden
        );
        // The top level's deny holds on every server; its scope on every tool.
        let mallory = caller("mallory", &["mcp"]);
        assert_eq!(
            policy.decide("other", "x", Some(&mallory)),
            ToolAccess::Hidden
        );
        assert_eq!(
            policy.decide("other", "x", Some(&caller("carol", &[]))),
            ToolAccess::NeedsScopes(vec!["mcp".into()])
        );
        // A subject the server does not allow is hidden before any scope is asked.
        assert_eq!(
            policy.decide("files", "read", Some(&caller("carol", &[]))),
            ToolAccess::Hidden
        );
        // A tool no backend owns answers to the top level only.
        assert_eq!(policy.decide_top(&bob), ToolAccess::Allowed);
        assert_eq!(policy.decide_top(&mallory), ToolAccess::Hidden);
        // No caller: nothing to decide on (the gateway refuses such a start).
        assert_eq!(policy.decide("files", "admin", None), ToolAccess::Allowed);
        assert!(!Policy::default().names_callers());
    }

    #[test]
    fn bad_scopes_and_subjects_are_errors_naming_the_place() {
        for (text, place) in [
            (r#"{"scopes": "mcp"}"#, "/scopes"),
            (r#"{"scopes": ["two words"]}"#, "/scopes"),
            (r#"{"scopes": [""]}"#, "/scopes"),
            (r#"{"subjects": ["alice"]}"#, "/subjects"),
            (r#"{"subjects": {"permit": ["alice"]}}"#, "/subjects"),
            (
                r#"{"servers": {"s": {"tools": {"t": {"subjects": {"allow": [1]}}}}}}"#,
                "/servers/s/tools/t/subjects/allow",
            ),
        ] {
            let error = Policy::parse(text).unwrap_err().to_string();
            assert!(error.contains(place), "{text}: {error}");
        }
    }
}

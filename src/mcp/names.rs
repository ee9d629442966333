//! The one tool-name rule: what MCP allows, used by the harness's registry and its imports,
//! the server's catalog and the gateway alike, so a tool named once is named the same
//! everywhere.
//!
//! A tool name is 1 to 128 characters of `A-Z a-z 0-9 _ - .` ([`TOOL_NAME_RULE`]): the
//! characters the MCP specification allows, less `/`, which the MCP conformance suite flags.
//! So `get_weather`, `test_simple_text`, `read-file` and `files.read` are names everywhere.
//! A name is only a key: it is never joined to a path or looked up by reflection.
//!
//! The checks a model API adds when tools are offered to it (OpenAI and Anthropic allow 64
//! characters of `A-Z a-z 0-9 _ -`) belong to the export of the tool list to that API, not
//! to this rule.

/// The longest tool name, in characters (the MCP specification's limit).
pub const MAX_TOOL_NAME_CHARS: usize = 128;

/// The tool-name rule in words, for messages and documentation.
pub const TOOL_NAME_RULE: &str =
    "1 to 128 characters of A-Z, a-z, 0-9, '_', '-' and '.' (the names MCP allows, without '/')";

/// True when `name` is a tool name: 1 to [`MAX_TOOL_NAME_CHARS`] characters of
/// `A-Z a-z 0-9 _ - .`.
pub fn is_tool_name(name: &str) -> bool {
    // Every allowed character is one byte, so bytes and characters agree on the length.
    (1..=MAX_TOOL_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Checks a tool name against the rule.
///
/// # Errors
///
/// The reason, naming the name (quoted and bounded) and the rule.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    if is_tool_name(name) {
        Ok(())
    } else {
        Err(format!(
            "the tool name {} is not a valid tool name: names must be {TOOL_NAME_RULE}",
            crate::json::quote(name)
        ))
    }
}

/// True when `name` is one some model API or MCP accepts as a tool name: 1 to
/// [`MAX_TOOL_NAME_CHARS`] characters of `A-Z a-z 0-9 _ - . :` (the tool-name rule, plus the
/// `:` Gemini allows). A call to such a name that is not registered is an unknown tool (the
/// model is told which tools exist), never a malformed call.
pub fn is_callable_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_names_pass_and_others_do_not() {
        let longest = "a".repeat(MAX_TOOL_NAME_CHARS);
        for good in [
            "get_weather",
            "test_simple_text",
            "a.b",
            "read-file",
            "Get_Weather",
            "mcp__files__read_file",
            "9lives",
            "_",
            &longest,
        ] {
            assert!(is_tool_name(good), "{good}");
            assert!(check_tool_name(good).is_ok(), "{good}");
            assert!(is_callable_name(good), "{good}");
        }
        let too_long = "a".repeat(MAX_TOOL_NAME_CHARS + 1);
        for bad in [
            "",
            "a/b",
            "../secret",
            "a b",
            "é",
            "ns:tool",
            "a\u{0}",
            &too_long,
        ] {
            assert!(!is_tool_name(bad), "{bad:?}");
            let reason = check_tool_name(bad).unwrap_err();
            assert!(reason.contains("is not a valid tool name"), "{reason}");
            assert!(reason.contains(TOOL_NAME_RULE), "{reason}");
        }
        assert!(is_callable_name("ns:tool"), "Gemini allows ':'");
        for bad in ["", "a/b", "../secret", "a b", &too_long] {
            assert!(!is_callable_name(bad), "{bad:?}");
        }
    }
}

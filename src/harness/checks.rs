//! The checks a call passes before any tool code runs: the name, the registry, and the
//! arguments against the tool's schema and the integer bound.

use std::sync::Arc;

use serde_json::Value;

use super::outcome::{Outcome, Status};
use super::parse::{quote, MAX_SAFE_INTEGER};
use super::registry::{RegisteredTool, ToolRegistry, ToolSchema};
use crate::mcp::{is_callable_name, TOOL_NAME_RULE};

/// The most tool names listed in an `UNKNOWN_TOOL` detail.
const MAX_LISTED_NAMES: usize = 32;

/// The argument checks of [`check_call`], for a tool found by other means (the gateway looks
/// its front names up itself): object arguments, the input schema (`INVALID` with the repair
/// message; `TOOL_ERROR` when the schema cannot be used or checked), and integers beyond
/// ±(2^53 − 1) unless `allow_large_integers`.
pub(crate) fn check_arguments(
    name: &str,
    schema: &ToolSchema,
    allow_large_integers: bool,
    arguments: &Value,
    repair_schema_chars: usize,
) -> Result<(), Outcome> {
    if !arguments.is_object() {
        let detail = format!(
            "the arguments of tool {} must be a JSON object, not {}",
            quote(name),
            super::parse::kind_of(arguments)
        );
        return Err(Outcome::new(Status::Invalid, detail));
    }
    if !schema.is_checked() {
        // The tool's code checks its own arguments (`LocalTool::check_schemas(false)`).
        return Ok(());
    }
    let compiled = match schema.get() {
        Ok(schema) => schema,
        // The server's schema is refused (over the schema bounds, or not compilable): the
        // tool cannot be checked, so it cannot be called; the others work.
        Err(reason) => return Err(Outcome::new(Status::ToolError, reason)),
    };
    if let Err(violations) = compiled.validate(arguments) {
        if let Some(budget) = violations.iter().find(|violation| violation.is_budget()) {
            // Too costly to check: the schema's fault, not the arguments'.
            let detail = format!(
                "the arguments of tool {} could not be checked against its schema ({}); \
                 nothing was run",
                quote(name),
                budget.message
            );
            return Err(Outcome::new(Status::ToolError, detail));
        }
        return Err(Outcome::new(
            Status::Invalid,
            compiled.repair_message(name, &violations, repair_schema_chars),
        ));
    }
    if !allow_large_integers {
        if let Some((path, number)) = super::parse::unsafe_integer(arguments) {
            let detail = format!(
                "the arguments of tool {} hold the integer {number} at {}, beyond \
                 ±{MAX_SAFE_INTEGER} (2^53 − 1): many JSON readers cannot hold it exactly, \
                 so nothing was run. Send a smaller number, or the value as a string if the \
                 schema allows one",
                quote(name),
                super::parse::show_pointer(&path)
            );
            return Err(Outcome::new(Status::Invalid, detail));
        }
    }
    Ok(())
}

/// The checks a call passes before any tool code runs, in the order the harness documents:
/// the registry (`UNKNOWN_TOOL` for a name some model API or MCP accepts, `INVALID` for any
/// other, see [`unknown_name`]), object arguments, the tool's input schema
/// (`INVALID` with the repair message; `TOOL_ERROR` when the schema itself cannot be used or
/// checked), and integers beyond ±(2^53 − 1). The MCP server runs a served registry's calls
/// through the same checks.
pub(crate) fn check_call<'a>(
    registry: &'a ToolRegistry,
    name: &str,
    arguments: &Value,
    repair_schema_chars: usize,
) -> Result<&'a Arc<RegisteredTool>, Outcome> {
    let Some(tool) = registry.get(name) else {
        return Err(unknown_name(registry, name));
    };
    check_arguments(
        &tool.name,
        &tool.schema,
        tool.options.allow_large_integers,
        arguments,
        repair_schema_chars,
    )?;
    Ok(tool)
}

/// The answer to a call of a name the registry does not hold: `UNKNOWN_TOOL` with the list
/// of tools when the name is one some model API or MCP accepts (`search_web`, `ns:tool`), so
/// the model learns what exists; `INVALID` naming the rule for anything else (`../secret`, a
/// name with a space), which no model API would have offered.
pub(crate) fn unknown_name(registry: &ToolRegistry, name: &str) -> Outcome {
    match name_refusal(name) {
        None => Outcome::new(Status::UnknownTool, unknown_tool_detail(registry, name)),
        Some(reason) => Outcome::new(Status::Invalid, reason),
    }
}

/// Why a call's name is refused before the registry is asked (`INVALID`), or `None` for a
/// name some model API or MCP accepts ([`is_callable_name`]).
pub(crate) fn name_refusal(name: &str) -> Option<String> {
    if is_callable_name(name) {
        return None;
    }
    Some(format!(
        "the tool name {} is not a valid tool name: names must be {TOOL_NAME_RULE}",
        quote(name)
    ))
}

fn unknown_tool_detail(registry: &ToolRegistry, name: &str) -> String {
    let names = registry.names();
    let mut listed = names
        .iter()
        .take(MAX_LISTED_NAMES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX_LISTED_NAMES {
        listed.push_str(&format!(" and {} more", names.len() - MAX_LISTED_NAMES));
    }
    if listed.is_empty() {
        listed.push_str("(none)");
    }
    format!(
        "there is no tool named {}; nothing was run. The available tools are: {listed}",
        quote(name)
    )
}

//! Running a tool call: the arguments checked against the tool's input schema (a break is
//! answered with the repair message, as a tool error), the handler, the structured result
//! checked against the output schema, and, for a served `ToolRegistry`, the registry's own
//! checks, failures and result limits. Reading a resource is here too.

use std::sync::Arc;

use serde_json::{json, Value};

use super::catalog::ToolEntry;
use super::conn::Connection;
use super::context::RequestContext;
use super::types::HandlerError;
use crate::client::CallOptions;
use crate::harness::{
    check_call, failure_ran, limit_mcp_result, remote_error, run_function, run_local, value_text,
    Backend, LocalCode, Ran,
};
use crate::mcp::CallToolResult;
use crate::mcp::Era;
use crate::wire::{ErrorCode, ErrorObject};

/// How many characters of a tool's schema a repair message quotes.
const REPAIR_SCHEMA_CHARS: usize = 4_000;
/// What the model reads when the tool failed with a text that stays internal.
const GENERIC_FAILURE: &str =
    "the tool failed; the details were logged for the operator and are not shown here";

/// Runs one call of a tool.
pub(crate) fn call(
    entry: &ToolEntry,
    context: &RequestContext,
    arguments: Value,
) -> Result<Value, HandlerError> {
    let registry = &entry.registry;
    let tool = &entry.tool;
    let checked = match check_call(registry, &tool.name, &arguments, REPAIR_SCHEMA_CHARS) {
        Ok(checked) => Arc::clone(checked),
        Err(outcome) => return Ok(CallToolResult::error(outcome.detail).into_value()),
    };
    let ran = match &checked.backend {
        Backend::Local(code @ LocalCode::Value(_)) => run_local(code, &arguments, context).0,
        Backend::Local(LocalCode::Context(function)) => {
            match run_function(function, context, &arguments) {
                Ok(result) => {
                    let result = checked_output(entry, result);
                    let limit = &checked.options.result_limit;
                    let declared = checked.output_schema.is_some();
                    return Ok(limit_mcp_result(limit, result, declared)
                        .into_result()
                        .into_value());
                }
                // A request back to the client the server answers itself (an input
                // round, a missing capability) is answered as for its own tools.
                Err(failure) => match failure.carried::<HandlerError>() {
                    Some(error) => return Err(error.clone()),
                    None => failure_ran(&failure),
                },
            }
        }
        Backend::Remote(binding) => {
            let timeout = context
                .deadline()
                .saturating_duration_since(std::time::Instant::now());
            let answer = binding.client.call_tool_with(
                &binding.remote_name,
                &arguments,
                CallOptions::new().timeout(timeout),
            );
            match answer {
                // An MCP tool's result is passed on as its server sent it, within the
                // tool's result limit.
                Ok(result) => {
                    let limit = &checked.options.result_limit;
                    let declared = checked.output_schema.is_some();
                    return Ok(limit_mcp_result(limit, result, declared)
                        .into_result()
                        .into_value());
                }
                Err(error) => remote_error(error),
            }
        }
    };
    Ok(registry_result(entry, &checked, ran).into_value())
}

/// Checks structured content against the output schema; a result that breaks it is never
/// sent.
fn checked_output(entry: &ToolEntry, result: CallToolResult) -> CallToolResult {
    let (Some(schema), Some(structured)) =
        (entry.checked_output(), result.structured_content.as_ref())
    else {
        return result;
    };
    if result.is_error {
        return result;
    }
    match schema.validate(structured) {
        Ok(()) => result,
        Err(violations) => {
            let details: Vec<String> = violations
                .iter()
                .take(8)
                .map(|violation| violation.to_string())
                .collect();
            log::warn!(
                target: super::LOG_TARGET,
                "tool {:?} returned structured content that breaks its output schema: {}",
                entry.name(),
                details.join("; ")
            );
            CallToolResult::error(
                "the tool's result does not match its declared output schema; it was not sent \
                 (the details were logged for the operator)",
            )
        }
    }
}

/// A served registry tool's attempt as an MCP result, within its result limit: the
/// harness's one limit ([`crate::harness::ResultLimit`]), which counts the text, the content
/// blocks and `structuredContent` together and answers a result over it as a tool error when
/// the tool declares an output schema (a cut result could not carry the structured content
/// that schema promises).
fn registry_result(
    entry: &ToolEntry,
    tool: &crate::harness::RegisteredTool,
    ran: Ran,
) -> CallToolResult {
    let result = match ran {
        Ran::Result(value) => {
            let text = CallToolResult::from_text(value_text(&value));
            if value.is_object() {
                checked_output(entry, text.with_structured(value))
            } else {
                text
            }
        }
        Ran::NoResult => return CallToolResult::new(Vec::new()),
        // Only an imported tool run with its rounds handed back has one; a served tool
        // asks for input through its context instead.
        Ran::InputRound(_) => {
            log::warn!(target: super::LOG_TARGET, "tool {:?}: an input round it cannot pass on", tool.name);
            return CallToolResult::error(GENERIC_FAILURE);
        }
        Ran::Failed {
            public,
            answer,
            internal,
        } => {
            if let Some(internal) = internal {
                log::warn!(target: super::LOG_TARGET, "tool {:?}: {internal}", tool.name);
            }
            CallToolResult::error(if answer.is_null() {
                public
            } else {
                value_text(&answer)
            })
        }
        Ran::Transport(reason) => {
            log::warn!(target: super::LOG_TARGET, "tool {:?}: {reason}", tool.name);
            return CallToolResult::error(GENERIC_FAILURE);
        }
        Ran::Timeout { .. } => {
            return CallToolResult::error(format!(
                "the tool did not answer within {:?}",
                tool.timeout()
            ))
        }
    };
    let declared = tool.output_schema.is_some();
    limit_mcp_result(&tool.options.result_limit, result, declared).into_result()
}

/// Reads a resource: an exact URI first, then the templates in the order they were added.
/// An unknown URI is -32002 on the handshake protocol and -32602 on 2026-07-28, with the URI
/// in `data` either way.
pub(crate) fn read_resource(
    conn: &Connection,
    context: &RequestContext,
    uri: &str,
) -> Result<Value, HandlerError> {
    let (resource, template) = {
        let catalog = conn.server.catalog.read();
        let resource = catalog.resources.get(uri).cloned();
        let template = match resource {
            Some(_) => None,
            None => catalog.templates.values().find_map(|template| {
                template
                    .matches(uri)
                    .map(|vars| (Arc::clone(template), vars))
            }),
        };
        (resource, template)
    };
    let contents = match (resource, template) {
        (Some(resource), _) => (resource.handler)(context, uri)?,
        (None, Some((template, vars))) => (template.handler)(context, uri, &vars)?,
        (None, None) => {
            let code = match context.era() {
                Era::Stateless => ErrorCode::INVALID_PARAMS,
                Era::Handshake => ErrorCode::RESOURCE_NOT_FOUND,
            };
            return Err(HandlerError::Rpc(
                ErrorObject::new(code, format!("Resource not found: {uri}"))
                    .with_data(json!({"uri": uri})),
            ));
        }
    };
    Ok(json!({"contents": contents}))
}

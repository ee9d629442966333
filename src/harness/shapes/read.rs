//! Reading one strictly parsed call in each shape: the exact field set (required fields and
//! the few optional ones each API documents), the types, and the arguments object.
//!
//! The optional fields are the ones the providers' own SDK types declare on a tool call, so
//! that a call copied straight from an API response, or dumped by the SDK with every declared
//! field (`None` ones as `null`), is accepted: OpenAI's streamed `index`, the Responses item's
//! `id`, `status`, `async`, `caller` and `namespace`, Anthropic's `caller` and
//! `toolset_name`, Gemini's `id`, `args`, `partialArgs` and `willContinue`, and the Gemini
//! part's `thoughtSignature`, `thought` and (as `null`) its other fields. Gemini's names are
//! read in either spelling the API's JSON mapping accepts (`functionCall` or
//! `function_call`, as google-genai's `model_dump()` writes them), never both at once.
//! Anything else is `INVALID`, named. An optional field that would change what runs is read,
//! not ignored: a Responses item that is not `completed` (its arguments may be cut off), a
//! Gemini call that `willContinue` or brings `partialArgs`, or a call that names a
//! `namespace` or `toolset_name` (the registry has none) is refused.
//!
//! A `custom` tool call (Chat Completions `{"type": "custom", "custom": {"name", "input"}}`,
//! Responses `{"type": "custom_tool_call", "call_id", "name", "input"}`) takes free-form
//! text, and every tool the harness offers is a function tool taking a JSON object: in both
//! shapes it is answered `INVALID` with a message that says so (see [`CUSTOM_CALL`]), addressed
//! by its id, and nothing runs.

use serde_json::{Map, Value};

use super::super::parse::{kind_of, quote};
use super::fields::{
    arguments_text, describe, fields, need_caller, need_id, need_object, need_string, need_tag,
    no_group, one_spelling,
};
use super::{CallShape, ShapeError, ToolRequest};

/// Reads a strictly parsed value as a call of `shape`.
pub(crate) fn extract(shape: CallShape, value: &Value) -> Result<ToolRequest, ShapeError> {
    let address = address_of(shape, value);
    let fail = |reason: String| ShapeError {
        reason,
        call_id: address.call_id.clone(),
        name: address.name.clone(),
    };
    let what = shape.describe();
    let Value::Object(object) = value else {
        return Err(fail(format!(
            "{what} must be a JSON object, not {}",
            kind_of(value)
        )));
    };
    let read = match shape {
        CallShape::OpenAi => openai(object, what),
        CallShape::OpenAiResponses => responses(object, what),
        CallShape::Anthropic => anthropic(object, what),
        CallShape::Gemini => gemini(object, what),
        CallShape::Plain => plain(object, what),
    };
    let (name, arguments) = read.map_err(fail)?;
    Ok(ToolRequest {
        call_id: address.call_id.clone(),
        name,
        arguments,
    })
}

/// Where a reply goes: the call's id, and (for Gemini, whose replies are matched by name
/// when the call has no id) its name.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Address {
    pub(crate) call_id: Option<String>,
    pub(crate) name: Option<String>,
}

/// Reads the address of a call from any value, however broken the rest of it is: only to
/// answer it, never to run it.
pub(crate) fn address_of(shape: CallShape, value: &Value) -> Address {
    let text = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    match shape {
        CallShape::OpenAi | CallShape::Anthropic => Address {
            call_id: text(value.get("id")),
            name: None,
        },
        CallShape::OpenAiResponses => Address {
            call_id: text(value.get("call_id")),
            name: None,
        },
        CallShape::Gemini => {
            let call = value
                .get("functionCall")
                .or_else(|| value.get("function_call"));
            Address {
                call_id: text(call.and_then(|call| call.get("id"))),
                name: text(call.and_then(|call| call.get("name"))),
            }
        }
        CallShape::Plain => Address::default(),
    }
}

type Read = Result<(String, Value), String>;

/// What a `custom` tool call is answered, after the tool's name (quoted): the same in both
/// OpenAI shapes.
pub(crate) const CUSTOM_CALL: &str = "was called as a custom tool, with free-form input; \
    every tool here is a function tool that takes a JSON object of arguments, so nothing was \
    run. Call a function tool, with JSON arguments";

/// The answer to a custom tool call, when `object` is one (`tag` is its `type`).
fn custom(object: &Map<String, Value>, tag: &str, name: Option<&Value>) -> Option<String> {
    if object.get("type").and_then(Value::as_str) != Some(tag) {
        return None;
    }
    let name = match name {
        Some(Value::String(name)) => quote(name),
        _ => "the tool".into(),
    };
    Some(format!("{name} {CUSTOM_CALL}"))
}

/// `{"id", "type": "function", "function": {"name", "arguments"}}`, plus the `index` a
/// streamed call keeps after its deltas are put together.
fn openai(object: &Map<String, Value>, what: &str) -> Read {
    let name = object.get("custom").and_then(|custom| custom.get("name"));
    if let Some(reason) = custom(object, "custom", name) {
        return Err(reason);
    }
    fields(object, what, &["id", "type", "function"], &["index"])?;
    need_id(object, "id", what)?;
    need_tag(object, "type", "function", what)?;
    if let Some(index) = object.get("index") {
        if index.as_u64().is_none() {
            return Err(format!(
                "\"index\" in {what} must be a non-negative integer, not {}",
                describe(index)
            ));
        }
    }
    let function = match &object["function"] {
        Value::Object(function) => function,
        other => {
            return Err(format!(
                "\"function\" in {what} must be an object, not {}",
                kind_of(other)
            ))
        }
    };
    let inner = "the \"function\" object of an OpenAI tool call";
    fields(function, inner, &["name", "arguments"], &[])?;
    let name = need_string(function, "name", inner)?;
    let arguments = arguments_text(&function["arguments"], "function.arguments")?;
    Ok((name, arguments))
}

/// `{"type": "function_call", "call_id", "name", "arguments"}` with the optional `id`,
/// `status`, `async`, `caller` and `namespace` of an item returned by the API.
fn responses(object: &Map<String, Value>, what: &str) -> Read {
    if let Some(reason) = custom(object, "custom_tool_call", object.get("name")) {
        return Err(reason);
    }
    fields(
        object,
        what,
        &["type", "call_id", "name", "arguments"],
        &["id", "status", "async", "caller", "namespace"],
    )?;
    need_tag(object, "type", "function_call", what)?;
    need_id(object, "call_id", what)?;
    let name = need_string(object, "name", what)?;
    if let Some(id) = object.get("id") {
        if !id.is_string() && !id.is_null() {
            return Err(format!(
                "\"id\" in {what} must be a string, not {}",
                kind_of(id)
            ));
        }
    }
    match object.get("status") {
        None | Some(Value::Null) => {}
        Some(Value::String(status)) if status == "completed" => {}
        Some(Value::String(status)) => {
            return Err(format!(
                "{what} has the status {}: its arguments may be incomplete, so nothing was \
                 run; only a \"completed\" function call runs",
                quote(status)
            ))
        }
        Some(other) => {
            return Err(format!(
                "\"status\" in {what} must be a string, not {}",
                kind_of(other)
            ))
        }
    }
    // Whether the API may answer the call later: the tool runs the same either way.
    match object.get("async") {
        None | Some(Value::Null | Value::Bool(_)) => {}
        Some(other) => {
            return Err(format!(
                "\"async\" in {what} must be a boolean, not {}",
                kind_of(other)
            ))
        }
    }
    need_caller(object, what)?;
    no_group(object, "namespace", "namespaces", what)?;
    let arguments = arguments_text(&object["arguments"], "arguments")?;
    Ok((name, arguments))
}

/// `{"type": "tool_use", "id", "name", "input"}`, with the optional `caller` and
/// `toolset_name` the API adds.
fn anthropic(object: &Map<String, Value>, what: &str) -> Read {
    fields(
        object,
        what,
        &["type", "id", "name", "input"],
        &["caller", "toolset_name"],
    )?;
    need_tag(object, "type", "tool_use", what)?;
    need_id(object, "id", what)?;
    let name = need_string(object, "name", what)?;
    need_caller(object, what)?;
    no_group(object, "toolset_name", "toolsets", what)?;
    need_object(&object["input"], "input")?;
    Ok((name, object["input"].clone()))
}

/// The fields of a Gemini part other than its call, as the SDK declares them (camelCase and
/// snake_case): a part that carries a call has them `null`, if at all.
const GEMINI_PART_FIELDS: [&str; 36] = [
    "mediaResolution",
    "media_resolution",
    "codeExecutionResult",
    "code_execution_result",
    "executableCode",
    "executable_code",
    "fileData",
    "file_data",
    "functionResponse",
    "function_response",
    "inlineData",
    "inline_data",
    "text",
    "videoMetadata",
    "video_metadata",
    "toolCall",
    "tool_call",
    "toolResponse",
    "tool_response",
    "partMetadata",
    "part_metadata",
    "audioTranscription",
    "audio_transcription",
    "mediaProcessing",
    "media_processing",
    "speechMetadata",
    "speech_metadata",
    "documentMetadata",
    "document_metadata",
    "spreadsheetMetadata",
    "spreadsheet_metadata",
    "audioMetadata",
    "audio_metadata",
    "thoughtSignature",
    "thought_signature",
    "thought",
];

/// A part `{"functionCall": {"name", "args"?, "id"?}, "thoughtSignature"?}`. `args` is
/// optional in the API (a function without parameters is called without it) and reads as
/// `{}` then. The names may be spelled as the SDK's fields are (`function_call`,
/// `thought_signature`, `partial_args`, `will_continue`), one spelling per field.
fn gemini(object: &Map<String, Value>, what: &str) -> Read {
    let key = one_spelling(object, "functionCall", "function_call", what)?;
    // The part's other declared fields are allowed (and checked below) when present; the
    // message names only the ones a call part has.
    let mut optional = vec!["thoughtSignature", "thought"];
    let present: Vec<&str> = GEMINI_PART_FIELDS
        .iter()
        .copied()
        .filter(|field| !optional.contains(field) && object.contains_key(*field))
        .collect();
    optional.extend(present);
    fields(object, what, &[key], &optional)?;
    one_spelling(object, "thoughtSignature", "thought_signature", what)?;
    for (field, value) in object {
        let allowed = match field.as_str() {
            "functionCall" | "function_call" => true,
            "thoughtSignature" | "thought_signature" => value.is_string() || value.is_null(),
            "thought" => value.is_boolean() || value.is_null(),
            _ => value.is_null(),
        };
        if !allowed {
            return Err(format!(
                "{} in {what} must be null beside a function call, not {}",
                quote(field),
                kind_of(value)
            ));
        }
    }
    let call = match &object[key] {
        Value::Object(call) => call,
        other => {
            return Err(format!(
                "{} in {what} must be an object, not {}",
                quote(key),
                kind_of(other)
            ))
        }
    };
    let inner = "the \"functionCall\" object of a Gemini part";
    fields(
        call,
        inner,
        &["name"],
        &[
            "id",
            "args",
            "partialArgs",
            "partial_args",
            "willContinue",
            "will_continue",
        ],
    )?;
    let name = need_string(call, "name", inner)?;
    match call.get("id") {
        None | Some(Value::Null) => {}
        Some(_) => need_id(call, "id", inner)?,
    }
    for field in [
        "partialArgs",
        "partial_args",
        "willContinue",
        "will_continue",
    ] {
        match call.get(field) {
            None | Some(Value::Null | Value::Bool(false)) => {}
            Some(_) => {
                return Err(format!(
                    "{inner} has {}: its arguments are still being streamed, so nothing was \
                     run; put the streamed parts together first (or turn off \
                     streamFunctionCallArguments)",
                    quote(field)
                ))
            }
        }
    }
    let arguments = match call.get("args") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(args) => {
            need_object(args, "functionCall.args")?;
            args.clone()
        }
    };
    Ok((name, arguments))
}

/// `{"tool", "arguments"}`.
fn plain(object: &Map<String, Value>, what: &str) -> Read {
    fields(object, what, &["tool", "arguments"], &[])?;
    let name = need_string(object, "tool", what)?;
    need_object(&object["arguments"], "arguments")?;
    Ok((name, object["arguments"].clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::parse_strict;
    use serde_json::json;

    fn read(shape: CallShape, text: &str) -> Result<ToolRequest, ShapeError> {
        extract(shape, &parse_strict(text).unwrap())
    }

    #[test]
    fn openai_calls_are_read_with_their_arguments_parsed_strictly() {
        let call = read(
            CallShape::OpenAi,
            r#"{"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}}"#,
        )
        .unwrap();
        assert_eq!(call.call_id.as_deref(), Some("call_1"));
        assert_eq!(call.name, "add");
        assert_eq!(call.arguments, json!({"a": 1}));
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"c","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"a\":2}"}}"#,
        )
        .unwrap_err();
        assert!(
            error.reason.contains("duplicate key \"a\""),
            "{}",
            error.reason
        );
        assert_eq!(error.call_id.as_deref(), Some("c"));
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"c","type":"function","function":{"name":"add","arguments":{"a":1}}}"#,
        )
        .unwrap_err();
        assert!(error
            .reason
            .contains("must be a string holding a JSON object, not an object"));
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"c","type":"function","function":{"name":"add","arguments":"[1]"}}"#,
        )
        .unwrap_err();
        assert!(error.reason.contains("not an array"), "{}", error.reason);
    }

    #[test]
    fn a_streamed_openai_call_keeps_its_index() {
        let call = read(
            CallShape::OpenAi,
            r#"{"index":1,"id":"c","type":"function","function":{"name":"a","arguments":"{}"}}"#,
        )
        .unwrap();
        assert_eq!(call.name, "a");
        for bad in ["-1", "1.5", "\"1\"", "null"] {
            let text = format!(
                r#"{{"index":{bad},"id":"c","type":"function","function":{{"name":"a","arguments":"{{}}"}}}}"#
            );
            let error = read(CallShape::OpenAi, &text).unwrap_err();
            assert!(
                error.reason.contains("\"index\"") && error.reason.contains("non-negative"),
                "{bad}: {}",
                error.reason
            );
        }
    }

    #[test]
    fn every_extra_and_missing_field_is_named() {
        let error = read(CallShape::Plain, r#"{"tool":"a","args":{},"x":1}"#).unwrap_err();
        assert_eq!(
            error.reason,
            "a plain tool call has the unexpected field(s) \"args\", \"x\" and lacks the \
             field(s) \"arguments\"; it must have exactly the fields tool, arguments"
        );
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"c","type":"function","function":{"name":"a","arguments":"{}","strict":true}}"#,
        )
        .unwrap_err();
        assert!(error.reason.contains("\"strict\""), "{}", error.reason);
        let error = read(CallShape::OpenAi, r#"{"id":"c","type":"function"}"#).unwrap_err();
        assert!(
            error
                .reason
                .ends_with("exactly the fields id, type, function (and may have index)"),
            "{}",
            error.reason
        );
    }

    #[test]
    fn anthropic_blocks_need_the_tool_use_tag_and_an_object_input() {
        let call = read(
            CallShape::Anthropic,
            r#"{"type":"tool_use","id":"toolu_1","name":"echo","input":{"m":"hi"}}"#,
        )
        .unwrap();
        assert_eq!(
            (call.call_id.as_deref(), call.name.as_str()),
            (Some("toolu_1"), "echo")
        );
        let with_caller = read(
            CallShape::Anthropic,
            r#"{"type":"tool_use","id":"t","name":"echo","input":{},"caller":{"type":"direct"}}"#,
        );
        assert!(with_caller.is_ok(), "{with_caller:?}");
        let error = read(
            CallShape::Anthropic,
            r#"{"type":"tool_use","id":"t","name":"echo","input":{},"caller":"me"}"#,
        )
        .unwrap_err();
        assert!(error.reason.contains("\"caller\""), "{}", error.reason);
        let error = read(
            CallShape::Anthropic,
            r#"{"type":"tool_result","id":"t","name":"echo","input":{}}"#,
        )
        .unwrap_err();
        assert!(
            error.reason.contains("must be \"tool_use\""),
            "{}",
            error.reason
        );
        let error = read(
            CallShape::Anthropic,
            r#"{"type":"tool_use","id":"t","name":"echo","input":"hi"}"#,
        )
        .unwrap_err();
        assert!(
            error.reason.contains("\"input\" must be a JSON object"),
            "{}",
            error.reason
        );
    }

    #[test]
    fn responses_items_are_read_with_their_optional_fields() {
        let call = read(
            CallShape::OpenAiResponses,
            r#"{"type":"function_call","id":"fc_1","call_id":"call_1","name":"add",
                "arguments":"{\"a\":1}","status":"completed","caller":{"type":"direct"},
                "namespace":null}"#,
        )
        .unwrap();
        assert_eq!(call.call_id.as_deref(), Some("call_1"));
        assert_eq!(call.arguments, json!({"a": 1}));
        let minimal = read(
            CallShape::OpenAiResponses,
            r#"{"type":"function_call","call_id":"c","name":"add","arguments":"{}"}"#,
        );
        assert!(minimal.is_ok(), "{minimal:?}");
        for (text, part) in [
            (
                r#"{"type":"function_call","call_id":"c","name":"a","arguments":"{","status":"incomplete"}"#,
                "status \"incomplete\"",
            ),
            (
                r#"{"type":"function_call","call_id":"c","name":"a","arguments":"{}","namespace":"crm"}"#,
                "namespace \"crm\"",
            ),
            (
                r#"{"type":"function_call","call_id":"c","name":"a","arguments":{}}"#,
                "\"arguments\" must be a string holding a JSON object",
            ),
            (
                r#"{"type":"function_call_output","call_id":"c","name":"a","arguments":"{}"}"#,
                "must be \"function_call\"",
            ),
            (
                r#"{"type":"function_call","call_id":"","name":"a","arguments":"{}"}"#,
                "must not be empty",
            ),
        ] {
            let error = read(CallShape::OpenAiResponses, text).unwrap_err();
            assert!(error.reason.contains(part), "{part}: {}", error.reason);
        }
    }

    #[test]
    fn gemini_parts_are_read_with_optional_id_and_args() {
        let call = read(
            CallShape::Gemini,
            r#"{"functionCall":{"id":"fc_1","name":"add","args":{"a":1}},"thoughtSignature":"c2ln"}"#,
        )
        .unwrap();
        assert_eq!(call.call_id.as_deref(), Some("fc_1"));
        assert_eq!(call.arguments, json!({"a": 1}));
        let bare = read(CallShape::Gemini, r#"{"functionCall":{"name":"now"}}"#).unwrap();
        assert_eq!((bare.call_id, bare.arguments), (None, json!({})));
        let error = read(
            CallShape::Gemini,
            r#"{"functionCall":{"name":"add","args":[1]}}"#,
        )
        .unwrap_err();
        assert!(
            error
                .reason
                .contains("\"functionCall.args\" must be a JSON object"),
            "{}",
            error.reason
        );
        // The name addresses the reply even when the call is refused.
        assert_eq!(error.name.as_deref(), Some("add"));
        let error = read(
            CallShape::Gemini,
            r#"{"functionCall":{"name":"add","args":{},"willContinue":true}}"#,
        )
        .unwrap_err();
        assert!(
            error.reason.contains("\"willContinue\""),
            "{}",
            error.reason
        );
        let error = read(CallShape::Gemini, r#"{"name":"add","args":{}}"#).unwrap_err();
        assert!(
            error.reason.contains("\"functionCall\""),
            "{}",
            error.reason
        );
    }

    #[test]
    fn wrong_types_are_named() {
        let error = read(CallShape::Plain, r#"{"tool":5,"arguments":{}}"#).unwrap_err();
        assert!(error
            .reason
            .contains("\"tool\" in a plain tool call must be a string, not a number"));
        let error = read(CallShape::Plain, r#"[1]"#).unwrap_err();
        assert!(error.reason.contains("must be a JSON object, not an array"));
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"","type":"function","function":{"name":"a","arguments":"{}"}}"#,
        )
        .unwrap_err();
        assert!(error.reason.contains("must not be empty"));
    }

    #[test]
    fn custom_tool_calls_are_refused_alike_in_both_openai_shapes() {
        for (shape, text, id) in [
            (
                CallShape::OpenAi,
                r#"{"id":"c1","type":"custom","custom":{"name":"patch","input":"x"}}"#,
                "c1",
            ),
            (
                CallShape::OpenAiResponses,
                r#"{"type":"custom_tool_call","call_id":"c2","name":"patch","input":"x","async":null}"#,
                "c2",
            ),
        ] {
            let error = read(shape, text).unwrap_err();
            assert_eq!(error.reason, format!("\"patch\" {CUSTOM_CALL}"));
            assert_eq!(error.call_id.as_deref(), Some(id));
        }
    }

    #[test]
    fn the_sdks_optional_fields_are_accepted_and_read() {
        let call = read(
            CallShape::OpenAiResponses,
            r#"{"type":"function_call","call_id":"c","name":"a","arguments":"{}","async":true}"#,
        );
        assert!(call.is_ok(), "{call:?}");
        let error = read(
            CallShape::OpenAiResponses,
            r#"{"type":"function_call","call_id":"c","name":"a","arguments":"{}","async":"yes"}"#,
        )
        .unwrap_err();
        assert!(error.reason.contains("\"async\""), "{}", error.reason);
        let dumped = r#"{"type":"tool_use","id":"t","name":"a","input":{},"caller":null,
            "toolset_name":null}"#;
        assert!(read(CallShape::Anthropic, dumped).is_ok());
        let error = read(
            CallShape::Anthropic,
            r#"{"type":"tool_use","id":"t","name":"a","input":{},"toolset_name":"crm"}"#,
        )
        .unwrap_err();
        assert!(
            error.reason.contains("toolset name \"crm\""),
            "{}",
            error.reason
        );
    }

    #[test]
    fn gemini_parts_are_read_in_either_spelling_with_their_null_fields() {
        let snake = r#"{"function_call":{"id":"g","name":"a","args":{"x":1},"partial_args":null,
            "will_continue":null},"thought_signature":"c2ln","text":null,"inline_data":null}"#;
        let call = read(CallShape::Gemini, snake).unwrap();
        assert_eq!(call.call_id.as_deref(), Some("g"));
        assert_eq!(call.arguments, json!({"x": 1}));
        let camel = r#"{"functionCall":{"id":null,"name":"a","args":null,"willContinue":false},
            "thought":true,"fileData":null}"#;
        let call = read(CallShape::Gemini, camel).unwrap();
        assert_eq!((call.call_id, call.arguments), (None, json!({})));
        for (text, part) in [
            (
                r#"{"functionCall":{"name":"a"},"function_call":{"name":"a"}}"#,
                "two spellings",
            ),
            (
                r#"{"functionCall":{"name":"a","willContinue":true}}"#,
                "still being streamed",
            ),
            (
                r#"{"functionCall":{"name":"a","partialArgs":[]}}"#,
                "still being streamed",
            ),
            (
                r#"{"functionCall":{"name":"a"},"text":"hi"}"#,
                "must be null beside a function call",
            ),
        ] {
            let error = read(CallShape::Gemini, text).unwrap_err();
            assert!(error.reason.contains(part), "{part}: {}", error.reason);
            assert_eq!(error.name.as_deref(), Some("a"));
        }
    }
}

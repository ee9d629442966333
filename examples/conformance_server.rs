//! The MCP conformance suite's server fixtures, served by `toolwire::server` over Streamable
//! HTTP on 127.0.0.1: the tools, resources, prompts and completion the suite's server
//! scenarios call, at one URL for both protocol eras (the handshake era with sessions, and
//! 2026-07-28 stateless).
//!
//! ```text
//! cargo run --example conformance_server -- --port 3001
//! node conformance/dist/index.js server --url http://127.0.0.1:3001/mcp --requirements 2025-11-25
//! ```
//!
//! It prints `listening on URL` to stdout once it accepts connections, and serves until it is
//! killed (or its stdin reaches end of file with `--until-eof`). Several instances run behind
//! one load balancer with `--state-key-file FILE` (the same file for all: a 2026-07-28 input
//! round's retry verifies on any of them) and `--instance-id NAME` (each its own: the prefix
//! of its session ids), as docs/server.md's "Running several instances" shows.
//!
//! Several instances share their tasks and events through one store: `--state
//! redis://HOST:PORT/DB` (or `redis://:PASSWORD@HOST:PORT/DB`; feature `redis`), with
//! `--task-lease-ms N` for the lease of a task's instance (default 10,000).

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::harness::{LocalTool, ToolContext, ToolOptions, ToolTimeout};
use toolwire::server::{
    content, CallToolResult, HandlerError, HttpServer, HttpServerConfig, InputRequired, LogLevel,
    PromptResult, RequestContext, Server, ServerConfig, ServerPrompt, ServerResource,
    ServerResourceTemplate, SkillSet, StateKeys, TaskSupport,
};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A 44-byte WAV header (8 kHz mono 16-bit, no samples).
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn main() {
    let mut port = 3001u16;
    let mut until_eof = false;
    let mut keys = None;
    let mut http_config = HttpServerConfig::new();
    // Shared state (issue 25): the store several instances share, and the task lease.
    let mut state = String::from("memory");
    let mut lease: Option<Duration> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--state" => state = args.next().unwrap_or_else(|| usage()),
            "--task-lease-ms" => {
                lease = Some(Duration::from_millis(
                    args.next()
                        .and_then(|ms| ms.parse().ok())
                        .unwrap_or_else(|| usage()),
                ))
            }
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--until-eof" => until_eof = true,
            "--state-key-file" => {
                let file = args.next().unwrap_or_else(|| usage());
                // The error names the file and line, never a key.
                keys = Some(StateKeys::from_file(file.as_ref()).unwrap_or_else(|error| {
                    eprintln!("conformance_server: {error}");
                    std::process::exit(2);
                }));
            }
            "--instance-id" => {
                http_config = http_config.instance_id(args.next().unwrap_or_else(|| usage()));
            }
            _ => usage(),
        }
    }
    if let Err(error) = http_config.check() {
        eprintln!("conformance_server: {error}");
        std::process::exit(2);
    }
    let server = toolwire::server::open_state(&state)
        .and_then(|store| {
            let mut config = base_config().state_store(store);
            if let Some(keys) = keys {
                config = config.state_keys(keys);
            }
            build(match lease {
                Some(lease) => config.task_lease(lease),
                None => config,
            })
        })
        .unwrap_or_else(|error| {
            eprintln!("conformance_server: {error}");
            std::process::exit(1);
        });
    let http = HttpServer::bind(&server, http_config.port(port)).unwrap_or_else(|error| {
        eprintln!("conformance_server: {error}");
        std::process::exit(1);
    });
    println!("listening on {}", http.url());
    if until_eof {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        let _ = http.close();
        return;
    }
    http.wait();
}

fn usage() -> ! {
    eprintln!(
        "usage: conformance_server [--port N] [--until-eof] [--state-key-file FILE] \
         [--instance-id NAME] [--state memory|redis://[:PASSWORD@]HOST:PORT/DB] \
         [--task-lease-ms N]"
    );
    std::process::exit(2);
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn text_of(value: &Value) -> String {
    value.to_string()
}

fn base_config() -> ServerConfig {
    ServerConfig::new("toolwire-conformance-server", env!("CARGO_PKG_VERSION"))
        .instructions("The MCP conformance suite's server fixtures, served by toolwire.")
}

fn build(config: ServerConfig) -> toolwire::Result<Server> {
    let server = Server::new(config)?;
    add_content_tools(&server)?;
    add_client_tools(&server)?;
    add_input_round_tools(&server)?;
    add_task_tools(&server)?;
    add_resources(&server)?;
    add_prompts(&server)?;
    add_skills(&server)?;
    server.set_completion(|_, request| {
        let offered = ["test", "testing", "test-value", "other"];
        Ok(offered
            .iter()
            .filter(|value| value.starts_with(&request.value))
            .map(|value| value.to_string())
            .collect())
    });
    Ok(server)
}

/// The Skills extension's fixtures (SEP-2640): a skill with a subdirectory (so a directory
/// read of its root finds an `inode/directory` child) and one under a path prefix.
fn add_skills(server: &Server) -> toolwire::Result<()> {
    let mut skills = SkillSet::new();
    skills.add_skill(
        "pdf-processing",
        [
            (
                "SKILL.md".to_owned(),
                b"---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n\
                  license: Apache-2.0\nmetadata:\n  author: toolwire\n---\n# PDF processing\n\n\
                  Read references/FORMS.md before filling a form.\n"
                    .to_vec(),
            ),
            (
                "references/FORMS.md".to_owned(),
                b"# Forms\n\nFill each field, then flatten.\n".to_vec(),
            ),
        ],
    )?;
    skills.add_skill(
        "acme/billing/refunds",
        [(
            "SKILL.md".to_owned(),
            b"---\nname: refunds\ndescription: Issue a refund for a paid invoice\n---\nCheck the invoice first.\n"
                .to_vec(),
        )],
    )?;
    skills.serve(server)
}

fn tool(
    name: &str,
    description: &str,
    handler: impl Fn(&RequestContext, &Value) -> Result<CallToolResult, HandlerError>
        + Send
        + Sync
        + 'static,
) -> LocalTool {
    // The one tool type; its handler reaches the request's context (input responses, the
    // request state) and answers with the server's own errors.
    LocalTool::with_context(name, description, no_args(), move |context, args| {
        let context = RequestContext::of(context).expect("served by toolwire::server");
        handler(context, args).map_err(HandlerError::into_failure)
    })
}

fn add_content_tools(server: &Server) -> toolwire::Result<()> {
    server.add_tool(tool(
        "test_simple_text",
        "Returns a simple text.",
        |_, _| {
            Ok(CallToolResult::from_text(
                "This is a simple text response for testing.",
            ))
        },
    ))?;
    server.add_tool(tool("test_image_content", "Returns an image.", |_, _| {
        Ok(CallToolResult::new(vec![content::image(PNG, "image/png")]))
    }))?;
    server.add_tool(tool("test_audio_content", "Returns audio.", |_, _| {
        Ok(CallToolResult::new(vec![content::audio(WAV, "audio/wav")]))
    }))?;
    server.add_tool(tool(
        "test_embedded_resource",
        "Returns an embedded resource.",
        |_, _| {
            Ok(CallToolResult::new(vec![content::resource(
                content::text_contents(
                    "test://embedded-resource",
                    Some("text/plain"),
                    "This is an embedded resource content.",
                ),
            )]))
        },
    ))?;
    server.add_tool(tool(
        "test_multiple_content_types",
        "Returns text, an image and a resource.",
        |_, _| {
            Ok(CallToolResult::new(vec![
                content::text("Multiple content types test:"),
                content::image(PNG, "image/png"),
                content::resource(content::text_contents(
                    "test://mixed-content-resource",
                    Some("application/json"),
                    r#"{"test":"data","value":123}"#,
                )),
            ]))
        },
    ))?;
    server.add_tool(tool("test_error_handling", "Always fails.", |_, _| {
        Ok(CallToolResult::error(
            "This tool intentionally returns an error for testing",
        ))
    }))?;
    server.add_tool(tool(
        "test_tool_with_logging",
        "Logs three messages.",
        |context, _| {
            for (index, message) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .into_iter()
            .enumerate()
            {
                if index > 0 {
                    std::thread::sleep(Duration::from_millis(50));
                }
                context.log(LogLevel::Info, None, json!(message));
            }
            Ok(CallToolResult::from_text(
                "Tool with logging executed successfully",
            ))
        },
    ))?;
    server.add_tool(tool(
        "test_logging_tool",
        "Logs when the client asks for a level.",
        |context, _| {
            context.info("test_logging_tool ran");
            Ok(CallToolResult::from_text("Logging tool executed"))
        },
    ))?;
    server.add_tool(tool(
        "test_tool_with_progress",
        "Reports progress 0, 50, 100.",
        |context, _| {
            for (index, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if index > 0 {
                    std::thread::sleep(Duration::from_millis(50));
                }
                if let Some(progress) = context.progress() {
                    progress.report(step, Some(100.0), None);
                }
            }
            Ok(CallToolResult::from_text(
                "Progress tool executed successfully",
            ))
        },
    ))?;
    server.add_tool(LocalTool::with_context(
        "json_schema_2020_12_tool",
        "Takes arguments described with JSON Schema 2020-12.",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        }),
        |_, args| Ok(CallToolResult::from_text(format!("Received: {}", text_of(args)))),
    ))?;
    // SEP-2243: a parameter mirrored into the `Mcp-Param-Region` header, which the server
    // checks against the body before the tool runs.
    server.add_tool(LocalTool::with_context(
        "test_custom_header",
        "Echoes a region that is also sent as the Mcp-Param-Region header.",
        json!({"type": "object", "required": ["region"], "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}),
        |_, args| {
            Ok(CallToolResult::from_text(format!(
                "region {}",
                args["region"].as_str().unwrap_or_default()
            )))
        },
    ))?;
    server.add_tool(LocalTool::with_context(
        "greet",
        "Greets someone by name.",
        json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}),
        |_, args| {
            Ok(CallToolResult::from_text(format!(
                "Hello, {}!",
                args["name"].as_str().unwrap_or("world")
            )))
        },
    ))?;
    let changer = server.clone();
    server.add_tool(tool(
        "test_trigger_tool_change",
        "Changes the tool list.",
        move |_, _| {
            let name = "test_dynamic_tool";
            if !changer.remove_tool(name) {
                changer
                    .add_tool(tool(name, "Appears and disappears.", |_, _| {
                        Ok(CallToolResult::from_text("dynamic"))
                    }))
                    .map_err(|error| HandlerError::internal(error.to_string()))?;
            }
            Ok(CallToolResult::from_text("Tool list changed"))
        },
    ))?;
    let changer = server.clone();
    server.add_tool(tool(
        "test_trigger_prompt_change",
        "Changes the prompt list.",
        move |_, _| {
            let name = "test_dynamic_prompt";
            if !changer.remove_prompt(name) {
                changer
                    .add_prompt(ServerPrompt::new(
                        name,
                        "Appears and disappears.",
                        |_, _| Ok(PromptResult::new().user_text("dynamic")),
                    ))
                    .map_err(|error| HandlerError::internal(error.to_string()))?;
            }
            Ok(CallToolResult::from_text("Prompt list changed"))
        },
    ))?;
    Ok(())
}

/// A text summing up an elicitation's answer.
fn elicited(answer: &Value) -> String {
    format!(
        "Elicitation completed: action={}, content={}",
        answer["action"].as_str().unwrap_or("unknown"),
        answer
            .get("content")
            .map(text_of)
            .unwrap_or_else(|| "{}".into())
    )
}

fn add_client_tools(server: &Server) -> toolwire::Result<()> {
    server.add_tool(LocalTool::with_context(
        "test_sampling",
        "Asks the client's model.",
        json!({"type": "object", "properties": {"prompt": {"type": "string"}}}),
        |context, args| {
            let prompt = args["prompt"].as_str().unwrap_or("Hello");
            let answer = context.request_input(
                "completion",
                "sampling/createMessage",
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                       "maxTokens": 100}),
            )?;
            let text = answer["content"]["text"].as_str().unwrap_or("");
            Ok(CallToolResult::from_text(format!("LLM response: {text}")))
        },
    ))?;
    server.add_tool(LocalTool::with_context(
        "test_elicitation",
        "Asks the user.",
        json!({"type": "object", "properties": {"message": {"type": "string"}}}),
        |context, args| {
            let message = args["message"]
                .as_str()
                .unwrap_or("Please provide your details");
            let answer = context.request_input(
                "details",
                "elicitation/create",
                json!({"message": message, "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "Your username"},
                        "email": {"type": "string", "description": "Your email address"}
                    },
                    "required": ["username", "email"]
                }}),
            )?;
            Ok(CallToolResult::from_text(format!(
                "User response: action={}, content={}",
                answer["action"].as_str().unwrap_or("unknown"),
                answer.get("content").map(text_of).unwrap_or_default()
            )))
        },
    ))?;
    server.add_tool(tool("test_elicitation_sep1034_defaults", "Asks with defaults.", |context, _| {
        let answer = context.elicit(
            "defaults",
            json!({"message": "Please review your details", "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}
                }
            }}),
        )?;
        Ok(CallToolResult::from_text(elicited(&answer)))
    }))?;
    server.add_tool(tool("test_elicitation_sep1330_enums", "Asks with five kinds of enum.", |context, _| {
        let answer = context.elicit(
            "enums",
            json!({"message": "Please choose", "requestedSchema": {
                "type": "object",
                "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                   "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array",
                                      "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}
                }
            }}),
        )?;
        Ok(CallToolResult::from_text(elicited(&answer)))
    }))?;
    server.add_tool(
        tool(
            "test_missing_capability",
            "Needs the client's sampling.",
            |context, _| {
                let answer = context.sample(
                "completion",
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                       "maxTokens": 10}),
            )?;
                Ok(CallToolResult::from_text(text_of(&answer)))
            },
        )
        .requires("sampling"),
    )?;
    server.add_tool(tool(
        "test_streaming_elicitation",
        "Asks the user, in the way of its protocol.",
        |context, _| {
            let answer = context.elicit(
                "confirm",
                json!({"message": "Continue?", "requestedSchema": {
                "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}),
            )?;
            Ok(CallToolResult::from_text(elicited(&answer)))
        },
    ))?;
    Ok(())
}

fn name_schema(message: &str, property: &str) -> Value {
    json!({"message": message, "requestedSchema": {
        "type": "object", "properties": {property: {"type": "string"}}, "required": [property]}})
}

/// An elicitation answer's field, when the answer is an accepted one with that string.
fn accepted_field(answer: &Value, field: &str) -> Option<String> {
    if answer.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    answer
        .get("content")?
        .get(field)?
        .as_str()
        .map(str::to_owned)
}

/// Sleeps `seconds` in steps, looking at the cancel flag between them; true when cancelled.
fn sleep_unless_cancelled(context: &dyn ToolContext, seconds: f64) -> bool {
    let until = std::time::Instant::now() + Duration::from_secs_f64(seconds.clamp(0.0, 600.0));
    while std::time::Instant::now() < until {
        if context.is_cancelled() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    context.is_cancelled()
}

/// The tasks extension's fixtures (SEP-2663 scenarios `tasks-*`).
fn add_task_tools(server: &Server) -> toolwire::Result<()> {
    // `greet`, the sync-only one, is served with the content tools.
    server.add_tool(
        LocalTool::with_context(
            "slow_compute",
            "Sleeps some seconds, then answers with its label; a task when the client can take one.",
            json!({"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0},
                   "label": {"type": "string"}}}),
            |context, args| {
                let seconds = args["seconds"].as_f64().unwrap_or(1.0);
                if sleep_unless_cancelled(context, seconds) {
                    // The task is cancelled already: this answer is dropped.
                    return Ok(CallToolResult::error("cancelled"));
                }
                let label = args["label"].as_str().unwrap_or("compute");
                Ok(CallToolResult::from_text(format!("{label}: done after {seconds} s")))
            },
        )
        .task(TaskSupport::Optional)
        .options(ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_secs(180)))),
    )?;
    server.add_tool(
        tool(
            "failing_job",
            "Fails as a tool after about a second (only as a task).",
            |context, _| {
                sleep_unless_cancelled(context, 1.0);
                Ok(CallToolResult::error("the job failed, as it always does"))
            },
        )
        .task(TaskSupport::Required),
    )?;
    server.add_tool(
        tool(
            "protocol_error_job",
            "Fails with a protocol error (a task when it can be).",
            |_, _| {
                Err(HandlerError::internal(
                    "the job broke down, as it always does",
                ))
            },
        )
        .task(TaskSupport::Optional),
    )?;
    server.add_tool(
        LocalTool::with_context(
            "confirm_delete",
            "Asks the user to confirm, then deletes nothing.",
            json!({"type": "object", "properties": {"filename": {"type": "string"}},
                   "required": ["filename"]}),
            |context, args| {
                let filename = args["filename"].as_str().unwrap_or("");
                let answer = context.request_input(
                    "confirm",
                    "elicitation/create",
                    json!({"message": format!("Delete {filename}?"), "requestedSchema": {
                        "type": "object", "properties": {"confirm": {"type": "boolean"}},
                        "required": ["confirm"]}}),
                )?;
                let confirmed =
                    answer["action"] == "accept" && answer["content"]["confirm"] == true;
                Ok(CallToolResult::from_text(if confirmed {
                    format!("{filename} deleted (not really)")
                } else {
                    format!("{filename} kept")
                }))
            },
        )
        .task(TaskSupport::Optional),
    )?;
    server.add_tool(
        tool(
            "multi_input",
            "Asks two questions at once.",
            |context, _| {
                let (Some(first), Some(second)) = (
                    context.input_response("first"),
                    context.input_response("second"),
                ) else {
                    return Err(InputRequired::new()
                        .elicit("first", name_schema("The first name?", "name"))
                        .elicit("second", name_schema("The second name?", "name"))
                        .into());
                };
                Ok(CallToolResult::from_text(format!(
                    "first: {}, second: {}",
                    accepted_field(first, "name").unwrap_or_default(),
                    accepted_field(second, "name").unwrap_or_default()
                )))
            },
        )
        .task(TaskSupport::Optional),
    )?;
    server.add_tool(
        tool(
            "test_tool_with_task",
            "Asks for a name in an input round, then greets in a task.",
            |_, args| {
                Ok(CallToolResult::from_text(format!(
                    "Hello from the task, {}!",
                    args["user_name"].as_str().unwrap_or("")
                )))
            },
        )
        .task(TaskSupport::Required)
        .before_task(|context, _| {
            let answer = context.request_input(
                "user_name",
                "elicitation/create",
                name_schema("What is your name?", "name"),
            )?;
            match accepted_field(&answer, "name") {
                Some(name) => Ok(json!({"user_name": name})),
                None => Err(InputRequired::new()
                    .elicit("user_name", name_schema("What is your name?", "name"))
                    .into()),
            }
        }),
    )?;
    Ok(())
}

fn add_input_round_tools(server: &Server) -> toolwire::Result<()> {
    server.add_tool(tool(
        "test_input_required_result_elicitation",
        "Asks for a name in an input round.",
        |context, _| {
            let ask = || {
                InputRequired::new().elicit("user_name", name_schema("What is your name?", "name"))
            };
            match context.input_response("user_name") {
                None => Err(ask().into()),
                Some(answer) => match accepted_field(answer, "name") {
                    Some(name) => Ok(CallToolResult::from_text(format!("Hello, {name}!"))),
                    // An answer that is not an accepted name: ask again.
                    None if answer.is_object() => Err(ask().into()),
                    None => Err(HandlerError::invalid_params(
                        "inputResponses.user_name must be an elicitation result",
                    )),
                },
            }
        },
    ))?;
    server.add_tool(tool(
        "test_input_required_result_sampling",
        "Asks the model in an input round.",
        |context, _| {
            let answer = context.sample(
                "capital_question",
                json!({"messages": [{"role": "user", "content": {"type": "text",
                                 "text": "What is the capital of France?"}}], "maxTokens": 50}),
            )?;
            Ok(CallToolResult::from_text(format!(
                "The model answered: {}",
                answer["content"]["text"].as_str().unwrap_or("")
            )))
        },
    ))?;
    server.add_tool(tool(
        "test_input_required_result_list_roots",
        "Asks for roots in an input round.",
        |context, _| {
            let answer = context.list_roots("client_roots")?;
            let count = answer["roots"].as_array().map_or(0, Vec::len);
            Ok(CallToolResult::from_text(format!(
                "The client has {count} root(s)"
            )))
        },
    ))?;
    server.add_tool(tool("test_input_required_result_request_state", "Round-trips its state.", |context, _| {
        match (context.request_state(), context.input_response("confirm")) {
            (Some(state), Some(_)) if state["step"] == 1 => {
                Ok(CallToolResult::from_text("state-ok: the request state came back intact"))
            }
            _ => Err(InputRequired::new()
                .elicit("confirm", json!({"message": "Please confirm", "requestedSchema": {
                    "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}))
                .state(json!({"step": 1}))
                .into()),
        }
    }))?;
    server.add_tool(tool(
        "test_input_required_result_multiple_inputs",
        "Asks for three inputs at once.",
        |context, _| {
            let all = ["user_name", "greeting", "client_roots"];
            let answered = all.iter().all(|key| context.input_response(key).is_some());
            if answered && context.request_state().is_some() {
                return Ok(CallToolResult::from_text("All three inputs received"));
            }
            Err(InputRequired::new()
                .elicit("user_name", name_schema("What is your name?", "name"))
                .sample(
                    "greeting",
                    json!({"messages": [{"role": "user", "content": {"type": "text",
                    "text": "Generate a greeting"}}], "maxTokens": 50}),
                )
                .list_roots("client_roots")
                .state(json!({"asked": all}))
                .into())
        },
    ))?;
    server.add_tool(tool(
        "test_input_required_result_multi_round",
        "Asks in two rounds.",
        |context, _| {
            let round = context
                .request_state()
                .and_then(|state| state["round"].as_u64());
            match round {
                Some(1) if context.input_response("step1").is_some() => {
                    let name = context
                        .input_response("step1")
                        .and_then(|answer| accepted_field(answer, "name"))
                        .unwrap_or_default();
                    Err(InputRequired::new()
                        .elicit(
                            "step2",
                            name_schema("Step 2: What is your favorite color?", "color"),
                        )
                        .state(json!({"round": 2, "name": name}))
                        .into())
                }
                Some(2) if context.input_response("step2").is_some() => {
                    let name = context
                        .request_state()
                        .and_then(|s| s["name"].as_str())
                        .unwrap_or("");
                    let color = context
                        .input_response("step2")
                        .and_then(|answer| accepted_field(answer, "color"))
                        .unwrap_or_default();
                    Ok(CallToolResult::from_text(format!("{name} likes {color}")))
                }
                _ => Err(InputRequired::new()
                    .elicit("step1", name_schema("Step 1: What is your name?", "name"))
                    .state(json!({"round": 1}))
                    .into()),
            }
        },
    ))?;
    server.add_tool(tool("test_input_required_result_tampered_state", "Signs its state.", |context, _| {
        match context.request_state() {
            Some(_) => Ok(CallToolResult::from_text("the state is intact")),
            None => Err(InputRequired::new()
                .elicit("confirm", json!({"message": "Please confirm", "requestedSchema": {
                    "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}))
                .state(json!({"issued": true}))
                .into()),
        }
    }))?;
    server.add_tool(tool(
        "test_input_required_result_capabilities",
        "Asks only for what the client offers.",
        |context, _| {
            if context
                .input_responses()
                .is_some_and(|answers| !answers.is_empty())
            {
                return Ok(CallToolResult::from_text("answered"));
            }
            let input = if context.client_supports("elicitation") {
                InputRequired::new().elicit("user_name", name_schema("What is your name?", "name"))
            } else if context.client_supports("sampling") {
                InputRequired::new().sample(
                    "completion",
                    json!({"messages": [{"role": "user",
                "content": {"type": "text", "text": "Say hello"}}], "maxTokens": 20}),
                )
            } else if context.client_supports("roots") {
                InputRequired::new().list_roots("client_roots")
            } else {
                return Ok(CallToolResult::from_text("the client offers no input"));
            };
            Err(input.into())
        },
    ))?;
    Ok(())
}

fn add_resources(server: &Server) -> toolwire::Result<()> {
    server.add_resource(
        ServerResource::new("test://static-text", "Static text", |_, uri| {
            Ok(vec![content::text_contents(
                uri,
                Some("text/plain"),
                "This is the content of the static text resource.",
            )])
        })
        .mime_type("text/plain")
        .description("A static text resource"),
    )?;
    server.add_resource(
        ServerResource::new("test://static-binary", "Static binary", |_, uri| {
            Ok(vec![content::blob_contents(uri, Some("image/png"), PNG)])
        })
        .mime_type("image/png")
        .description("A static binary resource"),
    )?;
    server.add_resource(
        ServerResource::new("test://watched-resource", "Watched", |_, uri| {
            Ok(vec![content::text_contents(
                uri,
                Some("text/plain"),
                "Watched resource content",
            )])
        })
        .mime_type("text/plain")
        .description("A resource to subscribe to"),
    )?;
    server.add_resource_template(
        ServerResourceTemplate::new(
            "test://template/{id}/data",
            "Template",
            |_, uri, vars: &BTreeMap<String, String>| {
                let id = vars.get("id").cloned().unwrap_or_default();
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Ok(vec![content::text_contents(
                    uri,
                    Some("application/json"),
                    data.to_string(),
                )])
            },
        )
        .mime_type("application/json")
        .description("A resource template"),
    )?;
    Ok(())
}

fn add_prompts(server: &Server) -> toolwire::Result<()> {
    server.add_prompt(ServerPrompt::new(
        "test_simple_prompt",
        "A simple prompt.",
        |_, _| Ok(PromptResult::new().user_text("This is a simple prompt for testing.")),
    ))?;
    server.add_prompt(
        ServerPrompt::new(
            "test_prompt_with_arguments",
            "A prompt with arguments.",
            |_, args| {
                let arg = |key: &str| {
                    args.get(key)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                Ok(PromptResult::new().user_text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                )))
            },
        )
        .argument("arg1", "First test argument", true)
        .argument("arg2", "Second test argument", true),
    )?;
    server.add_prompt(
        ServerPrompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt with an embedded resource.",
            |_, args| {
                let uri = args
                    .get("resourceUri")
                    .and_then(Value::as_str)
                    .unwrap_or("test://example-resource");
                Ok(PromptResult::new()
                    .message(
                        "user",
                        content::resource(content::text_contents(
                            uri,
                            Some("text/plain"),
                            "Embedded resource content for testing.",
                        )),
                    )
                    .user_text("Please process the embedded resource above."))
            },
        )
        .argument("resourceUri", "URI of the resource to embed", true),
    )?;
    server.add_prompt(ServerPrompt::new(
        "test_prompt_with_image",
        "A prompt with an image.",
        |_, _| {
            Ok(PromptResult::new()
                .message("user", content::image(PNG, "image/png"))
                .user_text("Please analyze the image above."))
        },
    ))?;
    server.add_prompt(ServerPrompt::new(
        "test_input_required_result_prompt",
        "A prompt that asks for context first.",
        |context, _| {
            let answer = context.elicit(
                "user_context",
                name_schema("What context should the prompt use?", "context"),
            )?;
            let given = accepted_field(&answer, "context").unwrap_or_else(|| "none".into());
            Ok(PromptResult::new().user_text(format!("Use this context: {given}")))
        },
    ))?;
    Ok(())
}

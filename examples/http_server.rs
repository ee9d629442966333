//! A `toolwire::harness::ToolRegistry` served as an MCP server, over Streamable HTTP (by
//! default) or stdio, with two tools written with the request's context
//! (`LocalTool::with_context`): progress, cancellation, and a sampling request back to the
//! client.
//!
//! ```text
//! cargo run --example http_server -- [--port N] [--stdio] [--workers N]
//!                                      [--auth-tokens FILE --auth-resource URL]
//!                                      [--tls-cert FILE --tls-key FILE]
//!                                      [--state-key-file FILE] [--instance-id NAME]
//! ```
//!
//! `--state-key-file` and `--instance-id` run it as one of several instances behind a load
//! balancer (docs/server.md, "Running several instances"): the shared `requestState` keys
//! (each line the standard base64 of at least 32 random bytes; the first signs, every one
//! verifies) and the prefix of this instance's session ids.
//!
//! With `--auth-tokens` every HTTP request needs a bearer token of the file
//! (`{"tokens": [{"sha256": "<hex of the token>", "subject": "…", "scopes": ["…"]}]}`): 401
//! with the protected resource metadata's address otherwise, served at the path the resource
//! URI gives; a handler sees who called in `RequestContext::caller`. (JWT access tokens from
//! an authorization server: `Authorization::jwt`, with the `oauth` feature.)
//!
//! With `--tls-cert` and `--tls-key` (PEM; the `rustls` feature) it serves HTTPS itself
//! (`ServerTls::from_pem_files`, `HttpServerConfig::tls`), as a protected server reached from
//! other machines should: bearer tokens in clear are taken from loopback peers only.
//!
//! Over HTTP it listens on 127.0.0.1 (port 0: the system picks), prints `listening on URL`,
//! and serves until stdin reaches end of file or the process is killed. Both protocol eras
//! are served at the URL.
//!
//! Tools from the registry (checked by the registry: the schema with its repair message, the
//! integer bound, the result limit): `echo {message}`, `add {a, b}` (with an output schema),
//! `wait {ms}` (honours its cancel flag). Tools with the context: `count {steps, ms}` (reports
//! progress when asked, stops when cancelled) and `summarize {text}` (asks the client's model
//! with `sampling/createMessage`, or in a 2026-07-28 input round). A resource `memo://readme`
//! and a prompt `greeting {name}`.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::harness::{
    CancelFlag, LocalTool, ToolFailure, ToolOptions, ToolRegistry, ToolTimeout,
};
use toolwire::server::{
    content, Authorization, CallToolResult, HttpServer, HttpServerConfig, PromptResult, Server,
    ServerConfig, ServerPrompt, ServerResource, StateKeys,
};

fn registry() -> toolwire::Result<ToolRegistry> {
    let mut registry = ToolRegistry::new();
    registry.register(LocalTool::new(
        "echo",
        "Returns the message it is given.",
        json!({"type": "object", "required": ["message"], "additionalProperties": false,
               "properties": {"message": {"type": "string"}}}),
        |args, _| Ok(Some(args["message"].clone())),
    ))?;
    registry.register(
        LocalTool::new(
            "add",
            "Adds two numbers.",
            json!({"type": "object", "required": ["a", "b"],
                   "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
            |args, _| {
                let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                Ok(Some(json!({"sum": sum})))
            },
        )
        .output_schema(json!({"type": "object", "required": ["sum"],
                              "properties": {"sum": {"type": "number"}}}))
        .options(ToolOptions::new().idempotent(true)),
    )?;
    registry.register(
        LocalTool::new(
            "wait",
            "Waits ms milliseconds, or until the call is cancelled.",
            json!({"type": "object", "required": ["ms"],
                   "properties": {"ms": {"type": "integer", "minimum": 0, "maximum": 600000}}}),
            |args, cancel: &CancelFlag| {
                let until =
                    Instant::now() + Duration::from_millis(args["ms"].as_u64().unwrap_or(0));
                while Instant::now() < until {
                    if cancel.is_cancelled() {
                        eprintln!("http_server: wait cancelled");
                        return Err(ToolFailure::safe("cancelled"));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(Some(json!("waited")))
            },
        )
        .options(ToolOptions::new().timeout(ToolTimeout::Long)),
    )?;
    Ok(registry)
}

fn server(workers: usize, keys: Option<StateKeys>) -> toolwire::Result<Server> {
    let mut config = ServerConfig::new("toolwire-http-server", "0.1.0").workers(workers);
    if let Some(keys) = keys {
        config = config.state_keys(keys);
    }
    let server = Server::new(config)?;
    server.add_registry(&registry()?)?;
    // Written once with its request's context: served here, and a local harness would run it
    // as it is.
    server.add_tool(
        LocalTool::with_context(
            "count",
            "Counts steps, one every ms milliseconds, reporting progress; stops when cancelled.",
            json!({"type": "object", "required": ["steps"],
                   "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 10000},
                                  "ms": {"type": "integer", "minimum": 0, "maximum": 60000}}}),
            |context, args| {
                let steps = args["steps"].as_u64().unwrap_or(1);
                let pause = Duration::from_millis(args["ms"].as_u64().unwrap_or(100));
                for step in 1..=steps {
                    std::thread::sleep(pause);
                    if context.is_cancelled() {
                        eprintln!("http_server: count cancelled at step {step}");
                        return Ok(CallToolResult::error(format!("cancelled at step {step}")));
                    }
                    // Sent only when the client asked for progress.
                    context.report_progress(
                        step as f64,
                        Some(steps as f64),
                        Some(&format!("step {step}")),
                    );
                }
                Ok(CallToolResult::from_text(format!("counted {steps}")))
            },
        )
        .options(ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_secs(600)))),
    )?;
    server.add_resource(
        ServerResource::new("memo://readme", "README", |_, uri| {
            Ok(vec![content::text_contents(
                uri,
                Some("text/plain"),
                "Served by toolwire.",
            )])
        })
        .mime_type("text/plain")
        .description("What this server is"),
    )?;
    server.add_prompt(
        ServerPrompt::new("greeting", "Greets someone.", |_, args| {
            let name = args.get("name").and_then(|n| n.as_str()).unwrap_or("you");
            Ok(PromptResult::new().user_text(format!("Say hello to {name}.")))
        })
        .argument("name", "Who to greet", true),
    )?;
    server.add_tool(LocalTool::with_context(
        "summarize",
        "Asks the client's model to summarize a text.",
        json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}),
        |context, args| {
            let text = args["text"].as_str().unwrap_or_default();
            let answer = context.request_input(
                "summary",
                "sampling/createMessage",
                json!({"messages": [{"role": "user", "content": {"type": "text",
                       "text": format!("Summarize: {text}")}}], "maxTokens": 100}),
            )?;
            let summary = answer["content"]["text"].as_str().unwrap_or_default();
            Ok(CallToolResult::from_text(format!("summary: {summary}")))
        },
    ))?;
    Ok(server)
}

fn main() {
    let mut port = 0u16;
    let mut stdio = false;
    let mut workers = 16usize;
    let mut tokens: Option<String> = None;
    let mut resource: Option<String> = None;
    let mut tls: (Option<String>, Option<String>) = (None, None);
    let mut keys = None;
    let mut instance = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--workers" => {
                workers = args
                    .next()
                    .and_then(|w| w.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--stdio" => stdio = true,
            "--auth-tokens" => tokens = Some(args.next().unwrap_or_else(|| usage())),
            "--auth-resource" => resource = Some(args.next().unwrap_or_else(|| usage())),
            "--tls-cert" => tls.0 = Some(args.next().unwrap_or_else(|| usage())),
            "--tls-key" => tls.1 = Some(args.next().unwrap_or_else(|| usage())),
            "--state-key-file" => {
                let file = args.next().unwrap_or_else(|| usage());
                // A bad file exits 2, its message naming the file and line, never a key.
                keys = Some(StateKeys::from_file(file.as_ref()).unwrap_or_else(|error| {
                    eprintln!("http_server: {error}");
                    std::process::exit(2);
                }));
            }
            "--instance-id" => instance = Some(args.next().unwrap_or_else(|| usage())),
            _ => usage(),
        }
    }
    let server = server(workers, keys).unwrap_or_else(|error| fail(&error));
    if stdio {
        if let Err(error) = server.serve_stdio() {
            fail(&error);
        }
        return;
    }
    let mut config = HttpServerConfig::new().port(port);
    if let Some(instance) = instance {
        config = config.instance_id(instance);
    }
    match (tokens, resource) {
        (Some(tokens), Some(resource)) => {
            let auth = Authorization::tokens_file(resource, std::path::Path::new(&tokens))
                .unwrap_or_else(|error| fail(&error));
            eprintln!("protected resource metadata at {}", auth.metadata_path());
            config = config.authorization(auth);
        }
        (None, None) => {}
        _ => usage(),
    }
    match tls {
        #[cfg(feature = "rustls")]
        (Some(cert), Some(key)) => {
            let tls = toolwire::server::ServerTls::from_pem_files(cert.as_ref(), key.as_ref())
                .unwrap_or_else(|error| fail(&error));
            config = config.tls(tls);
        }
        (None, None) => {}
        _ => usage(),
    }
    let http = HttpServer::bind(&server, config).unwrap_or_else(|error| fail(&error));
    println!("listening on {}", http.url());
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    let _ = http.close();
}

fn fail(error: &toolwire::Error) -> ! {
    eprintln!("http_server: {error}");
    std::process::exit(1);
}

fn usage() -> ! {
    eprintln!(
        "usage: http_server [--port N] [--stdio] [--workers N] \
         [--auth-tokens FILE --auth-resource URL] [--tls-cert FILE --tls-key FILE (feature rustls)]
         [--state-key-file FILE] [--instance-id NAME]"
    );
    std::process::exit(2);
}

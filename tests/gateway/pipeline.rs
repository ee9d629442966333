//! One call pipeline: each harness guarantee holds through the gateway exactly as in a local
//! harness. Every test body below runs twice, given a `Way`: a local `Harness` calling the
//! backend's tools as `ImportedTool`s (an `Admission` per backend, budget scopes), and a
//! `Gateway` in front of the same backend, called by a front client. The guarantees: the
//! budget (per scope), BUSY (per backend), the result limit with `structuredContent` (and a
//! tool that declares an `outputSchema`), retries only for idempotent tools, and the audit
//! events of a call.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;
use serde_json::{json, Value};
use support::{configs, front, http_backend, tool_server, tool_server_entry, url_entry, LONG};
use toolwire::gateway::{Gateway, GatewayConfig, Policy};
use toolwire::harness::LocalTool;
use toolwire::harness::{
    Admission, AuditEvent, AuditKind, BudgetScope, CallSettings, ImportedTool, Overflow,
    ResultLimit, RetryPolicy, Status, ToolOptions, Transcript,
};
use toolwire::server::{CallToolResult, HttpServer, Server, ServerConfig, ServerConnection};
use toolwire::{Harness, HarnessConfig, McpClient, McpConfig, StdioConfig};

/// The backend's name, in the gateway's config and in the local tools' names.
const BACKEND: &str = "b";
/// The result limit of every tool here, in characters.
const LIMIT: usize = 1000;

/// How the calls are made.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Local,
    Gateway,
}

/// What a way is set up with (the same settings both ways).
struct Setup {
    budget: u32,
    concurrency: usize,
    /// Tools marked idempotent (by the policy, or by the local tool's options).
    idempotent: &'static [&'static str],
}

/// Where the backend runs.
enum Backend {
    /// An in-process toolwire server over Streamable HTTP, with the test's tools.
    Http { _http: HttpServer, url: String },
    /// The bundled tool server over stdio.
    Stdio,
}

/// A call's answer as both ways give it.
#[derive(Debug)]
struct Reply {
    /// `OK`, or the status word the refusal starts with (`TOOL_ERROR` for a tool's own error).
    status: String,
    text: String,
    structured: Option<Value>,
    is_error: bool,
}

/// The gateway way: the gateway, its two front clients (two sessions), its transcript.
type Front = (
    Gateway,
    Vec<(McpClient, ServerConnection)>,
    std::path::PathBuf,
);

/// One way of making calls.
struct Way {
    kind: Kind,
    local: Option<Local>,
    gateway: Option<Front>,
    _backend: Backend,
}

struct Local {
    harness: Harness,
    client: McpClient,
    tools: Vec<ImportedTool>,
    events: Arc<Mutex<Vec<AuditEvent>>>,
    scopes: Vec<BudgetScope>,
}

fn front_name(tool: &str) -> String {
    format!("mcp__{BACKEND}__{tool}")
}

impl Way {
    fn new(kind: Kind, backend: Backend, setup: &Setup) -> Way {
        match kind {
            Kind::Local => {
                let client = match &backend {
                    Backend::Http { url, .. } => {
                        McpClient::connect_http(url.as_str(), McpConfig::default())
                    }
                    Backend::Stdio => McpClient::connect_stdio(
                        StdioConfig::new(tool_server().display().to_string()),
                        McpConfig::default(),
                    ),
                }
                .expect("the local way's client");
                let events = Arc::new(Mutex::new(Vec::new()));
                let seen = Arc::clone(&events);
                let harness = Harness::new(
                    toolwire::ToolRegistry::new(),
                    HarnessConfig::default()
                        .attempt_budget(setup.budget)
                        .observer(move |event| seen.lock().push(event.clone())),
                )
                .unwrap();
                let admission =
                    Admission::new(format!("the server {BACKEND:?}"), setup.concurrency).unwrap();
                let tools = client
                    .list_tools()
                    .unwrap()
                    .iter()
                    .map(|tool| {
                        let idempotent = setup.idempotent.contains(&tool.name.as_str());
                        let mut options = ToolOptions::new()
                            .idempotent(idempotent)
                            .result_limit(ResultLimit::new(LIMIT, Overflow::Truncate));
                        if idempotent {
                            options = options.retry(
                                RetryPolicy::new()
                                    .max_attempts(2)
                                    .delays(Duration::ZERO, Duration::ZERO)
                                    .on_busy(false),
                            );
                        }
                        ImportedTool::new(
                            front_name(&tool.name),
                            tool,
                            &client,
                            options,
                            Some(admission.clone()),
                        )
                        .unwrap()
                    })
                    .collect();
                let scopes = vec![harness.scope("first"), harness.scope("second")];
                Way {
                    kind,
                    local: Some(Local {
                        harness,
                        client,
                        tools,
                        events,
                        scopes,
                    }),
                    gateway: None,
                    _backend: backend,
                }
            }
            Kind::Gateway => {
                let entry = match &backend {
                    Backend::Http { url, .. } => url_entry(url),
                    Backend::Stdio => tool_server_entry(),
                };
                let tools: serde_json::Map<String, Value> = setup
                    .idempotent
                    .iter()
                    .map(|tool| ((*tool).to_owned(), json!({"idempotent": true})))
                    .collect();
                let policy = json!({
                    "calls_per_caller": setup.budget,
                    "concurrency": setup.concurrency,
                    "result_chars": LIMIT,
                    "servers": {BACKEND: {"tools": tools}},
                });
                let folder = std::env::temp_dir().join(format!(
                    "toolwire-gw-pipeline-{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                std::fs::create_dir_all(&folder).unwrap();
                let path = folder.join("audit.jsonl");
                let transcript = Arc::new(Transcript::create(&path).unwrap());
                let gateway = Gateway::start(
                    &configs(&[(BACKEND, entry)]),
                    Policy::parse(&policy.to_string()).unwrap(),
                    GatewayConfig::new().transcript(transcript),
                )
                .unwrap();
                assert!(gateway.report().failed.is_empty(), "{:?}", gateway.report());
                let fronts = vec![front(&gateway), front(&gateway)];
                Way {
                    kind,
                    local: None,
                    gateway: Some((gateway, fronts, path)),
                    _backend: backend,
                }
            }
        }
    }

    /// Calls `tool` in scope `scope` (0 or 1: two budget scopes locally, two front sessions
    /// through the gateway).
    fn call(&self, scope: usize, tool: &str, arguments: Value) -> Reply {
        self.call_cancelled_by(scope, tool, arguments, None)
    }

    fn call_cancelled_by(
        &self,
        scope: usize,
        tool: &str,
        arguments: Value,
        cancel: Option<Receiver<()>>,
    ) -> Reply {
        if let Some(local) = &self.local {
            let imported = local
                .tools
                .iter()
                .find(|imported| imported.remote_name() == tool)
                .unwrap_or_else(|| panic!("no tool {tool}"));
            let flag = toolwire::harness::CancelFlag::new();
            if let Some(cancel) = cancel {
                let flag = flag.clone();
                std::thread::spawn(move || {
                    let _ = cancel.recv();
                    flag.cancel();
                });
            }
            let settings = CallSettings::new()
                .budget(local.scopes[scope].clone())
                .cancel(flag);
            let outcome = local.harness.call_imported(imported, arguments, &settings);
            return match &outcome.mcp_result {
                Some(result) => Reply {
                    status: if result.is_error {
                        "TOOL_ERROR".into()
                    } else {
                        "OK".into()
                    },
                    text: result.text(),
                    structured: result.structured_content.clone(),
                    is_error: result.is_error,
                },
                None => Reply {
                    status: outcome.status.to_string(),
                    text: outcome.model_text(),
                    structured: None,
                    is_error: outcome.status != Status::Ok,
                },
            };
        }
        let (_, fronts, _) = self.gateway.as_ref().unwrap();
        let client = &fronts[scope].0;
        let result = client
            .call_tool(&front_name(tool), arguments)
            .unwrap_or_else(|error| panic!("{:?}: calling {tool}: {error}", self.kind));
        let text = result.text();
        let status = if !result.is_error {
            "OK".to_owned()
        } else {
            let word = text.split(':').next().unwrap_or_default();
            match word.parse::<Status>() {
                Ok(status) => status.to_string(),
                Err(_) => "TOOL_ERROR".to_owned(),
            }
        };
        Reply {
            status,
            text,
            structured: result.structured_content.clone(),
            is_error: result.is_error,
        }
    }

    /// The audit events written so far, in order.
    fn events(&self) -> Vec<AuditEvent> {
        match (&self.local, &self.gateway) {
            (Some(local), _) => local.events.lock().clone(),
            (None, Some((_, _, path))) => Transcript::replay(path).unwrap(),
            _ => unreachable!(),
        }
    }

    /// The kinds of the events of the call whose `finished` event is the last one with
    /// status `status`.
    fn kinds_of_last(&self, status: Status) -> Vec<AuditKind> {
        let events = self.events();
        let call = events
            .iter()
            .rev()
            .find(|event| event.kind == AuditKind::Finished && event.status == Some(status))
            .unwrap_or_else(|| panic!("{:?}: no call finished {status}: {events:?}", self.kind))
            .call;
        events
            .iter()
            .filter(|event| event.call == call)
            .map(|event| event.kind)
            .collect()
    }

    fn close(self) {
        if let Some(local) = self.local {
            local.harness.close();
            let _ = local.client.close();
        }
        if let Some((gateway, fronts, path)) = self.gateway {
            for (client, connection) in fronts {
                let _ = client.close();
                connection.wait();
            }
            gateway.close();
            if let Some(folder) = path.parent() {
                let _ = std::fs::remove_dir_all(folder);
            }
        }
    }
}

/// The latches of the `hold` tool: it says it has started, then waits to be released.
struct Hold {
    entered: Receiver<()>,
    release: Sender<()>,
}

/// An in-process backend with the test's tools: `echo`, `hold` (see [`Hold`]), `report` (a
/// short text and a large `structuredContent`, declaring an `outputSchema`), `notes` (the
/// same without an `outputSchema`) and `long` (3,000 characters of text).
fn http_backend_with_tools() -> (Backend, Hold) {
    let server = Server::new(ServerConfig::new("pipeline-backend", "1.0")).unwrap();
    let object = json!({"type": "object", "properties": {"message": {"type": "string"}}});
    server
        .add_tool(LocalTool::with_context(
            "echo",
            "Echoes.",
            object.clone(),
            |_, args| {
                Ok(CallToolResult::from_text(
                    args["message"].as_str().unwrap_or_default(),
                ))
            },
        ))
        .unwrap();
    let (entered_tx, entered) = bounded::<()>(8);
    let (release, release_rx) = bounded::<()>(8);
    server
        .add_tool(LocalTool::with_context(
            "hold",
            "Holds.",
            object.clone(),
            move |_, _| {
                let _ = entered_tx.send(());
                let _ = release_rx.recv_timeout(LONG);
                Ok(CallToolResult::from_text("released"))
            },
        ))
        .unwrap();
    let large = json!({"rows": "r".repeat(5 * LIMIT)});
    let report = large.clone();
    server
        .add_tool(
            LocalTool::with_context("report", "Reports.", object.clone(), move |_, _| {
                Ok(CallToolResult::from_text("a short summary").with_structured(report.clone()))
            })
            .output_schema(json!({"type": "object", "properties": {"rows": {"type": "string"}}})),
        )
        .unwrap();
    server
        .add_tool(LocalTool::with_context(
            "notes",
            "Notes.",
            object.clone(),
            move |_, _| {
                Ok(CallToolResult::from_text("a short summary").with_structured(large.clone()))
            },
        ))
        .unwrap();
    server
        .add_tool(LocalTool::with_context("long", "Long.", object, |_, _| {
            Ok(CallToolResult::from_text("x".repeat(3 * LIMIT)))
        }))
        .unwrap();
    let (http, url) = http_backend(&server);
    (
        Backend::Http { _http: http, url },
        Hold { entered, release },
    )
}

fn both(body: impl Fn(Kind)) {
    for kind in [Kind::Local, Kind::Gateway] {
        body(kind);
    }
}

#[test]
fn the_budget_bounds_each_scope_both_ways() {
    both(|kind| {
        let (backend, _hold) = http_backend_with_tools();
        let setup = Setup {
            budget: 2,
            concurrency: 4,
            idempotent: &[],
        };
        let way = Way::new(kind, backend, &setup);
        for message in ["one", "two"] {
            let reply = way.call(0, "echo", json!({"message": message}));
            assert_eq!(
                (reply.status.as_str(), reply.text.as_str()),
                ("OK", message)
            );
        }
        let spent = way.call(0, "echo", json!({"message": "three"}));
        assert_eq!(spent.status, "BUDGET", "{kind:?}: {spent:?}");
        assert!(
            spent.is_error && spent.text.contains("budget of 2"),
            "{kind:?}: {spent:?}"
        );
        // Another scope (another front session) has a budget of its own.
        let other = way.call(1, "echo", json!({"message": "four"}));
        assert_eq!(other.status, "OK", "{kind:?}: {other:?}");
        // A refusal by the budget forwards nothing, and is audited as a decision.
        assert_eq!(
            way.kinds_of_last(Status::Budget),
            [AuditKind::Received, AuditKind::Finished],
            "{kind:?}"
        );
        assert_eq!(
            way.kinds_of_last(Status::Ok),
            [
                AuditKind::Received,
                AuditKind::Request,
                AuditKind::Response,
                AuditKind::Finished
            ],
            "{kind:?}"
        );
        way.close();
    });
}

#[test]
fn a_backend_at_its_limit_is_busy_at_once_both_ways() {
    both(|kind| {
        let (backend, hold) = http_backend_with_tools();
        let setup = Setup {
            budget: 100,
            concurrency: 1,
            idempotent: &[],
        };
        let way = Way::new(kind, backend, &setup);
        std::thread::scope(|scope| {
            let held = scope.spawn(|| way.call(0, "hold", json!({})));
            hold.entered
                .recv_timeout(LONG)
                .expect("the hold call started");
            let busy = way.call(1, "echo", json!({"message": "x"}));
            assert_eq!(busy.status, "BUSY", "{kind:?}: {busy:?}");
            assert!(
                busy.text
                    .contains("the server \"b\" already has its 1 calls in flight"),
                "{kind:?}: {busy:?}"
            );
            hold.release.send(()).unwrap();
            let held = held.join().unwrap();
            assert_eq!(
                (held.status.as_str(), held.text.as_str()),
                ("OK", "released")
            );
        });
        // Free again once the call holding it ended.
        assert_eq!(way.call(1, "echo", json!({"message": "y"})).text, "y");
        assert_eq!(
            way.kinds_of_last(Status::Busy),
            [AuditKind::Received, AuditKind::Busy, AuditKind::Finished],
            "{kind:?}"
        );
        way.close();
    });
}

#[test]
fn structured_content_counts_against_the_result_limit_both_ways() {
    both(|kind| {
        let (backend, _hold) = http_backend_with_tools();
        let setup = Setup {
            budget: 100,
            concurrency: 4,
            idempotent: &[],
        };
        let way = Way::new(kind, backend, &setup);
        // A tool that declares an outputSchema: a tool error saying so, no structured content.
        let report = way.call(0, "report", json!({}));
        assert!(report.is_error, "{kind:?}: {report:?}");
        assert!(report.structured.is_none(), "{kind:?}: {report:?}");
        assert!(
            report
                .text
                .contains(&format!("over this tool's limit of {LIMIT} characters")),
            "{kind:?}: {report:?}"
        );
        // Without one: cut, with the marker, and without the structured content.
        let notes = way.call(0, "notes", json!({}));
        assert_eq!(notes.status, "OK", "{kind:?}: {notes:?}");
        assert!(notes.structured.is_none(), "{kind:?}: {notes:?}");
        assert!(
            notes.text.starts_with("a short summary\n[truncated"),
            "{kind:?}: {notes:?}"
        );
        let long = way.call(0, "long", json!({}));
        assert_eq!(long.status, "OK", "{kind:?}: {long:?}");
        assert_eq!(
            long.text,
            format!(
                "{}\n[truncated: showing {LIMIT} of {} characters]",
                "x".repeat(LIMIT),
                3 * LIMIT
            ),
            "{kind:?}"
        );
        way.close();
    });
}

#[test]
fn only_idempotent_tools_are_tried_again_both_ways() {
    for idempotent in [true, false] {
        both(|kind| {
            let setup = Setup {
                budget: 100,
                concurrency: 4,
                idempotent: if idempotent { &["crash"] } else { &[] },
            };
            let way = Way::new(kind, Backend::Stdio, &setup);
            // The backend dies under the call: a transport failure.
            let crashed = way.call(0, "crash", json!({}));
            assert!(crashed.is_error, "{kind:?}: {crashed:?}");
            let kinds = way.kinds_of_last(Status::ToolError);
            let requests = kinds.iter().filter(|k| **k == AuditKind::Request).count();
            let retries = kinds.iter().filter(|k| **k == AuditKind::Retry).count();
            let expected = if idempotent { (2, 1) } else { (1, 0) };
            assert_eq!(
                (requests, retries),
                expected,
                "{kind:?}, idempotent {idempotent}: {kinds:?}"
            );
            way.close();
        });
    }
}

#[test]
fn the_callers_cancellation_reaches_the_backend_both_ways() {
    both(|kind| {
        let (backend, hold) = http_backend_with_tools();
        let setup = Setup {
            budget: 100,
            concurrency: 1,
            idempotent: &[],
        };
        let way = Way::new(kind, backend, &setup);
        match kind {
            Kind::Local => {
                let (cancel, cancelled) = bounded::<()>(0);
                std::thread::scope(|scope| {
                    let held = scope
                        .spawn(|| way.call_cancelled_by(0, "hold", json!({}), Some(cancelled)));
                    hold.entered
                        .recv_timeout(LONG)
                        .expect("the hold call started");
                    drop(cancel);
                    let held = held.join().unwrap();
                    assert_eq!(held.status, "TIMEOUT", "{held:?}");
                    assert!(held.text.contains("cancelled"), "{held:?}");
                });
            }
            Kind::Gateway => {
                let (_, fronts, _) = way.gateway.as_ref().unwrap();
                let handle = fronts[0]
                    .0
                    .start_tool(&front_name("hold"), json!({}), toolwire::CallOptions::new())
                    .unwrap();
                hold.entered
                    .recv_timeout(LONG)
                    .expect("the hold call started");
                assert!(handle.cancel());
            }
        }
        // The backend's place is free again without the held call being released: the
        // cancellation was waited on, not the backend's answer.
        assert!(
            support::eventually(support::LONG, || way
                .call(1, "echo", json!({"message": "z"}))
                .status
                == "OK"),
            "{kind:?}: the cancelled call kept its place"
        );
        let _ = hold.release.send(());
        way.close();
    });
}

//! `call`: find the tool, type and check the arguments, send, show progress, wait (or cancel
//! on Ctrl-C), check the result against the tool's output schema, print it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde_json::{json, Value};
use toolwire::harness::MAX_SAFE_INTEGER;
use toolwire::{CallOptions, CallToolResult, McpClient};

use crate::progress::{Display, Mode};
use crate::transcript::Transcript;
use crate::{args, interrupt, output, Exit, Failure};

/// How often the wait wakes up without news: to show the spinner, and as the backstop for
/// the call's deadline.
const TICK: Duration = Duration::from_millis(100);

/// What `call` was asked to do.
pub struct CallRequest<'a> {
    pub tool: &'a str,
    pub raw_args: &'a [String],
    pub json: bool,
    pub timeout: Duration,
    pub max_total: Duration,
    pub mode: Mode,
}

/// Runs one call; `Ok` holds 0 or 1 (`isError`).
pub fn run(
    client: &McpClient,
    request: &CallRequest<'_>,
    transcript: Option<&Arc<Transcript>>,
    interrupts: &Receiver<()>,
) -> Result<Exit, Failure> {
    let note = |event: &str, fields: Value| {
        if let Some(transcript) = transcript {
            transcript.decision(event, fields);
        }
    };
    let name = request.tool;
    let tools = client
        .list_tools()
        .map_err(|error| Failure::from_error("listing the tools", &error))?;
    let Some(tool) = tools.iter().find(|tool| tool.name == name) else {
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        let message = format!(
            "the server has no tool named `{name}`; nothing was run (it has: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        );
        note(
            "invalid",
            json!({"tool": name, "status": "UNKNOWN_TOOL", "detail": message}),
        );
        return Err(Failure::usage(message));
    };
    // A tool whose input or output schema cannot be read or is over a bound is never
    // called: its arguments, or its result, could not be checked.
    let unusable = |reason: String| {
        note(
            "invalid",
            json!({"tool": name, "status": "INVALID", "detail": reason}),
        );
        Failure {
            exit: Exit::Transport,
            message: format!("the tool is unusable; nothing was run: {reason}"),
            login_required: false,
        }
    };
    if let Some(problem) = tool.schema_problem() {
        return Err(unusable(problem.to_owned()));
    }
    let input = tool
        .input_schema()
        .map_err(|error| unusable(error.to_string()))?;
    let arguments = args::parse(request.raw_args, &input).map_err(|reason| {
        note(
            "invalid",
            json!({"tool": name, "status": "INVALID", "detail": reason}),
        );
        Failure::usage(format!(
            "the arguments of `{name}`: {reason}\n{}",
            args::signature(name, &input)
        ))
    })?;
    if let Err(misfit) = args::check(tool, &input, &arguments) {
        note(
            "invalid",
            json!({"tool": name, "status": "INVALID", "detail": misfit.repair,
                   "arguments": arguments}),
        );
        return Err(Failure::usage(misfit.human));
    }
    // A warning, not a refusal: the user wrote the number on purpose, and a server that
    // reads integers exactly takes it; many (JavaScript ones among them) would round it.
    for (pointer, integer) in args::unsafe_integers(&arguments) {
        let warning = format!(
            "the argument at {pointer} holds the integer {integer}, beyond \
             ±{MAX_SAFE_INTEGER} (2^53 − 1): many servers (JavaScript ones among them) cannot \
             hold it exactly; it is sent as written"
        );
        errln!("toolwire: warning: {warning}");
        note("warning", json!({"tool": name, "detail": warning}));
    }

    let display = Arc::new(Display::new(request.mode, name));
    let on_progress = {
        let display = Arc::clone(&display);
        let transcript = transcript.cloned();
        move |progress: &toolwire::jsonrpc::Progress| {
            display.progress(progress);
            if let Some(transcript) = &transcript {
                transcript.decision(
                    "progress",
                    json!({"progress": progress.progress, "total": progress.total,
                           "message": progress.message}),
                );
            }
        }
    };
    // The command keeps the deadline itself (see `Deadline`); the client's is a backstop.
    let options = CallOptions::new()
        .timeout(request.timeout + BACKSTOP)
        .max_total(request.max_total + BACKSTOP)
        .reset_on_progress(true)
        .on_progress(on_progress);
    note("call", json!({"tool": name, "arguments": arguments}));
    let started = Instant::now();
    // From here a Ctrl-C is this call's to handle: it may arrive while the request goes out.
    interrupt::call_active(true);
    let outcome = wait(
        client, request, arguments, options, &display, interrupts, transcript,
    );
    interrupt::call_active(false);
    display.finish();
    let elapsed = started.elapsed();
    let result = match outcome {
        Ok(result) => result,
        Err(mut failure) => {
            note(
                "result",
                json!({"tool": name, "status": failure.exit.status(),
                       "duration_us": crate::micros(elapsed), "detail": failure.message}),
            );
            if let Some(hint) = could_not_ask(client, &failure.message) {
                failure.message.push_str(&format!("\n{hint}"));
            }
            return Err(failure);
        }
    };
    let exit = if result.is_error {
        Exit::ToolError
    } else {
        Exit::Ok
    };
    note(
        "result",
        json!({"tool": name, "status": exit.status(), "is_error": result.is_error,
               "duration_us": crate::micros(elapsed), "size": result.raw.to_string().len()}),
    );
    if request.json {
        output::print_result_json(&result);
    } else {
        output::print_result(&result);
    }
    if result.is_error && request.mode != Mode::Quiet {
        errln!("toolwire: the tool `{name}` returned isError (exit 1)");
    }
    if result.is_error {
        if let Some(hint) = could_not_ask(client, &result.text()) {
            errln!("{hint}");
        }
    }
    Ok(exit)
}

/// What a server says when it could not send the client a request of its own: the methods,
/// and the Python SDK's "no back-channel".
const ASKING: [&str; 5] = [
    "elicitation/create",
    "sampling/createmessage",
    "roots/list",
    "back-channel",
    "back channel",
];

/// The hint for a call that failed because the server could not ask its question: in a
/// 2026-07-28 session a server asks only by answering with an input round, and servers
/// written for the handshake era (a request sent while the tool runs, as the Python SDK's
/// classic `ctx.elicit` does) have no channel to send it on. `None` for other failures and
/// for sessions of the handshake era.
fn could_not_ask(client: &McpClient, failure: &str) -> Option<String> {
    let stateless = client
        .session_info()
        .is_ok_and(|info| info.era == toolwire::mcp::Era::Stateless);
    let lower = failure.to_ascii_lowercase();
    let method = ASKING.iter().find(|method| lower.contains(*method))?;
    if !stateless {
        return None;
    }
    let method = match *method {
        "sampling/createmessage" => "sampling/createMessage",
        "back-channel" | "back channel" => "a request of its own",
        named => named,
    };
    Some(format!(
        "hint: the server could not send its request ({method}) in this 2026-07-28 session, \
         where a server asks only through input rounds; a server written for the handshake \
         era asks while the tool runs: try again with --protocol legacy"
    ))
}

/// The call's own deadline: `timeout` from the start or the last progress report, never
/// past `max_total` from the start.
///
/// The command keeps it itself, rather than leaving it to the client's timer, so that it is
/// this thread that cancels the request when it passes: the cancellation is queued to the
/// server before the command goes on to close the connection. (The client's timer wakes the
/// caller first and then sends `notifications/cancelled` from its own thread, which a close
/// right after the wake-up can overtake.) The client's timer stays armed a little later, as a
/// backstop.
struct Deadline {
    timeout: Duration,
    max_total: Duration,
    hard: Instant,
    at: Instant,
    /// Progress has moved the deadline at least once.
    moved: bool,
}

impl Deadline {
    fn new(timeout: Duration, max_total: Duration) -> Deadline {
        let started = Instant::now();
        let hard = started + max_total;
        Deadline {
            timeout,
            max_total,
            hard,
            at: (started + timeout).min(hard),
            moved: false,
        }
    }

    fn progressed(&mut self) {
        self.at = (Instant::now() + self.timeout).min(self.hard);
        self.moved = true;
    }

    /// The bound the call ran into, as the user wrote it (`300ms`, not a measured
    /// `300.41 ms`), and the option it came from when progress had moved the deadline.
    fn reached(&self) -> (String, Option<&'static str>) {
        if !self.moved {
            (crate::cli::show_bound(self.timeout), None)
        } else if self.at >= self.hard {
            (
                format!("{} in all", crate::cli::show_bound(self.max_total)),
                Some("--max-total"),
            )
        } else {
            (
                format!("{} without progress", crate::cli::show_bound(self.timeout)),
                Some("--timeout"),
            )
        }
    }

    fn passed(&self) -> bool {
        Instant::now() >= self.at
    }

    fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }
}

/// How much later than the command's own deadline the client's timer fires.
pub const BACKSTOP: Duration = Duration::from_secs(2);

/// Sends the call and waits for its outcome, a Ctrl-C, or its deadline.
fn wait(
    client: &McpClient,
    request: &CallRequest<'_>,
    arguments: Value,
    options: CallOptions,
    display: &Display,
    interrupts: &Receiver<()>,
    transcript: Option<&Arc<Transcript>>,
) -> Result<CallToolResult, Failure> {
    let name = request.tool;
    let note = |event: &str, fields: Value| {
        if let Some(transcript) = transcript {
            transcript.decision(event, fields);
        }
    };
    let mut deadline = Deadline::new(request.timeout, request.max_total);
    // Said before the request goes out: the server's log messages about the call, shown as
    // they arrive on the reader's thread, come after it.
    display.started();
    let mut call = client
        .start_tool(name, arguments, options)
        .map_err(|error| call_failure(name, &error))?;
    // Set once this thread has cancelled the call for its deadline.
    let mut expired = false;
    let mut progress_seen = display.progress_count();
    let mut shown_task: Option<(String, String, Option<String>)> = None;
    let outcome = loop {
        if interrupts.try_recv().is_ok() {
            let told = call.cancel();
            crate::progress::clear();
            note(
                "cancel",
                json!({"tool": name, "detail": "interrupted (SIGINT)", "sent": told}),
            );
            let message = if interrupt::in_shell() {
                if told {
                    format!("the call to `{name}` was cancelled (the server was told)")
                } else {
                    format!("the call to `{name}` had just ended")
                }
            } else if told {
                format!(
                    "interrupted: the call to `{name}` was cancelled (the server was told) \
                     and the server closed"
                )
            } else {
                format!("interrupted: the call to `{name}` had just ended; the server closed")
            };
            return Err(Failure {
                exit: Exit::Interrupted,
                message,
                login_required: false,
            });
        }
        // Progress reports (shown by the callback) and a task's changes push the deadline.
        if let Some(outcome) = call.wait_timeout(deadline.left().min(TICK)) {
            break outcome;
        }
        let seen = display.progress_count();
        if seen != progress_seen {
            progress_seen = seen;
            deadline.progressed();
        }
        if let Some(task) = call.task() {
            let now = (
                task.task_id.clone(),
                task.status.to_string(),
                task.status_message.clone(),
            );
            if shown_task.as_ref() != Some(&now) {
                if shown_task.is_none() {
                    note("task", json!({"tool": name, "task_id": task.task_id}));
                } else {
                    deadline.progressed();
                }
                display.task(&now.0, &now.1, now.2.as_deref());
                shown_task = Some(now);
            }
        }
        if !expired && deadline.passed() {
            expired = true;
            if call.cancel() {
                note(
                    "cancel",
                    json!({"tool": name, "detail": "timed out", "sent": true}),
                );
                let what = if call.task().is_some() {
                    "its task was cancelled"
                } else {
                    "it was cancelled"
                };
                let (bound, option) = deadline.reached();
                let option = option
                    .map(|option| format!("{option}; "))
                    .unwrap_or_default();
                return Err(Failure {
                    exit: Exit::Timeout,
                    message: format!(
                        "the call to `{name}` timed out after {bound} ({option}{what}; the \
                         server was told)"
                    ),
                    login_required: false,
                });
            }
            // The outcome arrived at the same moment: the next wait takes it.
        }
        display.tick();
    };
    // The library's checks are done: the result's shape, its resultType, its
    // structuredContent against the tool's outputSchema, and a task followed to its end.
    outcome.map_err(|error| match error {
        toolwire::Error::Schema(_) | toolwire::Error::Protocol(_) => {
            Failure::from_error(&format!("the result of `{name}`"), &error)
        }
        other => call_failure(name, &other),
    })
}

fn call_failure(name: &str, error: &toolwire::Error) -> Failure {
    match error {
        toolwire::Error::Timeout { after, .. } => Failure {
            exit: Exit::Timeout,
            message: format!(
                "the call to `{name}` timed out after {} (the request was cancelled)",
                output::duration(*after)
            ),
            login_required: false,
        },
        other => Failure::from_error(&format!("calling `{name}`"), other),
    }
}

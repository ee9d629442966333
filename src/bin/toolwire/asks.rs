//! What the command answers when the server asks the client something: `roots/list` (the
//! `--root` folders), `elicitation/create` (the person at the terminal, field by field, or
//! `--elicit accept-defaults|decline`) and `sampling/createMessage` (declined, or answered by
//! `--sampling-command`). All three capabilities are declared, so a server shows the tools
//! that use them.
//!
//! A request the command declines or cannot answer is kept as a [`refusal`]: the command says
//! so at its end, so that a tool's error that follows from it reads as ours, not the server's.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use toolwire::jsonrpc::{ErrorCode, ErrorObject};
use toolwire::mcp::{ElicitRequest, ElicitResult, Root};
use toolwire::McpConfig;

use crate::cli::Elicit;
use crate::Failure;

/// MCP's code for a request the user (here: the command, for them) turned down.
const USER_REJECTED: i32 = -1;
/// The most bytes read from the sampling command's stdout.
const MAX_SAMPLING_OUTPUT: u64 = 1024 * 1024;
/// The most bytes of one answer read from the terminal.
const MAX_ANSWER: u64 = 64 * 1024;
/// How many times a required field is asked before the elicitation is cancelled.
const ASK_TRIES: usize = 3;
/// How many refusals are kept (and reported).
const MAX_REFUSALS: usize = 16;

/// The refusals of this run, in order.
static REFUSALS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Keeps a refusal for the end of the run.
pub fn refusal(text: String) {
    let mut refusals = REFUSALS.lock().unwrap_or_else(|poison| poison.into_inner());
    log::info!("{text}");
    if refusals.len() < MAX_REFUSALS && !refusals.contains(&text) {
        refusals.push(text);
    }
}

/// Says, on stderr, every request the command declined.
pub fn report_refusals() {
    let refusals: Vec<String> =
        std::mem::take(&mut *REFUSALS.lock().unwrap_or_else(|poison| poison.into_inner()));
    for text in &refusals {
        errln!("toolwire: note: {text} (toolwire's refusal, not the server's failure)");
    }
}

/// The settings of the server's requests, from the options.
pub struct Asks {
    roots: Vec<Root>,
    elicit: Elicit,
    sampling_command: Option<String>,
    sampling_timeout: Duration,
}

impl Asks {
    /// Checks the `--root` folders (each must be a folder) and keeps the rest.
    pub fn new(
        roots: &[std::path::PathBuf],
        elicit: Elicit,
        sampling_command: Option<String>,
        sampling_timeout: Duration,
    ) -> Result<Asks, Failure> {
        let roots = roots
            .iter()
            .map(|dir| root(dir))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Asks {
            roots,
            elicit,
            sampling_command,
            sampling_timeout,
        })
    }

    /// `config` with the three handlers.
    pub fn install(&self, config: McpConfig) -> McpConfig {
        let roots = self.roots.clone();
        let elicit = self.elicit;
        let command = self.sampling_command.clone();
        let timeout = self.sampling_timeout;
        config
            .roots(move || {
                if roots.is_empty() {
                    log::info!("the server asked for roots: none given (--root DIR)");
                }
                roots.clone()
            })
            .elicitation(move |request| elicitation(request, elicit))
            .sampling(move |request| sampling(request, command.as_deref(), timeout))
    }
}

/// A folder as a root: its real absolute path as a `file://` URI, named by its last part.
fn root(dir: &Path) -> Result<Root, Failure> {
    let real = dir
        .canonicalize()
        .map_err(|error| Failure::usage(format!("--root {}: {error}", dir.display())))?;
    if !real.is_dir() {
        return Err(Failure::usage(format!(
            "--root {}: not a folder",
            dir.display()
        )));
    }
    let name = real
        .file_name()
        .map(|name| name.to_string_lossy().into_owned());
    Ok(Root {
        uri: file_uri(&real.to_string_lossy()),
        name,
    })
}

/// `file://` and the path, with every byte outside the URI path characters percent-encoded.
fn file_uri(path: &str) -> String {
    let mut uri = String::from("file://");
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

fn elicitation(request: &ElicitRequest, policy: Elicit) -> ElicitResult {
    let message = crate::terminal::shown(&request.message).into_owned();
    match policy {
        Elicit::Decline => {
            refusal(format!(
                "declined the server's elicitation ({message:?}) as --elicit decline asks"
            ));
            ElicitResult::Decline
        }
        Elicit::AcceptDefaults => ElicitResult::accept_defaults(request),
        Elicit::Ask => {
            if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
                refusal(format!(
                    "declined the server's elicitation ({message:?}): there is no terminal to \
                     ask on (--elicit accept-defaults answers with the defaults)"
                ));
                return ElicitResult::Decline;
            }
            let mut result = ElicitResult::Cancel;
            crate::progress::suspend(|| result = ask(request, &message));
            result
        }
    }
}

/// Reads one answer line from the terminal; `None` at end of input (Ctrl-D).
fn read_answer() -> Option<String> {
    let mut line = String::new();
    let stdin = std::io::stdin();
    let read = stdin.lock().take(MAX_ANSWER).read_line(&mut line).ok()?;
    if read == 0 {
        return None;
    }
    Some(line.trim_end_matches(['\n', '\r']).to_owned())
}

fn prompt(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(crate::terminal::shown(text).as_bytes());
    let _ = stderr.flush();
}

/// The dialog: accept or not, then each field of the requested schema.
fn ask(request: &ElicitRequest, message: &str) -> ElicitResult {
    prompt(&format!("\nThe server asks: {message}\nAnswer? [Y/n] "));
    match read_answer().as_deref().map(str::trim) {
        None => {
            prompt("\n");
            return ElicitResult::Cancel;
        }
        Some("n" | "N" | "no") => return ElicitResult::Decline,
        Some(_) => {}
    }
    let schema = request.requested_schema.clone().unwrap_or(Value::Null);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (name, property) in properties {
        let needed = required.contains(&name.as_str());
        let mut tries = 0;
        loop {
            prompt(&field_prompt(name, property, needed));
            let Some(answer) = read_answer() else {
                prompt("\n");
                return ElicitResult::Cancel;
            };
            if answer.is_empty() {
                if let Some(default) = property.get("default") {
                    content.insert(name.clone(), default.clone());
                    break;
                }
                if !needed {
                    break;
                }
            }
            match typed(&answer, property) {
                Ok(value) if !answer.is_empty() => {
                    content.insert(name.clone(), value);
                    break;
                }
                Ok(_) => prompt("  (required)\n"),
                Err(why) => prompt(&format!("  ({why})\n")),
            }
            tries += 1;
            if tries >= ASK_TRIES {
                prompt("  (no answer; the request is cancelled)\n");
                return ElicitResult::Cancel;
            }
        }
    }
    ElicitResult::Accept(Value::Object(content))
}

/// The values an enum field takes: `enum`, `oneOf`/`anyOf` of `const`s, or an array's items'.
fn choices(property: &Value) -> Vec<Value> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return values.clone();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = property.get(key).and_then(Value::as_array) {
            let values: Vec<Value> = branches
                .iter()
                .filter_map(|branch| branch.get("const").cloned())
                .collect();
            if !values.is_empty() {
                return values;
            }
        }
    }
    property.get("items").map(choices).unwrap_or_default()
}

fn field_prompt(name: &str, property: &Value, needed: bool) -> String {
    let kind = property
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let mut details = vec![kind.to_owned()];
    let values = choices(property);
    if !values.is_empty() {
        let shown: Vec<String> = values
            .iter()
            .map(|value| {
                value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned)
            })
            .collect();
        let joiner = if kind == "array" {
            "some of (a, b)"
        } else {
            "one of"
        };
        details.push(format!("{joiner}: {}", shown.join(", ")));
    }
    if needed {
        details.push("required".into());
    }
    let title = property
        .get("title")
        .or_else(|| property.get("description"))
        .and_then(Value::as_str)
        .map(|text| format!(" {text}"))
        .unwrap_or_default();
    let default = property
        .get("default")
        .map(|value| {
            format!(
                " [{}]",
                value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned)
            )
        })
        .unwrap_or_default();
    format!("  {name}{title} ({}){default}: ", details.join(", "))
}

/// An answer as the value the field's type asks for.
fn typed(answer: &str, property: &Value) -> Result<Value, String> {
    let kind = property
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let value = match kind {
        "boolean" => match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("answer yes or no".into()),
        },
        "integer" => answer
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number".to_owned())?,
        "number" => answer
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "a number".to_owned())?,
        "array" => Value::Array(
            answer
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| Value::from(item.to_owned()))
                .collect(),
        ),
        _ => Value::from(answer.to_owned()),
    };
    let values = choices(property);
    let fits = |value: &Value| values.is_empty() || values.contains(value);
    let all_fit = match &value {
        Value::Array(items) if kind == "array" => items.iter().all(fits),
        other => fits(other),
    };
    if !all_fit {
        return Err("not one of the choices".into());
    }
    Ok(value)
}

fn sampling(
    request: &Value,
    command: Option<&str>,
    timeout: Duration,
) -> Result<Value, ErrorObject> {
    let Some(command) = command else {
        let text = "declined the server's request to sample a model (sampling/createMessage): \
                    no --sampling-command was given";
        refusal(text.to_owned());
        return Err(ErrorObject::new(
            ErrorCode(USER_REJECTED),
            "toolwire declined sampling: the user gave no --sampling-command",
        ));
    };
    run_sampling(request, command, timeout).map_err(|why| {
        refusal(format!(
            "could not answer the server's sampling/createMessage: --sampling-command {why}"
        ));
        ErrorObject::new(
            ErrorCode(-32603),
            format!("toolwire's --sampling-command failed: {why}"),
        )
    })
}

/// Runs the command with the request on stdin; its stdout is the answer: a JSON
/// `CreateMessageResult`, or text (taken as the assistant's text message).
fn run_sampling(request: &Value, command: &str, timeout: Duration) -> Result<Value, String> {
    let mut child = shell(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| format!("could not start: {error}"))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = request.to_string();
    let writer = std::thread::spawn(move || {
        // A command that does not read its input is not an error.
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = (&mut stdout)
            .take(MAX_SAMPLING_OUTPUT + 1)
            .read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("did not finish within {:?}", timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(error) => return Err(format!("could not be waited for: {error}")),
        }
    };
    let _ = writer.join();
    let bytes = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("exited with {status}"));
    }
    if bytes.len() as u64 > MAX_SAMPLING_OUTPUT {
        return Err(format!("wrote more than {MAX_SAMPLING_OUTPUT} bytes"));
    }
    let text = String::from_utf8(bytes).map_err(|_| "wrote text that is not UTF-8".to_owned())?;
    match toolwire::harness::parse_strict(text.trim()) {
        Ok(Value::Object(mut answer)) => {
            if !answer.contains_key("content") {
                return Err("answered JSON without `content`".into());
            }
            answer
                .entry("role")
                .or_insert_with(|| Value::from("assistant"));
            answer
                .entry("model")
                .or_insert_with(|| Value::from(command.to_owned()));
            Ok(Value::Object(answer))
        }
        _ if text.trim().is_empty() => Err("wrote nothing".into()),
        _ => Ok(json!({"role": "assistant", "model": command,
                       "content": {"type": "text", "text": text.trim_end()}})),
    }
}

/// The user's shell running `command`.
fn shell(command: &str) -> Command {
    if cfg!(windows) {
        let mut shell = Command::new("cmd");
        shell.args(["/C", command]);
        shell
    } else {
        let mut shell = Command::new("/bin/sh");
        shell.args(["-c", command]);
        shell
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_typed_by_the_field() {
        let choice = json!({"type": "string", "enum": ["red", "blue"]});
        assert_eq!(typed("red", &choice).unwrap(), json!("red"));
        assert!(typed("green", &choice).is_err());
        assert_eq!(
            typed("yes", &json!({"type": "boolean"})).unwrap(),
            json!(true)
        );
        assert_eq!(typed("42", &json!({"type": "integer"})).unwrap(), json!(42));
        assert!(typed("4.5", &json!({"type": "integer"})).is_err());
        let many = json!({"type": "array", "items": {"enum": ["a", "b", "c"]}});
        assert_eq!(typed("a, c", &many).unwrap(), json!(["a", "c"]));
        assert_eq!(file_uri("/tmp/a b"), "file:///tmp/a%20b");
    }
}

//! What the command answers when the server asks: `--root DIR` answers roots/list; sampling
//! is declined with a clear message unless `--sampling-command` answers it; elicitation is
//! declined without a terminal, or answered by `--elicit accept-defaults|decline`; every
//! refusal is reported as toolwire's. (The terminal dialog: tests/cli/pty_elicit.rs.)
#![cfg(feature = "cli")]

use crate::support::cli;

use cli::{run_args, scratch, tool_server, transcript, Run};
use serde_json::{json, Value};

/// `toolwire call ask method=METHOD params:=PARAMS EXTRA -- tool_server --catalog`.
fn ask(method: &str, params: &Value, extra: &[&str]) -> Run {
    let server = tool_server();
    let method = format!("method={method}");
    let params = format!("params:={params}");
    let mut all = vec!["call", "ask", method.as_str(), params.as_str()];
    all.extend_from_slice(extra);
    all.extend(["--", server.to_str().unwrap(), "--catalog"]);
    run_args(&all)
}

fn answer(run: &Run) -> Value {
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|error| panic!("{error}: {run:?}"))
}

const NOTE: &str = "(toolwire's refusal, not the server's failure)";

#[test]
fn roots_are_the_root_folders() {
    let one = scratch("root-a");
    let two = scratch("root b");
    let run = ask(
        "roots/list",
        &json!({}),
        &[
            "--root",
            one.to_str().unwrap(),
            "--root",
            two.to_str().unwrap(),
        ],
    )
    .expect(0);
    let roots = answer(&run)["roots"].as_array().unwrap().clone();
    assert_eq!(roots.len(), 2, "{roots:?}");
    let real = one.canonicalize().unwrap();
    assert_eq!(roots[0]["uri"], format!("file://{}", real.display()));
    assert_eq!(
        roots[0]["name"],
        real.file_name().unwrap().to_str().unwrap()
    );
    // A space is percent-encoded.
    assert!(
        roots[1]["uri"].as_str().unwrap().ends_with("root%20b"),
        "{roots:?}"
    );
    // Without --root: none, and roots is still declared.
    let run = ask("roots/list", &json!({}), &[]).expect(0);
    assert_eq!(answer(&run), json!({"roots": []}));
    // A root that is not a folder is a usage error before anything starts.
    let file = one.join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let bad = ask(
        "roots/list",
        &json!({}),
        &["--root", file.to_str().unwrap()],
    )
    .expect(2);
    assert!(bad.stderr.contains("not a folder"), "{}", bad.stderr);
}

#[test]
fn the_client_declares_roots_sampling_and_elicitation() {
    let dir = scratch("capabilities");
    let file = dir.join("t.jsonl");
    cli::run_tool_server(&["ping", "--transcript", file.to_str().unwrap()]).expect(0);
    let lines = transcript(&file);
    let initialize = cli::sent(&lines, "initialize");
    let capabilities = &initialize[0]["params"]["capabilities"];
    for name in ["roots", "sampling", "elicitation"] {
        assert!(capabilities.get(name).is_some(), "{name} in {capabilities}");
    }
}

fn sampling_request() -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
           "maxTokens": 20})
}

#[test]
fn sampling_is_declined_clearly_by_default() {
    let run = ask("sampling/createMessage", &sampling_request(), &[]).expect(1);
    // The server saw our refusal (-1, user rejected) and said so in its result.
    assert!(
        run.stdout
            .contains("-1 toolwire declined sampling: the user gave no --sampling-command"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(&format!(
            "toolwire: note: declined the server's request to sample a model \
             (sampling/createMessage): no --sampling-command was given {NOTE}"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn a_sampling_command_gets_the_request_and_its_answer_is_used() {
    let dir = scratch("sampling");
    let seen = dir.join("request.json");
    // A JSON answer is used as it is; the command saw the request on stdin.
    let command = format!(
        "cat > '{}'; echo '{{\"role\": \"assistant\", \"model\": \"fake-1\", \"content\": {{\"type\": \"text\", \"text\": \"hi there\"}}}}'",
        seen.display()
    );
    let run = ask(
        "sampling/createMessage",
        &sampling_request(),
        &["--sampling-command", &command],
    )
    .expect(0);
    let result = answer(&run);
    assert_eq!(result["model"], "fake-1");
    assert_eq!(result["content"]["text"], "hi there");
    let request: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(request["messages"][0]["content"]["text"], "Say hi");
    assert!(!run.stderr.contains("note:"), "{}", run.stderr);

    // Plain text is taken as the assistant's text.
    let run = ask(
        "sampling/createMessage",
        &sampling_request(),
        &["--sampling-command", "echo plain words"],
    )
    .expect(0);
    let result = answer(&run);
    assert_eq!(result["role"], "assistant");
    assert_eq!(
        result["content"],
        json!({"type": "text", "text": "plain words"})
    );

    // A failing command is our failure, said so.
    let run = ask(
        "sampling/createMessage",
        &sampling_request(),
        &["--sampling-command", "exit 9"],
    )
    .expect(1);
    assert!(
        run.stdout
            .contains("toolwire's --sampling-command failed: exited with"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("could not answer the server's sampling/createMessage")
            && run.stderr.contains(NOTE),
        "{}",
        run.stderr
    );
}

fn elicitation_request() -> Value {
    json!({"message": "Who are you?", "requestedSchema": {"type": "object",
        "properties": {"name": {"type": "string", "default": "Ada"},
                       "age": {"type": "integer"}},
        "required": ["age"]}})
}

#[test]
fn elicitation_without_a_terminal_is_declined_or_answered_by_the_option() {
    // stdin is not a terminal: declined, and said to be ours.
    let run = ask("elicitation/create", &elicitation_request(), &[]).expect(0);
    assert_eq!(answer(&run), json!({"action": "decline"}));
    assert!(
        run.stderr.contains(
            "declined the server's elicitation (\"Who are you?\"): there is no terminal to ask on"
        ) && run.stderr.contains(NOTE),
        "{}",
        run.stderr
    );
    let run = ask(
        "elicitation/create",
        &elicitation_request(),
        &["--elicit", "accept-defaults"],
    )
    .expect(0);
    assert_eq!(
        answer(&run),
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    assert!(!run.stderr.contains("note:"), "{}", run.stderr);
    let run = ask(
        "elicitation/create",
        &elicitation_request(),
        &["--elicit", "decline"],
    )
    .expect(0);
    assert_eq!(answer(&run), json!({"action": "decline"}));
    assert!(
        run.stderr.contains("as --elicit decline asks"),
        "{}",
        run.stderr
    );
}

//! The several tool calls of one assistant message handled as one (`Harness::handle_all`,
//! `Harness::handle_message`): admitted in their order within zero-queue admission (no free
//! worker is `BUSY` at once, never queued) and the attempt budget (one unit per admitted
//! call), run side by side, answered one per call in the calls' order, within the caller's
//! deadline, and with no thread left behind.

use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use serde_json::{json, Value};
use toolwire::harness::{AuditKind, RetryPolicy, ToolFailure};
use toolwire::{
    CallShape, Error, Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry,
};

// The tests here count the process's `toolwire-batch` threads, so they run one at a time.
use crate::support::{serial, Recorder};

/// Long enough never to pass in a healthy run; reaching it fails the test instead of hanging
/// it.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// The tools: `hold` (says it started, then waits for the latch or its cancel flag) and
/// `echo` (answers at once).
struct Tools {
    started: Receiver<i64>,
    cancelled: Receiver<i64>,
    release: Sender<()>,
}

fn registry() -> (ToolRegistry, Tools) {
    let (started_tx, started) = unbounded::<i64>();
    let (cancelled_tx, cancelled) = unbounded::<i64>();
    let (release, latch) = unbounded::<()>();
    let mut registry = ToolRegistry::new();
    registry
        .register(LocalTool::new(
            "hold",
            "Holds its worker until released.",
            json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}),
            move |args, cancel| {
                let n = args["n"].as_i64().unwrap();
                let _ = started_tx.send(n);
                let began = Instant::now();
                // Polls its cancel flag, as a well-behaved tool does, until released.
                while began.elapsed() < HANG_GUARD {
                    if latch.recv_timeout(Duration::from_millis(5)).is_ok() {
                        return Ok(Some(json!(format!("held {n}"))));
                    }
                    if cancel.is_cancelled() {
                        let _ = cancelled_tx.send(n);
                        return Ok(Some(json!("cancelled")));
                    }
                }
                Ok(Some(json!("hang guard")))
            },
        ))
        .unwrap();
    registry
        .register(LocalTool::new(
            "echo",
            "Returns its text.",
            json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}),
            |args, _| Ok(Some(args["text"].clone())),
        ))
        .unwrap();
    (
        registry,
        Tools {
            started,
            cancelled,
            release,
        },
    )
}

fn openai(id: &str, name: &str, arguments: Value) -> String {
    json!({"id": id, "type": "function",
           "function": {"name": name, "arguments": arguments.to_string()}})
    .to_string()
}

/// The names of this process's threads (Linux).
fn thread_names() -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let comm = task.unwrap().path().join("comm");
        if let Ok(name) = std::fs::read_to_string(comm) {
            names.push(name.trim().to_owned());
        }
    }
    names
}

fn batch_threads() -> usize {
    thread_names()
        .iter()
        .filter(|name| *name == "toolwire-batch")
        .count()
}

#[test]
fn more_calls_than_workers_some_busy_at_once_order_kept_budget_charged_all_answered() {
    let _serial = serial();
    let (registry, tools) = registry();
    let (busy_tx, busy) = unbounded::<String>();
    let config = HarnessConfig::default().workers(2).observer(move |event| {
        if event.kind == AuditKind::Busy {
            let _ = busy_tx.send(event.call_id.clone().unwrap_or_default());
        }
    });
    let harness = Harness::new(registry, config).unwrap();
    let calls = [
        openai("c1", "hold", json!({"n": 1})),
        openai("c2", "hold", json!({"n": "two"})),
        openai("c3", "hold", json!({"n": 3})),
        openai("c4", "hold", json!({"n": 4})),
        openai("c5", "nothing-here", json!({})),
        openai("c6", "echo", json!({"text": "six"})),
    ];
    // The tools are released only once both admitted calls run at the same time and the two
    // calls that found no worker were refused: if either were queued, the latch would wait
    // for it, reach the guard, and fail the test. The batch's own threads are counted while
    // the calls hold their workers.
    let release = tools.release.clone();
    let watcher = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for _ in 0..2 {
            seen.push(tools.started.recv_timeout(HANG_GUARD).ok());
        }
        let mut refused = Vec::new();
        for _ in 0..2 {
            refused.push(busy.recv_timeout(HANG_GUARD).ok());
        }
        // The batch starts its threads once every call is admitted or refused.
        let began = Instant::now();
        let mut during = batch_threads();
        while during == 0 && began.elapsed() < HANG_GUARD {
            std::thread::sleep(Duration::from_millis(1));
            during = batch_threads();
        }
        for _ in 0..2 {
            let _ = release.send(());
        }
        (seen, refused, during)
    });
    let replies = harness.handle_all(CallShape::OpenAi, &calls);
    let (mut seen, refused, during) = watcher.join().unwrap();
    seen.sort();
    assert_eq!(
        seen,
        vec![Some(1), Some(3)],
        "both admitted calls ran at once"
    );
    assert_eq!(
        refused,
        vec![Some("c4".to_owned()), Some("c6".to_owned())],
        "the calls past the free workers were refused while the others held them"
    );
    // c1 waits on a batch thread, c3 (the last call with something to wait for) on ours.
    assert_eq!(during, 1);

    let ids: Vec<_> = replies.iter().map(|reply| reply.call_id.clone()).collect();
    let expected_ids: Vec<_> = (1..=6).map(|n| Some(format!("c{n}"))).collect();
    assert_eq!(ids, expected_ids, "one reply per call, in the calls' order");
    let statuses: Vec<_> = replies.iter().map(|reply| reply.outcome.status).collect();
    assert_eq!(
        statuses,
        vec![
            Status::Ok,
            Status::Invalid,
            Status::Ok,
            Status::Busy,
            Status::UnknownTool,
            Status::Busy
        ]
    );
    assert_eq!(replies[0].message()["content"], "held 1");
    assert_eq!(replies[2].message()["content"], "held 3");
    let busy_text = replies[3].message()["content"].as_str().unwrap().to_owned();
    assert!(
        busy_text.starts_with(
            "BUSY: no worker is free (2 of 2 busy); nothing was run and nothing was queued"
        ),
        "{busy_text}"
    );
    let attempts: Vec<_> = replies.iter().map(|reply| reply.outcome.attempts).collect();
    assert_eq!(attempts, vec![1, 0, 1, 0, 0, 0]);
    assert_eq!(
        harness.budget().used,
        2,
        "one unit per admitted call, none for the rest"
    );

    // Nothing is left behind: the batch's threads are joined, the workers are free.
    assert_eq!(batch_threads(), 0);
    assert!(harness.wait_idle(HANG_GUARD));
    assert_eq!(harness.busy_workers(), 0);
    // The freed workers take the refused calls now.
    let again = harness.handle_all(CallShape::OpenAi, &[&calls[5]]);
    assert_eq!(again[0].outcome.status, Status::Ok);
    harness.close();
}

#[test]
fn the_budget_is_charged_per_call_and_the_calls_past_it_are_budget() {
    let _serial = serial();
    let (registry, _tools) = registry();
    let harness = Harness::new(
        registry,
        HarnessConfig::default().workers(8).attempt_budget(3),
    )
    .unwrap();
    let calls: Vec<String> = (1..=5)
        .map(|n| openai(&format!("e{n}"), "echo", json!({"text": format!("#{n}")})))
        .collect();
    let replies = harness.handle_all(CallShape::OpenAi, &calls);
    let statuses: Vec<_> = replies.iter().map(|reply| reply.outcome.status).collect();
    assert_eq!(
        statuses,
        vec![
            Status::Ok,
            Status::Ok,
            Status::Ok,
            Status::Budget,
            Status::Budget
        ]
    );
    let texts: Vec<_> = replies[..3]
        .iter()
        .map(|reply| reply.message()["content"].clone())
        .collect();
    assert_eq!(texts, vec![json!("#1"), json!("#2"), json!("#3")]);
    assert_eq!(harness.budget().used, 3);
    harness.close();
}

#[test]
fn the_callers_deadline_ends_the_calls_still_running() {
    let _serial = serial();
    let (registry, tools) = registry();
    let harness = Harness::new(registry, HarnessConfig::default().workers(2)).unwrap();
    let calls = [
        openai("slow", "hold", json!({"n": 7})),
        openai("quick", "echo", json!({"text": "fast"})),
    ];
    let wait = Duration::from_millis(300);
    let began = Instant::now();
    let replies = harness.handle_all_until(CallShape::OpenAi, &calls, began + wait);
    assert!(began.elapsed() >= wait, "returned before the deadline");
    assert_eq!(replies[0].outcome.status, Status::Timeout);
    assert!(
        replies[0]
            .outcome
            .detail
            .starts_with("the tool did not answer before the caller's deadline"),
        "{}",
        replies[0].outcome.detail
    );
    assert_eq!(replies[1].outcome.status, Status::Ok);
    assert_eq!(replies[1].message()["content"], "fast");
    // The abandoned call was told to stop, and stopped.
    assert_eq!(tools.cancelled.recv_timeout(HANG_GUARD), Ok(7));
    assert!(harness.wait_idle(HANG_GUARD));
    assert_eq!(harness.budget().used, 2);

    // A deadline already past runs nothing and spends nothing.
    let replies = harness.handle_all_until(CallShape::OpenAi, &calls, Instant::now());
    for reply in &replies {
        assert_eq!(reply.outcome.status, Status::Timeout);
        assert_eq!(reply.outcome.attempts, 0);
        assert!(reply
            .outcome
            .detail
            .contains("had passed before the call could start"));
    }
    assert_eq!(harness.budget().used, 2);
    assert!(
        tools.started.try_iter().eq([7]),
        "only the first slow call ran"
    );
    harness.close();
}

#[test]
fn calls_past_the_per_message_limit_are_answered_invalid_and_not_run() {
    let _serial = serial();
    let (registry, _tools) = registry();
    let harness =
        Harness::new(registry, HarnessConfig::default().max_calls_per_message(2)).unwrap();
    let calls: Vec<String> = (1..=3)
        .map(|n| openai(&format!("m{n}"), "echo", json!({"text": "x"})))
        .collect();
    let replies = harness.handle_all(CallShape::OpenAi, &calls);
    assert_eq!(replies.len(), 3);
    assert_eq!(replies[0].outcome.status, Status::Ok);
    assert_eq!(replies[1].outcome.status, Status::Ok);
    assert_eq!(replies[2].outcome.status, Status::Invalid);
    assert_eq!(replies[2].call_id.as_deref(), Some("m3"));
    assert!(replies[2]
        .outcome
        .detail
        .contains("the message holds 3 tool calls, more than the 2 handled at once"));
    assert_eq!(harness.budget().used, 2);
    harness.close();
}

/// An assistant message in `shape` with three calls (one good, one with a repeated key in its
/// arguments, one of an unknown tool) among the other content the APIs put there.
fn assistant_message(shape: CallShape) -> String {
    match shape {
        CallShape::OpenAi => json!({
            "role": "assistant", "content": null, "refusal": null,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"one\"}"}},
                {"id": "b", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"x\",\"text\":\"y\"}"}},
                {"id": "c", "type": "function", "function": {"name": "nope", "arguments": "{}"}}
            ]
        })
        .to_string(),
        CallShape::OpenAiResponses => json!({
            "id": "resp_1", "object": "response", "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call", "id": "fc_a", "call_id": "a", "name": "echo",
                 "arguments": "{\"text\":\"one\"}", "status": "completed"},
                {"type": "function_call", "id": "fc_b", "call_id": "b", "name": "echo",
                 "arguments": "{\"text\":\"x\",\"text\":\"y\"}", "status": "completed"},
                {"type": "message", "role": "assistant", "content": []},
                {"type": "function_call", "id": "fc_c", "call_id": "c", "name": "nope",
                 "arguments": "{}", "status": "completed"}
            ]
        })
        .to_string(),
        // The repeated key sits in the inline arguments: serializers never write one, so
        // these two are written by hand.
        CallShape::Anthropic => r#"{"id":"msg_1","type":"message","role":"assistant",
            "content":[
              {"type":"thinking","thinking":"Three calls.","signature":"sig"},
              {"type":"tool_use","id":"a","name":"echo","input":{"text":"one"}},
              {"type":"tool_use","id":"b","name":"echo","input":{"text":"x","text":"y"}},
              {"type":"text","text":"and"},
              {"type":"tool_use","id":"c","name":"nope","input":{}}],
            "stop_reason":"tool_use"}"#
            .to_owned(),
        CallShape::Gemini => r#"{"role":"model","parts":[
              {"text":"Three calls."},
              {"functionCall":{"id":"a","name":"echo","args":{"text":"one"}},"thoughtSignature":"c2ln"},
              {"functionCall":{"id":"b","name":"echo","args":{"text":"x","text":"y"}}},
              {"functionCall":{"id":"c","name":"nope","args":{}}}]}"#
            .to_owned(),
        _ => json!([
            {"tool": "echo", "arguments": {"text": "one"}},
            {"tool": "echo", "arguments": {"text": 2}},
            {"tool": "nope", "arguments": {}}
        ])
        .to_string(),
    }
}

#[test]
fn a_whole_message_in_every_shape_is_answered_call_by_call_in_its_shape() {
    let _serial = serial();
    let (registry, _tools) = registry();
    let harness = Harness::new(registry, HarnessConfig::default()).unwrap();
    for shape in CallShape::ALL {
        let reply = harness
            .handle_message(shape, &assistant_message(shape))
            .unwrap_or_else(|error| panic!("{shape:?}: {error}"));
        let statuses: Vec<_> = reply.replies.iter().map(|r| r.outcome.status).collect();
        assert_eq!(
            statuses,
            vec![Status::Ok, Status::Invalid, Status::UnknownTool],
            "{shape:?}"
        );
        let messages = reply.messages();
        match shape {
            CallShape::OpenAi => {
                let ids: Vec<_> = messages.iter().map(|m| m["tool_call_id"].clone()).collect();
                assert_eq!(ids, vec![json!("a"), json!("b"), json!("c")]);
                assert_eq!(messages[0]["content"], "one");
                let text = messages[1]["content"].as_str().unwrap();
                assert!(text.contains("duplicate key \"text\""), "{text}");
            }
            CallShape::OpenAiResponses => {
                let ids: Vec<_> = messages.iter().map(|m| m["call_id"].clone()).collect();
                assert_eq!(ids, vec![json!("a"), json!("b"), json!("c")]);
                assert!(messages.iter().all(|m| m["type"] == "function_call_output"));
                assert_eq!(messages[0]["output"], "one");
            }
            CallShape::Anthropic => {
                assert_eq!(messages.len(), 1);
                assert_eq!(messages[0]["role"], "user");
                let blocks = messages[0]["content"].as_array().unwrap();
                let ids: Vec<_> = blocks.iter().map(|b| b["tool_use_id"].clone()).collect();
                assert_eq!(ids, vec![json!("a"), json!("b"), json!("c")]);
                let errors: Vec<_> = blocks.iter().map(|b| b["is_error"].clone()).collect();
                assert_eq!(errors, vec![json!(false), json!(true), json!(true)]);
            }
            CallShape::Gemini => {
                assert_eq!(messages.len(), 1);
                assert_eq!(messages[0]["role"], "user");
                let parts = messages[0]["parts"].as_array().unwrap();
                let answers: Vec<_> = parts
                    .iter()
                    .map(|p| {
                        let response = &p["functionResponse"];
                        (response["id"].clone(), response["name"].clone())
                    })
                    .collect();
                assert_eq!(
                    answers,
                    vec![
                        (json!("a"), json!("echo")),
                        (json!("b"), json!("echo")),
                        (json!("c"), json!("nope"))
                    ]
                );
                assert_eq!(
                    parts[0]["functionResponse"]["response"],
                    json!({"output": "one"})
                );
                assert!(parts[1]["functionResponse"]["response"]["error"].is_string());
            }
            _ => {
                assert_eq!(messages.len(), 3);
                assert_eq!(
                    messages[0],
                    json!({"status": "OK", "result": "one", "detail": ""})
                );
            }
        }
    }
    // One good call per shape ran.
    assert_eq!(harness.budget().used, CallShape::ALL.len() as u32);
    // A message without calls needs no answer.
    let text_only = harness
        .handle_message(CallShape::OpenAi, r#"{"role":"assistant","content":"Hi."}"#)
        .unwrap();
    assert!(text_only.replies.is_empty() && text_only.messages().is_empty());
    harness.close();
}

#[test]
fn a_message_that_is_not_of_its_shape_is_an_error_and_runs_nothing() {
    let _serial = serial();
    let (registry, _tools) = registry();
    let harness = Harness::new(registry, HarnessConfig::default().max_message_chars(400)).unwrap();
    let long = format!(
        r#"{{"role":"assistant","content":"{}","tool_calls":[]}}"#,
        "x".repeat(400)
    );
    for (shape, message, reason) in [
        (CallShape::OpenAi, "{\"tool_calls\": [", "could not be read"),
        (
            CallShape::OpenAi,
            r#"{"role":"user","tool_calls":[]}"#,
            "the role \"user\"",
        ),
        (
            CallShape::OpenAi,
            r#"{"tool_calls":[],"tool_calls":[{"id":"hidden"}]}"#,
            "duplicate field `tool_calls`",
        ),
        (CallShape::OpenAi, long.as_str(), "more than 400 characters"),
        (
            CallShape::Gemini,
            r#"{"role":"user","parts":[]}"#,
            "\"model\"",
        ),
        (
            CallShape::Plain,
            r#"{"tool":"echo"}"#,
            "must be a JSON array",
        ),
    ] {
        match harness.handle_message(shape, message) {
            Err(Error::Protocol(text)) => assert!(text.contains(reason), "{reason}: {text}"),
            other => panic!("{shape:?} {message}: {other:?}"),
        }
    }
    assert_eq!(harness.budget().used, 0);
    harness.close();
}

#[test]
fn replies_wait_for_every_call_even_when_one_takes_longer() {
    let _serial = serial();
    // The batch returns only when every call has its answer: a quick call does not end it.
    let (registry, tools) = registry();
    let harness = Harness::new(registry, HarnessConfig::default().workers(3)).unwrap();
    let calls = [
        openai("q1", "echo", json!({"text": "first"})),
        openai("h", "hold", json!({"n": 9})),
        openai("q2", "echo", json!({"text": "last"})),
    ];
    let (done_tx, done) = bounded::<()>(1);
    let release = tools.release.clone();
    let started = tools.started.clone();
    let releaser = std::thread::spawn(move || {
        let ran = started.recv_timeout(HANG_GUARD).is_ok();
        // The batch must still be waiting for the held call.
        let returned_early = done.recv_timeout(Duration::from_millis(100)).is_ok();
        let _ = release.send(());
        (ran, returned_early)
    });
    let replies = harness.handle_all(CallShape::OpenAi, &calls);
    let _ = done_tx.send(());
    let (ran, returned_early) = releaser.join().unwrap();
    assert!(ran && !returned_early);
    let texts: Vec<_> = replies
        .iter()
        .map(|reply| reply.message()["content"].clone())
        .collect();
    assert_eq!(texts, vec![json!("first"), json!("held 9"), json!("last")]);
    harness.close();
}

#[test]
fn a_retry_that_would_end_past_the_callers_deadline_is_not_begun() {
    let _serial = serial();
    let mut registry = ToolRegistry::new();
    let policy = RetryPolicy::new()
        .max_attempts(3)
        .delays(Duration::from_secs(5), Duration::from_secs(5))
        .jitter(0.0);
    registry
        .register(
            LocalTool::new(
                "fetch",
                "Fetches, over a link that is down.",
                json!({"type": "object"}),
                |_, _| Err(ToolFailure::transport("connection refused")),
            )
            .options(ToolOptions::new().idempotent(true).retry(policy)),
        )
        .unwrap();
    let recorder = Recorder::default();
    let harness =
        Harness::new(registry, HarnessConfig::default().sleeper(recorder.clone())).unwrap();
    let calls = [r#"{"tool":"fetch","arguments":{}}"#; 2];
    // Without a deadline both calls take every attempt, each with its back-off.
    let replies = harness.handle_all(CallShape::Plain, &calls);
    for reply in &replies {
        assert_eq!(reply.outcome.status, Status::ToolError);
        assert_eq!(reply.outcome.attempts, 3);
    }
    assert_eq!(recorder.0.lock().unwrap().len(), 4);
    // With one that a 5 s back-off would pass, each call ends after its first attempt.
    let deadline = Instant::now() + Duration::from_secs(2);
    let replies = harness.handle_all_until(CallShape::Plain, &calls, deadline);
    for reply in &replies {
        assert_eq!(reply.outcome.status, Status::ToolError);
        assert_eq!(reply.outcome.attempts, 1);
        assert!(
            reply
                .outcome
                .detail
                .ends_with("(not retried: the caller's deadline would pass first)"),
            "{}",
            reply.outcome.detail
        );
    }
    assert_eq!(recorder.0.lock().unwrap().len(), 4, "no back-off was taken");
    assert_eq!(harness.budget().used, 8);
    harness.close();
}

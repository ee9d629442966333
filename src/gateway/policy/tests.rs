//! The policy document's reading.

use super::*;

#[test]
fn levels_resolve_tool_over_server_over_top() {
    let policy = Policy::parse(
        r#"{"timeout": "long", "result_chars": 100,
            "servers": {"a": {"timeout": "fast", "concurrency": 2,
                              "tools": {"t": {"timeout": "250ms", "idempotent": true}}}}}"#,
    )
    .unwrap();
    let tool = policy.resolve("a", "t");
    assert_eq!(
        tool.options.timeout,
        ToolTimeout::Custom(Duration::from_millis(250))
    );
    assert_eq!(tool.options.result_limit.max_chars, 100);
    assert_eq!(tool.idempotent, Some(true));
    assert_eq!(policy.resolve("a", "u").options.timeout, ToolTimeout::Fast);
    assert_eq!(policy.resolve("b", "u").options.timeout, ToolTimeout::Long);
    assert_eq!((policy.concurrency("a"), policy.concurrency("b")), (2, 4));
}

#[test]
fn allow_and_deny_lists_refuse_by_the_backend_name() {
    let policy =
        Policy::parse(r#"{"servers": {"a": {"allow": ["x", "y"], "deny": ["y"]}}}"#).unwrap();
    assert_eq!(policy.refusal("a", "x"), None);
    assert!(policy.refusal("a", "y").unwrap().contains("deny"));
    assert!(policy.refusal("a", "z").unwrap().contains("allow"));
    assert_eq!(policy.refusal("b", "z"), None);
}

#[test]
fn bad_documents_are_errors_naming_the_place() {
    for (text, wanted) in [
        (
            r#"{"servers": {"a": {"alow": []}}}"#,
            "\"alow\" at /servers/a",
        ),
        (
            r#"{"concurrency": 0}"#,
            "/concurrency must be an integer from 1",
        ),
        (r#"{"timeout": "2h"}"#, "1 ms to 1 hour"),
        (r#"{"timeout": "soon"}"#, "\"fast\""),
        (r#"{"namespace": "x_{server}"}"#, "must hold {tool}"),
        (
            r#"{"servers": {"a": {"tools": {"t": {"deny": true}}}}}"#,
            "\"deny\" at /servers/a/tools/t",
        ),
        (r#"{"concurrency": 2, "concurrency": 3}"#, "concurrency"),
        (r#"{"servers": {"a": {"deny": ["x", 1]}}}"#, "only strings"),
        (r#"[]"#, "document must be an object"),
        (r#"{"budget_window": "500ms"}"#, "1 s to 24 hours"),
        (r#"{"budget_window": "25h"}"#, "1 s to 24 hours"),
        (r#"{"budget_window": 60}"#, "such as \"30s\""),
        (
            r#"{"calls_per_caller": 1, "calls_per_session": 2}"#,
            "both calls_per_caller and its old name",
        ),
        (
            r#"{"calls_per_caller": 0}"#,
            "/calls_per_caller must be an integer",
        ),
    ] {
        let error = Policy::parse(text).unwrap_err().to_string();
        assert!(error.contains(wanted), "{text}: {error}");
    }
    let huge = format!("{{\"namespace\": \"{}\"}}", "x".repeat(MAX_POLICY_BYTES));
    assert!(Policy::parse(&huge)
        .unwrap_err()
        .to_string()
        .contains("over the limit"));
}

#[test]
fn the_budget_is_calls_per_caller_and_window_and_the_old_name_still_reads() {
    let policy = Policy::parse(r#"{"calls_per_caller": 7, "budget_window": "2h"}"#).unwrap();
    assert_eq!(policy.caller_budget(), 7);
    assert_eq!(policy.window(), Duration::from_secs(7200));
    let old = Policy::parse(r#"{"calls_per_session": 9}"#).unwrap();
    assert_eq!(old.caller_budget(), 9);
    assert_eq!(old.window(), Duration::from_secs(60), "the default window");
    #[allow(deprecated)]
    let set = Policy::new().calls_per_session(3).unwrap();
    assert_eq!(set.caller_budget(), 3);
    let set = Policy::new().budget_window(Duration::from_secs(1)).unwrap();
    assert_eq!(set.window(), Duration::from_secs(1));
    assert!(Policy::new()
        .budget_window(Duration::from_millis(999))
        .is_err());
}

#[test]
fn the_namespace_template_names_front_tools() {
    let policy = Policy::new().namespace("{server}.{tool}").unwrap();
    assert_eq!(policy.front_name("files", "read"), "files.read");
    assert_eq!(
        Policy::new().front_name("files", "read"),
        "mcp__files__read"
    );
}

//! Deep schemas are read once, within `SchemaLimits::max_depth` (128), and never dropped in
//! silence: input and output schemas 60 and 63 levels deep (the JSON nesting of the schema
//! itself, `{}` being 1) are usable and checked; 130 and 5,000 levels make their tools
//! unusable, with a reason naming the tool and the bound, through the command line (`tools`,
//! `tools --json` never `null`, `call` refused before anything runs), the harness import
//! (skipped for that reason) and the gateway (not served, for that reason). An output check is
//! never skipped because a schema could not be read.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::gateway;
use crate::support::mcp as memory;

use serde_json::{json, Value};
use toolwire::harness::McpImport;
use toolwire::transport::StdioConfig;
use toolwire::{
    CallShape, Error, Harness, HarnessConfig, McpClient, McpConfig, ProtocolMode, Status,
    ToolRegistry,
};

/// A stdio MCP server (python3) listing, for each depth, `inD` (its input schema D levels
/// deep) and `outD` (its output schema D levels deep); each schema is an object whose `a` is
/// arrays of arrays down to an integer. `outD` returns a `structuredContent` that fits its
/// schema when called with `good: true`, and one with a string at the bottom otherwise. Each
/// call is written to stderr.
const SERVER: &str = r#"import json, sys

DEPTHS = [60, 63, 130, 5000]

def chain(k):
    return '{"type":"array","items":' * k + '{"type":"integer"}' + '}' * k

def schema(depth):
    # {} is 1: the object, its properties, then depth - 2 levels of items down to an integer.
    return '{"type":"object","required":["a"],"properties":{"a":' + chain(depth - 3) + '}}'

def instance(depth, leaf):
    k = depth - 3
    return '{"a":' + '[' * k + leaf + ']' * k + '}'

def tools():
    out = []
    for d in DEPTHS:
        out.append('{"name":"in%d","inputSchema":%s}' % (d, schema(d)))
        out.append('{"name":"out%d","inputSchema":{"type":"object"},"outputSchema":%s}' % (d, schema(d)))
    return '[' + ','.join(out) + ']'

def send(text):
    sys.stdout.write(text + '\n')
    sys.stdout.flush()

for line in sys.stdin:
    try:
        message = json.loads(line)
    except Exception:
        continue
    if 'id' not in message or 'method' not in message:
        continue
    ident = json.dumps(message['id'])
    method = message['method']
    params = message.get('params') or {}
    if method == 'initialize':
        version = params.get('protocolVersion', '2025-11-25')
        send('{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%s,"capabilities":{"tools":{}},"serverInfo":{"name":"deep","version":"1"}}}' % (ident, json.dumps(version)))
    elif method == 'tools/list':
        send('{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}' % (ident, tools()))
    elif method == 'tools/call':
        name = params.get('name', '')
        sys.stderr.write('called %s\n' % name)
        sys.stderr.flush()
        if name.startswith('out'):
            depth = int(name[3:])
            good = (params.get('arguments') or {}).get('good', False)
            structured = instance(depth, '1' if good else '"x"')
            send('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ran %s"}],"structuredContent":%s}}' % (ident, name, structured))
        else:
            send('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ran %s"}]}}' % (ident, name))
    else:
        send('{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}' % ident)
"#;

const USABLE: [usize; 2] = [60, 63];
const UNUSABLE: [usize; 2] = [130, 5000];

fn server_args() -> Vec<String> {
    vec!["python3".into(), "-c".into(), SERVER.into()]
}

/// `a`'s value for `inD`: arrays nested as deep as the schema's, around `leaf`.
fn argument(depth: usize, leaf: &str) -> String {
    let k = depth - 3;
    format!("{}{leaf}{}", "[".repeat(k), "]".repeat(k))
}

fn toolwire(args: &[&str]) -> cli::Run {
    let mut all: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
    all.push("--".into());
    all.extend(server_args());
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    cli::run_args(&all)
}

fn assert_names_the_bound(reason: &str, tool: &str) {
    assert!(
        reason.contains(&format!("`{tool}`")) && reason.contains("SchemaLimits::max_depth"),
        "{reason}"
    );
}

#[test]
fn the_command_line_lists_checks_and_refuses_by_depth() {
    let listed = toolwire(&["tools", "--json"]).expect(0);
    let tools: Vec<Value> = serde_json::from_str(&listed.stdout).expect("JSON");
    assert_eq!(tools.len(), 8, "{}", listed.stdout);
    assert!(
        tools.iter().all(|tool| tool.is_object()),
        "a null in the list"
    );
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let depth: usize = name
            .trim_start_matches(['i', 'n', 'o', 'u', 't'])
            .parse()
            .unwrap();
        if UNUSABLE.contains(&depth) {
            assert_names_the_bound(tool["unusable"].as_str().expect("unusable"), name);
            assert!(tool.get("inputSchema").is_none(), "{tool}");
        } else {
            assert!(tool.get("unusable").is_none(), "{tool}");
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        }
    }
    let table = toolwire(&["tools"]).expect(0);
    for line in table.stdout.lines().filter(|line| line.starts_with("in")) {
        let unusable = line.starts_with("in130") || line.starts_with("in5000");
        assert_eq!(line.contains("(unusable: "), unusable, "{line}");
        assert_eq!(line.contains("a: array"), !unusable, "{line}");
    }
    let shown = toolwire(&["tools", "in130"]).expect(0);
    assert!(
        !shown.stdout.contains("input schema: {}"),
        "{}",
        shown.stdout
    );
    assert_names_the_bound(&shown.stdout, "in130");
    for depth in USABLE {
        let name = format!("in{depth}");
        let fits = format!("a:={}", argument(depth, "1"));
        let ran = toolwire(&["call", &name, &fits]).expect(0);
        assert!(ran.stdout.contains(&format!("ran {name}")), "{ran:?}");
        // Checked all the way down: a string at the bottom is refused before it is sent.
        let misfit = format!("a:={}", argument(depth, "\"x\""));
        let refused = toolwire(&["call", &name, &misfit]).expect(2);
        assert!(refused.stderr.contains("nothing was run"), "{refused:?}");
        let name = format!("out{depth}");
        let good = toolwire(&["call", &name, "good:=true"]).expect(0);
        assert!(good.stdout.contains(&format!("ran {name}")), "{good:?}");
        let bad = toolwire(&["call", &name]).expect(4);
        assert!(bad.stderr.contains("does not match its schema"), "{bad:?}");
    }
    for depth in UNUSABLE {
        for name in [format!("in{depth}"), format!("out{depth}")] {
            let refused = toolwire(&["call", &name]).expect(4);
            assert!(refused.stderr.contains("nothing was run"), "{refused:?}");
            assert_names_the_bound(&refused.stderr, &name);
            assert!(!refused.stdout.contains("ran "), "{refused:?}");
        }
    }
}

#[test]
fn the_harness_import_skips_the_unusable_tools_naming_the_bound() {
    let stdio = StdioConfig::new("python3").args(["-c", SERVER]);
    let client = McpClient::connect_stdio(stdio, McpConfig::default()).expect("connect");
    let mut registry = ToolRegistry::new();
    let report = registry
        .import_mcp(&client, &McpImport::new("deep"))
        .expect("the import");
    assert_eq!(report.imported.len(), 4, "{report:?}");
    assert_eq!(report.skipped.len(), 4, "{report:?}");
    for skipped in &report.skipped {
        assert_names_the_bound(&skipped.reason, &skipped.name);
    }
    let harness = Harness::new(registry, HarnessConfig::default()).expect("harness");
    let call = |tool: String, arguments: String| {
        let text = format!(r#"{{"tool":"mcp__deep__{tool}","arguments":{arguments}}}"#);
        harness.handle(CallShape::Plain, &text).outcome
    };
    for depth in USABLE {
        let fits = format!(r#"{{"a":{}}}"#, argument(depth, "1"));
        assert_eq!(call(format!("in{depth}"), fits).status, Status::Ok);
        let misfit = format!(r#"{{"a":{}}}"#, argument(depth, "\"x\""));
        assert_eq!(call(format!("in{depth}"), misfit).status, Status::Invalid);
        let good = call(format!("out{depth}"), r#"{"good":true}"#.into());
        assert_eq!(good.status, Status::Ok, "{good:?}");
        let bad = call(format!("out{depth}"), "{}".into());
        assert_ne!(bad.status, Status::Ok, "{bad:?}");
    }
    for depth in UNUSABLE {
        let refused = call(format!("in{depth}"), "{}".into());
        assert_eq!(refused.status, Status::UnknownTool, "{refused:?}");
    }
    harness.close();
    client.close().unwrap();
}

#[test]
fn the_gateway_serves_the_usable_tools_and_reports_the_rest() {
    let entry = json!({"command": "python3", "args": ["-c", SERVER]});
    let gateway = gateway::gateway(&[("deep", entry)], "{}");
    let report = gateway.report();
    assert!(report.failed.is_empty(), "{report:?}");
    let backend = &report.started[0];
    assert_eq!(backend.skipped.len(), 4, "{backend:?}");
    for skipped in &backend.skipped {
        assert_names_the_bound(&skipped.reason, &skipped.name);
    }
    let (client, connection) = gateway::front(&gateway);
    let tools = client.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    for depth in USABLE {
        let name = format!("mcp__deep__in{depth}");
        let listed = tools.iter().find(|tool| tool.name == name).unwrap();
        assert!(listed.schema_problem().is_none());
        let fits = json!({"a": serde_json::from_str::<Value>(&argument(depth, "1")).unwrap()});
        let ran = client.call_tool(&name, fits).unwrap();
        assert!(!ran.is_error, "{ran:?}");
        let misfit =
            json!({"a": serde_json::from_str::<Value>(&argument(depth, "\"x\"")).unwrap()});
        let refused = client.call_tool(&name, misfit).unwrap();
        assert!(refused.is_error, "{refused:?}");
        let name = format!("mcp__deep__out{depth}");
        let good = client.call_tool(&name, json!({"good": true})).unwrap();
        assert!(!good.is_error, "{good:?}");
        // A wrong structuredContent is never delivered as success.
        let bad = client.call_tool(&name, json!({}));
        assert!(
            bad.as_ref().map_or(true, |result| result.is_error),
            "{bad:?}"
        );
    }
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

/// The text of an object schema `depth` levels deep, as the python server writes it.
fn schema_text(depth: usize) -> String {
    let k = depth - 3;
    format!(
        r#"{{"type":"object","required":["a"],"properties":{{"a":{}{{"type":"integer"}}{}}}}}"#,
        r#"{"type":"array","items":"#.repeat(k),
        "}".repeat(k)
    )
}

#[test]
fn a_call_whose_output_schema_cannot_be_read_fails_instead_of_passing_unchecked() {
    // 127 levels, the most a schema text can nest to be built as a value, is usable.
    let deepest = toolwire::Tool::from_raw(
        serde_json::value::RawValue::from_string(format!(
            r#"{{"name":"t","inputSchema":{}}}"#,
            schema_text(127)
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(deepest.schema_problem(), None);
    let (client, peer) = memory::connect_legacy(memory::config(ProtocolMode::Legacy));
    std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            let call = memory::expect_request(&peer, "tools/call");
            memory::answer(
                &peer,
                &call.id,
                json!({"content": [], "structuredContent": {"a": "not checked"}}),
            );
            // The listing comes when the result is to be checked.
            let list = memory::expect_request(&peer, "tools/list");
            peer.send_line(format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"tools":[{{"name":"out130","inputSchema":{{"type":"object"}},"outputSchema":{}}}]}}}}"#,
                list.id,
                schema_text(130)
            ));
        });
        match client.call_tool("out130", json!({})) {
            Err(Error::Protocol(message)) => {
                assert!(message.contains("cannot be checked"), "{message}");
                assert_names_the_bound(&message, "out130");
            }
            other => panic!("expected the unusable schema's refusal, got {other:?}"),
        }
        server.join().expect("the server");
    });
    memory::finish(&client, &peer);
}

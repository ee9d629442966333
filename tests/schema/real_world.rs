//! The cost of real tool schemas, measured against the defaults of `SchemaLimits`: size,
//! depth and expanded size of every `inputSchema`/`outputSchema` in a folder of JSON files
//! (each a tool, or an array of tools as `tools/list` returns them), and the time to compile.
//!
//! ```text
//! TOOLWIRE_SCHEMA_CORPUS=/path/to/tools cargo test --release --test schema_real_world -- --ignored --nocapture
//! ```
//!
//! The defaults were chosen from this run over the tools of
//! `@modelcontextprotocol/server-everything` (its `tools/list`) and of GitHub's MCP server (the
//! tool snapshots in its repository, `pkg/github/__toolsnaps__`); the numbers are in
//! `SchemaLimits`'s docs.

use std::fs;
use std::path::Path;
use std::time::Instant;

use serde_json::Value;
use toolwire::schema::Schema;

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn schemas_of(value: &Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| schemas_of(item, out)),
        Value::Object(map) => {
            let name = map.get("name").and_then(Value::as_str).unwrap_or("?");
            for key in ["inputSchema", "outputSchema"] {
                if let Some(schema) = map.get(key) {
                    out.push((format!("{name}.{key}"), schema.clone()));
                }
            }
        }
        _ => {}
    }
}

#[test]
#[ignore = "set TOOLWIRE_SCHEMA_CORPUS to a folder of tool JSON files"]
fn real_tool_schemas_fit_the_default_limits() {
    let Some(folder) = std::env::var_os("TOOLWIRE_SCHEMA_CORPUS") else {
        panic!("set TOOLWIRE_SCHEMA_CORPUS to a folder of tool JSON files; this test has none");
    };
    let mut schemas = Vec::new();
    for entry in fs::read_dir(Path::new(&folder)).expect("corpus folder") {
        let path = entry.expect("entry").path();
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            schemas_of(&value, &mut schemas);
        }
    }
    assert!(!schemas.is_empty(), "no tool schemas in the corpus");
    let (mut max_bytes, mut max_depth, mut max_expansion) =
        ((0, String::new()), (0, String::new()), (0, String::new()));
    let started = Instant::now();
    for (name, schema) in &schemas {
        let compiled = Schema::compile(schema)
            .unwrap_or_else(|error| panic!("{name} did not compile: {error}"));
        let bytes = serde_json::to_string(schema).unwrap().len();
        if bytes > max_bytes.0 {
            max_bytes = (bytes, name.clone());
        }
        let nesting = depth(schema);
        if nesting > max_depth.0 {
            max_depth = (nesting, name.clone());
        }
        let expansion = compiled.expanded_size();
        if expansion > max_expansion.0 {
            max_expansion = (expansion, name.clone());
        }
    }
    let elapsed = started.elapsed();
    println!("{} schemas compiled in {elapsed:?}", schemas.len());
    println!("largest:  {} bytes ({})", max_bytes.0, max_bytes.1);
    println!("deepest:  {} levels ({})", max_depth.0, max_depth.1);
    println!("expanded: {} nodes ({})", max_expansion.0, max_expansion.1);
}

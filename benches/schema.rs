//! Schema validation speed: one typical tool-argument object checked against one typical
//! tool input schema (compiled once, validated many times), and a larger nested one. Prints
//! nanoseconds per validation and per compile.
//!
//! ```text
//! cargo bench --bench schema          # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```

#[path = "support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Instant;

use serde_json::{json, Value};
use support::scale;
use toolwire::schema::Schema;

/// A tool schema of the size and shape MCP servers publish (GitHub's `create_issue`).
fn issue_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "Repository owner"},
            "repo": {"type": "string", "description": "Repository name"},
            "title": {"type": "string", "minLength": 1, "maxLength": 256},
            "body": {"type": "string"},
            "assignees": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "labels": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9:_-]+$"}},
            "milestone": {"type": "integer", "minimum": 1},
            "state": {"type": "string", "enum": ["open", "closed"]}
        },
        "required": ["owner", "repo", "title"],
        "additionalProperties": false
    })
}

fn issue_arguments() -> Value {
    json!({
        "owner": "octo-org",
        "repo": "toolwire",
        "title": "Validation of schemas is unbounded",
        "body": "A schema whose refs fan out runs for hours.",
        "assignees": ["alice", "bob"],
        "labels": ["bug", "area:schema"],
        "milestone": 3,
        "state": "open"
    })
}

/// A larger schema with `$defs`, `$ref`, `oneOf` and nested arrays of objects.
fn nested_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                      "required": ["x", "y"], "additionalProperties": false},
            "shape": {"oneOf": [
                {"type": "object", "properties": {"kind": {"const": "circle"}, "center": {"$ref": "#/$defs/point"},
                                                  "radius": {"type": "number", "exclusiveMinimum": 0}},
                 "required": ["kind", "center", "radius"]},
                {"type": "object", "properties": {"kind": {"const": "polygon"},
                                                  "points": {"type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 3}},
                 "required": ["kind", "points"]}
            ]}
        },
        "properties": {
            "name": {"type": "string"},
            "shapes": {"type": "array", "items": {"$ref": "#/$defs/shape"}, "maxItems": 100},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        "required": ["name", "shapes"]
    })
}

fn nested_arguments() -> Value {
    json!({
        "name": "drawing",
        "shapes": [
            {"kind": "circle", "center": {"x": 1.5, "y": 2}, "radius": 3},
            {"kind": "polygon", "points": [{"x": 0, "y": 0}, {"x": 1, "y": 0}, {"x": 0, "y": 1}]},
            {"kind": "circle", "center": {"x": -1, "y": 0.25}, "radius": 0.5}
        ],
        "tags": {"author": "me", "layer": "top"}
    })
}

fn measure(label: &str, schema: &Value, instance: &Value, count: usize) {
    let compiled = Schema::compile(schema).expect("schema");
    assert!(compiled.validate(instance).is_ok());
    let started = Instant::now();
    for _ in 0..count {
        black_box(compiled.validate(black_box(instance)).is_ok());
    }
    let per_validation = started.elapsed().as_nanos() as f64 / count as f64;
    let compile_count = (count / 50).max(10);
    let started = Instant::now();
    for _ in 0..compile_count {
        black_box(Schema::compile(black_box(schema)).is_ok());
    }
    let per_compile = started.elapsed().as_nanos() as f64 / compile_count as f64;
    println!("{label:<28} validate {per_validation:>9.0} ns   compile {per_compile:>10.0} ns");
}

fn main() {
    let count = ((200_000.0 * scale()) as usize).max(1_000);
    measure(
        "issue (8 fields, flat)",
        &issue_schema(),
        &issue_arguments(),
        count,
    );
    measure(
        "shapes ($ref, oneOf, nested)",
        &nested_schema(),
        &nested_arguments(),
        count,
    );
}

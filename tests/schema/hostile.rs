//! Hostile schemas and instances: each is refused or checked within the bounds of
//! `SchemaLimits`, quickly, and nothing overflows the stack. Timings are printed:
//!
//! ```text
//! cargo test --release --test schema_hostile -- --nocapture
//! ```
//!
//! The time assertions are loose (a debug build on a loaded 2-core machine must pass them);
//! the printed numbers are the measurement.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use toolwire::schema::{Schema, SchemaLimits};

/// `d0` refers twice to `d1`, which refers twice to `d2`, … `levels` deep: the expansion is
/// 2^levels while the text stays small.
fn fan_out(levels: usize) -> Value {
    let mut defs = Map::new();
    for level in 0..levels {
        let next = format!("#/$defs/d{}", level + 1);
        defs.insert(
            format!("d{level}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("d{levels}"), json!({"type": "integer"}));
    json!({"$defs": defs, "$ref": "#/$defs/d0"})
}

/// An array whose items must match the fan-out of `levels`.
fn fan_out_items(levels: usize) -> Value {
    let mut schema = fan_out(levels);
    schema["type"] = json!("array");
    schema["items"] = json!({"$ref": "#/$defs/d0"});
    schema.as_object_mut().unwrap().remove("$ref");
    schema
}

/// `[[[…1…]]]`, `depth` arrays deep, built without recursion.
fn nested_arrays(depth: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

/// Drops a deeply nested value one level at a time: serde_json's own drop recurses.
fn dismantle(mut value: Value) {
    loop {
        let next = match &mut value {
            Value::Array(items) => items.pop(),
            Value::Object(map) => map.values_mut().next().map(Value::take),
            _ => None,
        };
        match next {
            Some(inner) => value = inner,
            None => return,
        }
    }
}

fn timed<T>(label: &str, body: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let result = body();
    let elapsed = started.elapsed();
    println!("{label}: {elapsed:?}");
    (result, elapsed)
}

#[test]
fn a_fan_out_of_refs_is_refused_at_compile_in_milliseconds() {
    let schema = fan_out(30);
    let (result, elapsed) = timed("fan-out 30 levels x 2 refs, compile refusal", || {
        Schema::compile(&schema)
    });
    let error = result.unwrap_err();
    assert_eq!(
        error,
        "the schema expands to more than 100000 nodes through its $refs \
         (SchemaLimits::max_expansion)"
    );
    assert!(elapsed < Duration::from_millis(200), "{elapsed:?}");
    // Below the bound the same shape compiles, and its expansion is what was counted.
    let small = Schema::compile(&fan_out(10)).unwrap();
    // Each level is the definition and its two reference nodes: 2^(levels + 2) - 2 in all.
    assert_eq!(small.expanded_size(), (1 << 12) - 2);
    assert!(small.validate(&json!(5)).is_ok());
    assert!(small.validate(&json!("five")).is_err());
}

#[test]
fn the_worst_accepted_schema_stops_at_the_step_budget() {
    // 14 levels expand to 2^16 - 2 = 65,534 nodes, under the bound of 100,000 (15 would be
    // over). Each array item costs that many steps, so a long array runs into the budget.
    let schema = fan_out_items(14);
    let schema = Schema::compile(&schema).unwrap();
    assert!(
        schema.expanded_size() <= 100_000,
        "{}",
        schema.expanded_size()
    );
    let (result, _) = timed(
        "worst accepted (2^14 fan-out) on one item, validate",
        || schema.validate(&json!([1])),
    );
    assert!(result.is_ok());
    let items = Value::Array((0..1000).map(|index| json!(index)).collect());
    let (result, elapsed) = timed(
        "worst accepted (2^14 fan-out) on 1000 items, validate to the budget",
        || schema.validate(&items),
    );
    let violations = result.unwrap_err();
    assert_eq!(violations.len(), 1);
    assert!(violations[0].is_budget(), "{violations:?}");
    assert_eq!(violations[0].path, "");
    assert!(
        violations[0]
            .message
            .starts_with("the schema was too costly to check"),
        "{}",
        violations[0].message
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    // A larger budget, chosen by the caller, finishes the same check.
    let patient = SchemaLimits::default().max_steps(200_000_000);
    let schema = Schema::compile_with(&fan_out_items(14), &patient).unwrap();
    assert!(schema
        .validate(&json!([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))
        .is_ok());
}

#[test]
fn a_self_referencing_schema_on_a_deep_instance_stops_at_the_depth_bound() {
    let schema = Schema::compile(&json!({
        "type": ["array", "integer"],
        "items": {"$ref": "#"}
    }))
    .unwrap();
    assert!(schema.validate(&nested_arrays(100)).is_ok());
    let deep = nested_arrays(100_000);
    let (result, elapsed) = timed("self-recursive schema on 100,000 nested arrays", || {
        schema.validate(&deep)
    });
    let violations = result.unwrap_err();
    assert!(violations[0].is_budget(), "{violations:?}");
    assert!(
        violations[0].message.contains("max_validation_depth"),
        "{}",
        violations[0].message
    );
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    dismantle(deep);
    // A cycle of references that never moves into the instance is bounded the same way.
    let cycle = Schema::compile(&json!({
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "$ref": "#/$defs/a"
    }))
    .unwrap();
    assert!(cycle.validate(&json!(1)).unwrap_err()[0].is_budget());
}

#[test]
fn validation_in_a_small_thread_stack_does_not_overflow() {
    // The depth bound keeps the recursion inside a 2 MiB stack (a spawned thread's default).
    let handle = std::thread::Builder::new()
        .name("schema-small-stack".into())
        .stack_size(2 * 1024 * 1024)
        .spawn(|| {
            let schema = Schema::compile(&json!({
                "anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}}]
            }))
            .unwrap();
            let deep = nested_arrays(10_000);
            let verdict = schema.validate(&deep).unwrap_err()[0].is_budget();
            dismantle(deep);
            verdict
        })
        .unwrap();
    assert!(handle.join().unwrap());
}

#[test]
fn a_schema_ten_thousand_levels_deep_is_refused_without_recursion() {
    let mut schema = json!({"type": "string"});
    for _ in 0..10_000 {
        // Moved in, not through `json!`, which would serialize (recursively) a copy.
        let mut wrapper = Map::new();
        wrapper.insert("not".to_owned(), schema);
        schema = Value::Object(wrapper);
    }
    let (result, _) = timed("schema 10,000 levels deep, compile refusal", || {
        Schema::compile(&schema)
    });
    assert_eq!(
        result.unwrap_err(),
        "the schema nests more than 128 levels deep (SchemaLimits::max_depth)"
    );
    dismantle(schema);
    let too_big = json!({"description": "x".repeat(2 * 1024 * 1024)});
    assert_eq!(
        Schema::compile(&too_big).unwrap_err(),
        "the schema is larger than 1048576 bytes as compact JSON (SchemaLimits::max_bytes)"
    );
}

#[test]
fn a_huge_enum_costs_the_same_per_check_as_a_small_one() {
    let values: Vec<Value> = (0..100_000)
        .map(|index| json!(format!("v{index}")))
        .collect();
    let (schema, _) = timed("enum of 100,000 strings, compile", || {
        Schema::compile(&json!({"type": "array", "items": {"enum": values}})).unwrap()
    });
    let instance = Value::Array(
        (0..10_000)
            .map(|index| json!(format!("v{}", index * 7)))
            .collect(),
    );
    let (result, elapsed) = timed("enum of 100,000 strings, 10,000 items checked", || {
        schema.validate(&instance)
    });
    assert!(result.is_ok());
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    let violations = schema.validate(&json!(["v1", "nope"])).unwrap_err();
    assert_eq!(violations[0].path, "/1");
    assert!(
        violations[0]
            .message
            .starts_with("\"nope\" is not one of \"v0\", "),
        "{}",
        violations[0].message
    );
    assert!(violations[0]
        .message
        .ends_with("\"v8\" or 99991 other values"));
}

#[test]
fn a_catastrophic_pattern_completes_in_linear_time() {
    let schema = Schema::compile(&json!({"type": "string", "pattern": "^(a+)+$"})).unwrap();
    let text = json!(format!("{}b", "a".repeat(100_000)));
    let (result, elapsed) = timed("(a+)+$ on 100,000 a's and a b", || schema.validate(&text));
    assert!(result.unwrap_err()[0].message.contains("does not match"));
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    let error = Schema::compile(&json!({"pattern": "^(?!admin).*$"})).unwrap_err();
    assert!(error.contains("\"^(?!admin).*$\""), "{error}");
    assert!(error.contains("#/pattern"), "{error}");
    let error = Schema::compile(&json!({"patternProperties": {"(a)\\1": true}})).unwrap_err();
    assert!(error.contains("backreference"), "{error}");
    let tight = SchemaLimits::default().max_regex_bytes(10_000);
    let error = Schema::compile_with(&json!({"pattern": "\\w{500}"}), &tight).unwrap_err();
    assert!(error.contains("SchemaLimits::max_regex_bytes"), "{error}");
}

#[test]
fn unique_items_on_a_large_array_is_not_quadratic() {
    let schema = Schema::compile(&json!({"uniqueItems": true})).unwrap();
    let distinct = Value::Array(
        (0..100_000)
            .map(|index| json!({"id": index, "tags": ["a", index % 7]}))
            .collect(),
    );
    let (result, elapsed) = timed("uniqueItems on 100,000 distinct objects", || {
        schema.validate(&distinct)
    });
    assert!(result.is_ok());
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    let mut with_duplicate = distinct;
    if let Value::Array(items) = &mut with_duplicate {
        items.push(json!({"tags": ["a", 3.0], "id": 10.0}));
    }
    let violations = schema.validate(&with_duplicate).unwrap_err();
    assert!(
        violations[0]
            .message
            .contains("items 10 and 100000 are equal"),
        "{}",
        violations[0].message
    );
    // The comparisons are work like any other: a small budget stops them.
    let stingy = SchemaLimits::default().max_steps(1_000);
    let schema = Schema::compile_with(&json!({"uniqueItems": true}), &stingy).unwrap();
    assert!(schema.validate(&with_duplicate).unwrap_err()[0].is_budget());
}

#[test]
fn remote_references_are_refused_and_meta_schemas_accept_anything() {
    let error = Schema::compile(&json!({"$ref": "https://example.com/other.json"})).unwrap_err();
    assert!(error.contains("outside the schema document"), "{error}");
    let error = Schema::compile(&json!({"$ref": "other.json#/x"})).unwrap_err();
    assert!(error.contains("never fetched"), "{error}");
    let meta =
        Schema::compile(&json!({"$ref": "http://json-schema.org/draft-07/schema#"})).unwrap();
    assert!(meta.validate(&json!({"type": 5})).is_ok());
}

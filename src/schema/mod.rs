//! JSON Schema validation, shared by MCP output checks and the harness's argument checks.
//!
//! Schemas come from MCP servers (a tool's `inputSchema` and `outputSchema`), so they are
//! untrusted input, and this module is our own validator, written from the JSON Schema
//! specifications so that every cost a schema can drive is bounded by a [`SchemaLimits`]:
//!
//! - **Compile** checks the size and depth of the document first, without recursion
//!   ([`SchemaLimits::max_bytes`], [`SchemaLimits::max_depth`]), compiles each subschema
//!   location once into an arena (a `$ref` is an index, so cycles are free), and counts the
//!   size of the schema with every reference followed ([`SchemaLimits::max_expansion`]): a
//!   schema whose definitions each refer twice to the next is refused here, in microseconds.
//! - **Validate** counts its work in steps ([`SchemaLimits::max_steps`]) and bounds its
//!   recursion ([`SchemaLimits::max_validation_depth`]); past either it stops with a single
//!   violation that [`SchemaViolation::is_budget`] tells apart.
//! - **Patterns** run on the `regex` crate: linear-time matching, a compiled-size cap
//!   ([`SchemaLimits::max_regex_bytes`]), ECMA-262 syntax translated where it differs. A
//!   pattern that needs look-around or backreferences is a compile error naming it.
//!
//! ```
//! use serde_json::json;
//! use toolwire::schema::Schema;
//!
//! let schema = Schema::compile(&json!({
//!     "type": "object",
//!     "properties": {"ms": {"type": "integer", "minimum": 0}},
//!     "required": ["ms"]
//! }))
//! .unwrap();
//! assert!(schema.validate(&json!({"ms": 250})).is_ok());
//! let violations = schema.validate(&json!({"ms": "soon"})).unwrap_err();
//! assert_eq!(violations[0].path, "/ms");
//! assert_eq!(violations[0].message, "\"soon\" is not of type \"integer\"");
//! ```
//!
//! # Dialects
//!
//! Drafts 4, 6, 7, 2019-09 and 2020-12, from `$schema` (per schema resource; 2020-12 when
//! absent; an unknown `$schema` is read as 2020-12 and logged at debug level). Each draft's
//! rules apply where they differ: `items` arrays and `additionalItems` before 2020-12 (the
//! array form is also read, as `prefixItems`, in a 2020-12 schema), `dependencies` before
//! 2019-09, boolean `exclusiveMaximum`/`exclusiveMinimum` and `id` in draft 4, `$ref`
//! overriding its siblings before 2019-09, `$recursiveRef` in 2019-09 and `$dynamicRef` in
//! 2020-12, `unevaluated*` from 2019-09, 1.0 an integer from draft 6.
//!
//! `format`, `content*` and the other annotations are not asserted (as 2020-12 says of
//! `format` by default). References are resolved inside the document only (`$id` base URIs,
//! embedded resources, `$anchor`, `$dynamicAnchor`, JSON pointers): a `$ref` to another
//! document is a compile error, except a draft's own meta-schema
//! (`http://json-schema.org/draft-07/schema#`, `https://json-schema.org/draft/2020-12/…`),
//! which is read as `true`, accepting anything, since it is never fetched.
//!
//! Conformance is measured by `tests/schema/suite.rs` against the official
//! JSON-Schema-Test-Suite (set `TOOLWIRE_SCHEMA_SUITE`); its known failures are listed there.

mod assert;
mod compile;
mod document;
mod draft;
mod expand;
mod index;
mod keywords;
mod limits;
mod names;
mod regex;
mod uri;
mod validate;
mod value;

use std::fmt;

use serde_json::Value;

use self::document::Oversize;
pub use self::limits::SchemaLimits;

/// What kind of failure a [`SchemaViolation`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationKind {
    /// The instance does not match the schema.
    Mismatch,
    /// The schema was too costly to check against this instance: validation ran past
    /// [`SchemaLimits::max_steps`] or [`SchemaLimits::max_validation_depth`]. Nothing is known
    /// about whether the instance matches. It is always the only violation, at path "".
    Budget,
}

/// One way an instance fails a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// Where in the instance, as a JSON pointer ("" for the root, "/items/0/name").
    pub path: String,
    /// What is wrong, in plain words.
    pub message: String,
    /// A mismatch, or the budget of the check running out.
    pub kind: ViolationKind,
}

impl SchemaViolation {
    /// A mismatch at `path` (a JSON pointer into the instance).
    pub fn mismatch(path: impl Into<String>, message: impl Into<String>) -> Self {
        SchemaViolation {
            path: path.into(),
            message: message.into(),
            kind: ViolationKind::Mismatch,
        }
    }

    /// True when the schema was too costly to check ([`ViolationKind::Budget`]), not a
    /// statement about the instance.
    pub fn is_budget(&self) -> bool {
        self.kind == ViolationKind::Budget
    }

    fn budget(exhaustion: validate::Exhaustion, limits: &SchemaLimits) -> Self {
        let message = match exhaustion {
            validate::Exhaustion::Steps => format!(
                "the schema was too costly to check: validation needed more than {} steps \
                 (SchemaLimits::max_steps)",
                limits.max_steps
            ),
            validate::Exhaustion::Depth => format!(
                "the schema was too costly to check: validation nested more than {} levels \
                 deep (SchemaLimits::max_validation_depth)",
                limits.max_validation_depth
            ),
        };
        SchemaViolation {
            path: String::new(),
            message,
            kind: ViolationKind::Budget,
        }
    }
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(root)"
        } else {
            &self.path
        };
        write!(f, "at {path}: {}", self.message)
    }
}

/// A compiled JSON Schema. Compile once, validate many times; `Send` and `Sync`, so one
/// compiled schema can be shared (in an `Arc`) by every thread that checks against it.
pub struct Schema {
    compiled: keywords::Compiled,
    limits: SchemaLimits,
    source: Value,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("source", &self.source)
            .finish()
    }
}

/// At most this many violations are reported for one instance.
pub const MAX_VIOLATIONS: usize = 10;

/// What a schema over the depth or size bound is told, naming the bound.
fn oversize_message(oversize: &Oversize, limits: &SchemaLimits) -> String {
    match oversize {
        Oversize::Depth(_) => format!(
            "the schema nests more than {} levels deep (SchemaLimits::max_depth)",
            limits.max_depth
        ),
        Oversize::Bytes(_) => format!(
            "the schema is larger than {} bytes as compact JSON (SchemaLimits::max_bytes)",
            limits.max_bytes
        ),
    }
}

/// Reads a schema from its JSON text within the depth and size bounds of `limits`: text
/// nested deeper than [`SchemaLimits::max_depth`] is refused by a scan that never recurses,
/// before the parser sees it (serde_json's own limit, 128 levels with what wraps the schema,
/// would otherwise be the one to speak), and the rest must parse. The error names the bound,
/// or says why the text cannot be read.
pub(crate) fn read_text(text: &str, limits: &SchemaLimits) -> Result<Value, String> {
    if crate::wire::scan::deeper_than(text.as_bytes(), limits.max_depth) {
        return Err(oversize_message(
            &Oversize::Depth(limits.max_depth + 1),
            limits,
        ));
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|error| format!("the schema cannot be read: {error}"))?;
    document::check_size(&value, limits.max_depth, limits.max_bytes)
        .map_err(|oversize| oversize_message(&oversize, limits))?;
    Ok(value)
}

impl Schema {
    /// Compiles a schema with the default [`SchemaLimits`] (drafts 4, 6, 7, 2019-09 and
    /// 2020-12, detected from `$schema`; 2020-12 by default). Remote `$ref`s are not fetched.
    ///
    /// # Errors
    ///
    /// The reason the schema itself is invalid, or the bound it is over.
    pub fn compile(schema: &Value) -> Result<Schema, String> {
        Schema::compile_with(schema, &SchemaLimits::default())
    }

    /// Compiles a schema within `limits`, which also bound every later `validate`.
    ///
    /// # Errors
    ///
    /// The reason the schema itself is invalid (naming the keyword and its location), or the
    /// bound it is over, naming the [`SchemaLimits`] setter and the measured value.
    pub fn compile_with(schema: &Value, limits: &SchemaLimits) -> Result<Schema, String> {
        document::check_size(schema, limits.max_depth, limits.max_bytes)
            .map_err(|oversize| oversize_message(&oversize, limits))?;
        let compiled = compile::compile(schema, limits)?;
        if expand::expanded_size(&compiled, limits.max_expansion).is_err() {
            return Err(format!(
                "the schema expands to more than {} nodes through its $refs \
                 (SchemaLimits::max_expansion)",
                limits.max_expansion
            ));
        }
        Ok(Schema {
            compiled,
            limits: limits.clone(),
            source: schema.clone(),
        })
    }

    /// The schema as given.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// The size of the schema with every reference followed, as
    /// [`SchemaLimits::max_expansion`] counts it.
    pub fn expanded_size(&self) -> u64 {
        expand::expanded_size(&self.compiled, u64::MAX).unwrap_or(u64::MAX)
    }

    /// Checks an instance, within the [`SchemaLimits`] the schema was compiled with.
    ///
    /// # Errors
    ///
    /// Up to [`MAX_VIOLATIONS`] violations, each naming its path; or, when the check ran past
    /// its budget, a single violation at path "" for which [`SchemaViolation::is_budget`] is
    /// true.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<SchemaViolation>> {
        let mut evaluator = validate::Evaluator::new(
            &self.compiled,
            self.limits.max_steps,
            self.limits.max_validation_depth,
        );
        let valid = evaluator.run(instance);
        if let Some(exhaustion) = evaluator.exhausted {
            return Err(vec![SchemaViolation::budget(exhaustion, &self.limits)]);
        }
        if valid {
            return Ok(());
        }
        let mut violations = evaluator.violations;
        if violations.is_empty() {
            // Every failure builds a message unless quiet; this is a guard, not a path.
            violations.push(SchemaViolation::mismatch(
                "",
                "the value does not match the schema",
            ));
        }
        Err(violations)
    }
}

impl Schema {
    /// The message a language model needs to repair a call whose arguments failed this
    /// schema: each failing field, what is wrong with it, and the schema itself (cut after
    /// `schema_chars` characters, with a marker).
    pub fn repair_message(
        &self,
        tool: &str,
        violations: &[SchemaViolation],
        schema_chars: usize,
    ) -> String {
        let mut text = format!(
            "the arguments of tool {tool:?} do not match its input schema; nothing was run."
        );
        for violation in violations {
            let field = if violation.path.is_empty() {
                "(root)"
            } else {
                &violation.path
            };
            text.push_str(&format!("\n- field {field}: {}", violation.message));
        }
        let mut schema = self.source.to_string();
        if schema.chars().count() > schema_chars {
            schema = schema.chars().take(schema_chars).collect();
            schema.push_str("…(schema cut)");
        }
        text.push_str(&format!(
            "\nFix these fields and call {tool} again with arguments matching this JSON Schema: \
             {schema}"
        ));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn violations_name_the_failing_path() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
            "required": ["items"]
        }))
        .unwrap();
        assert!(schema.validate(&json!({"items": [1, 2]})).is_ok());
        let violations = schema.validate(&json!({"items": [1, "two"]})).unwrap_err();
        assert_eq!(violations[0].path, "/items/1");
        assert!(violations[0].message.contains("integer"), "{violations:?}");
        let violations = schema.validate(&json!({})).unwrap_err();
        assert_eq!(violations[0].path, "");
        assert!(violations[0].to_string().starts_with("at (root): "));
    }

    #[test]
    fn the_repair_message_names_fields_and_shows_the_cut_schema() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {"ms": {"type": "integer", "description": "x".repeat(100)}},
            "required": ["ms"]
        }))
        .unwrap();
        let violations = schema.validate(&json!({"ms": "soon"})).unwrap_err();
        let message = schema.repair_message("sleep", &violations, 40);
        assert!(message.starts_with("the arguments of tool \"sleep\" do not match"));
        assert!(message.contains("\n- field /ms: "), "{message}");
        assert!(message.ends_with("…(schema cut)"), "{message}");
    }

    #[test]
    fn an_invalid_schema_is_an_error() {
        assert!(Schema::compile(&json!({"type": 5})).is_err());
        let error = Schema::compile(&json!({"properties": {"a": {"minLength": -1}}})).unwrap_err();
        assert_eq!(
            error,
            "at #/properties/a/minLength: minLength must be a non-negative integer"
        );
    }

    #[test]
    fn each_bound_names_its_setter() {
        let schema = json!({"properties": {"a": {"properties": {"b": {"type": "string"}}}}});
        let error =
            Schema::compile_with(&schema, &SchemaLimits::default().max_depth(4)).unwrap_err();
        assert!(error.contains("SchemaLimits::max_depth"), "{error}");
        let error =
            Schema::compile_with(&schema, &SchemaLimits::default().max_bytes(10)).unwrap_err();
        assert!(error.contains("SchemaLimits::max_bytes"), "{error}");
        let error =
            Schema::compile_with(&schema, &SchemaLimits::default().max_expansion(2)).unwrap_err();
        assert!(error.contains("more than 2 nodes"), "{error}");
        let tight = SchemaLimits::default().max_steps(3);
        let schema = Schema::compile_with(&json!({"items": {"type": "integer"}}), &tight).unwrap();
        assert!(schema.validate(&json!([1, 2])).is_ok());
        let violations = schema.validate(&json!([1, 2, 3, 4])).unwrap_err();
        assert_eq!(violations.len(), 1);
        assert!(violations[0].is_budget());
        assert_eq!(violations[0].kind, ViolationKind::Budget);
        assert!(violations[0].message.contains("SchemaLimits::max_steps"));
        let mismatch = Schema::compile(&json!({"type": "integer"})).unwrap();
        assert!(!mismatch.validate(&json!("x")).unwrap_err()[0].is_budget());
    }

    #[test]
    fn each_draft_reads_its_own_keywords() {
        let draft4 = Schema::compile(&json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "maximum": 5, "exclusiveMaximum": true
        }))
        .unwrap();
        assert!(draft4.validate(&json!(4)).is_ok());
        assert!(draft4.validate(&json!(5)).is_err());
        let draft7 = Schema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "items": [{"type": "integer"}], "additionalItems": false,
            "definitions": {"s": {"type": "string"}}
        }))
        .unwrap();
        assert!(draft7.validate(&json!([1])).is_ok());
        assert!(draft7.validate(&json!([1, 2])).is_err());
        // Before 2019-09 a $ref hides its siblings; from 2019-09 on both apply.
        let old = json!({"$schema": "http://json-schema.org/draft-07/schema#",
                         "definitions": {"s": {"type": "string"}},
                         "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 2}}});
        assert!(Schema::compile(&old)
            .unwrap()
            .validate(&json!({"a": "long"}))
            .is_ok());
        let new = json!({"$defs": {"s": {"type": "string"}},
                         "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 2}}});
        assert!(Schema::compile(&new)
            .unwrap()
            .validate(&json!({"a": "long"}))
            .is_err());
        // 2020-12 by default, and for an unknown $schema.
        for schema in [
            json!({"prefixItems": [{"type": "integer"}], "items": false}),
            json!({"$schema": "https://example.com/mine", "prefixItems": [{"type": "integer"}], "items": false}),
        ] {
            let schema = Schema::compile(&schema).unwrap();
            assert!(schema.validate(&json!([1])).is_ok());
            assert!(schema.validate(&json!([1, 2])).is_err());
        }
        let integer = Schema::compile(&json!({"type": "integer", "multipleOf": 0.1})).unwrap();
        assert!(integer.validate(&json!(1.0)).is_ok());
        assert!(Schema::compile(&json!({"multipleOf": 0.1}))
            .unwrap()
            .validate(&json!(0.3))
            .is_ok());
    }

    #[test]
    fn unevaluated_properties_see_through_applicators() {
        let schema = Schema::compile(&json!({
            "allOf": [{"properties": {"a": true}}],
            "properties": {"b": true},
            "unevaluatedProperties": false
        }))
        .unwrap();
        assert!(schema.validate(&json!({"a": 1, "b": 2})).is_ok());
        let violations = schema.validate(&json!({"a": 1, "c": 3})).unwrap_err();
        assert_eq!(
            violations[0].message,
            "Unevaluated properties are not allowed ('c' was unexpected)"
        );
    }
}

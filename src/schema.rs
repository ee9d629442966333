//! JSON Schema validation, shared by MCP output checks and the harness's argument checks.

use std::fmt;

use serde_json::Value;

/// One way an instance fails a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// Where in the instance, as a JSON pointer ("" for the root, "/items/0/name").
    pub path: String,
    /// What is wrong, in plain words.
    pub message: String,
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

/// A compiled JSON Schema.
pub struct Schema {
    validator: jsonschema::Validator,
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

impl Schema {
    /// Compiles a schema (drafts 4, 6, 7, 2019-09 and 2020-12, detected from `$schema`;
    /// 2020-12 by default). Remote `$ref`s are not fetched.
    ///
    /// # Errors
    ///
    /// The reason the schema itself is invalid.
    pub fn compile(schema: &Value) -> Result<Schema, String> {
        let validator = jsonschema::validator_for(schema).map_err(|error| error.to_string())?;
        Ok(Schema {
            validator,
            source: schema.clone(),
        })
    }

    /// The schema as given.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Checks an instance.
    ///
    /// # Errors
    ///
    /// Up to [`MAX_VIOLATIONS`] violations, each naming its path.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<SchemaViolation>> {
        let violations: Vec<SchemaViolation> = self
            .validator
            .iter_errors(instance)
            .take(MAX_VIOLATIONS)
            .map(|error| SchemaViolation {
                path: error.instance_path().to_string(),
                message: error.to_string(),
            })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
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
    }
}

//! The dialects: which draft a schema resource is written in, from its `$schema`, and the
//! keyword rules that differ between drafts.

use serde_json::Value;

/// A JSON Schema draft. Ordered, so that "2019-09 or later" is `draft >= Draft::V2019`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Draft {
    /// Draft 4: `id`, boolean `exclusiveMaximum`, `dependencies`, no boolean schemas in
    /// principle (accepted anyway), 1.0 is not an integer.
    V4,
    /// Draft 6: `$id`, `const`, `contains`, `propertyNames`, numeric exclusive bounds.
    V6,
    /// Draft 7: `if`/`then`/`else`.
    V7,
    /// 2019-09: `$defs`, `$anchor`, `$recursiveRef`, `dependentRequired`/`dependentSchemas`,
    /// `unevaluated*`, `minContains`/`maxContains`, `$ref` beside other keywords.
    V2019,
    /// 2020-12: `prefixItems`, `$dynamicRef`/`$dynamicAnchor`.
    V2020,
}

impl Draft {
    /// The draft a `$schema` URI names, or `None` for a URI this crate does not know.
    pub(crate) fn from_uri(uri: &str) -> Option<Draft> {
        // The URIs are compared without scheme, trailing `#` or trailing empty fragment:
        // `http://json-schema.org/draft-07/schema#` and `https://...schema` are the same draft.
        let trimmed = uri.trim_end_matches('#');
        let without_scheme = trimmed
            .strip_prefix("https://")
            .or_else(|| trimmed.strip_prefix("http://"))
            .unwrap_or(trimmed);
        match without_scheme {
            "json-schema.org/draft-04/schema" => Some(Draft::V4),
            "json-schema.org/draft-06/schema" => Some(Draft::V6),
            "json-schema.org/draft-07/schema" => Some(Draft::V7),
            "json-schema.org/draft/2019-09/schema" => Some(Draft::V2019),
            "json-schema.org/draft/2020-12/schema" => Some(Draft::V2020),
            _ => None,
        }
    }

    /// The draft of a schema resource: its own `$schema`, or `inherited` when it has none.
    /// An unknown `$schema` is read as 2020-12 (logged at debug level).
    pub(crate) fn of(schema: &Value, inherited: Draft) -> Draft {
        match schema.get("$schema").and_then(Value::as_str) {
            Some(uri) => Draft::from_uri(uri).unwrap_or_else(|| {
                log::debug!(
                    "toolwire: unknown $schema {uri:?}; validating it as JSON Schema 2020-12"
                );
                Draft::V2020
            }),
            None => inherited,
        }
    }

    /// The keyword that names a resource: `id` in draft 4, `$id` after.
    pub(crate) fn id_keyword(self) -> &'static str {
        if self == Draft::V4 {
            "id"
        } else {
            "$id"
        }
    }

    /// Before 2019-09, a `$ref` replaces the whole schema object it is in: its siblings
    /// (even `$id`) are ignored.
    pub(crate) fn ref_overrides_siblings(self) -> bool {
        self < Draft::V2019
    }

    /// The keywords whose value is one subschema, in this draft.
    pub(crate) fn single_subschema_keywords(self) -> &'static [&'static str] {
        match self {
            Draft::V4 => &["additionalItems", "additionalProperties", "not", "items"],
            Draft::V6 => &[
                "additionalItems",
                "additionalProperties",
                "not",
                "items",
                "contains",
                "propertyNames",
            ],
            Draft::V7 => &[
                "additionalItems",
                "additionalProperties",
                "not",
                "items",
                "contains",
                "propertyNames",
                "if",
                "then",
                "else",
            ],
            Draft::V2019 => &[
                "additionalItems",
                "additionalProperties",
                "not",
                "items",
                "contains",
                "propertyNames",
                "if",
                "then",
                "else",
                "unevaluatedItems",
                "unevaluatedProperties",
            ],
            Draft::V2020 => &[
                "additionalItems",
                "additionalProperties",
                "not",
                "items",
                "contains",
                "propertyNames",
                "if",
                "then",
                "else",
                "unevaluatedItems",
                "unevaluatedProperties",
            ],
        }
    }

    /// The keywords whose value is an array of subschemas.
    pub(crate) fn array_subschema_keywords(self) -> &'static [&'static str] {
        match self {
            Draft::V2020 => &["allOf", "anyOf", "oneOf", "prefixItems", "items"],
            _ => &["allOf", "anyOf", "oneOf", "items"],
        }
    }

    /// The keywords whose value is an object of subschemas.
    pub(crate) fn map_subschema_keywords(self) -> &'static [&'static str] {
        match self {
            Draft::V4 | Draft::V6 | Draft::V7 => &[
                "properties",
                "patternProperties",
                "definitions",
                "dependencies",
            ],
            Draft::V2019 | Draft::V2020 => &[
                "properties",
                "patternProperties",
                "$defs",
                "definitions",
                "dependentSchemas",
                // Not a keyword of these drafts, but schemas converted from draft 7 keep it,
                // and a subschema under it can still be the target of a `$ref`.
                "dependencies",
            ],
        }
    }
}

/// True for the URI of a draft's meta-schema (or one of its vocabulary meta-schemas). A
/// `$ref` to one is never fetched: it is read as `true`, "accept anything".
pub(crate) fn is_meta_schema(uri: &str) -> bool {
    let without_scheme = uri
        .strip_prefix("https://")
        .or_else(|| uri.strip_prefix("http://"))
        .unwrap_or(uri);
    without_scheme.starts_with("json-schema.org/draft-0")
        || without_scheme.starts_with("json-schema.org/draft/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_draft_comes_from_schema_and_defaults_to_2020_12() {
        assert_eq!(
            Draft::of(
                &json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
                Draft::V2020
            ),
            Draft::V7
        );
        assert_eq!(
            Draft::of(
                &json!({"$schema": "http://json-schema.org/draft-04/schema"}),
                Draft::V2020
            ),
            Draft::V4
        );
        assert_eq!(Draft::of(&json!({}), Draft::V2019), Draft::V2019);
        assert_eq!(
            Draft::of(&json!({"$schema": "http://example.com/mine"}), Draft::V7),
            Draft::V2020
        );
        assert!(is_meta_schema("http://json-schema.org/draft-07/schema#"));
        assert!(is_meta_schema(
            "https://json-schema.org/draft/2020-12/meta/core"
        ));
        assert!(!is_meta_schema("http://example.com/draft/"));
    }
}

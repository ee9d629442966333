//! The bounds on what one schema may cost. Schemas come from MCP servers, which the caller
//! does not control, so each cost a schema can drive is bounded here, with a default that
//! every real tool schema fits with a wide margin.

/// How much a schema may cost to compile and to check an instance against. Every bound has
/// a finite default, chosen so that real tool schemas pass with room to spare (the measures
/// are in each setter's doc) while a hostile one is refused in milliseconds.
///
/// ```
/// use serde_json::json;
/// use toolwire::schema::{Schema, SchemaLimits};
///
/// let limits = SchemaLimits::default().max_expansion(1_000).max_steps(10_000);
/// let schema = Schema::compile_with(&json!({"type": "string"}), &limits).unwrap();
/// assert!(schema.validate(&json!("ok")).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaLimits {
    pub(super) max_bytes: usize,
    pub(super) max_depth: usize,
    pub(super) max_expansion: u64,
    pub(super) max_steps: u64,
    pub(super) max_validation_depth: usize,
    pub(super) max_regex_bytes: usize,
}

impl Default for SchemaLimits {
    fn default() -> Self {
        SchemaLimits {
            max_bytes: 1024 * 1024,
            max_depth: 128,
            max_expansion: 100_000,
            max_steps: 1_000_000,
            max_validation_depth: 512,
            max_regex_bytes: 256 * 1024,
        }
    }
}

impl SchemaLimits {
    /// The largest schema, in bytes of compact JSON (measured without serializing, before
    /// anything else). Defaults to 1 MiB (1,048,576): the largest of the 131 tool schemas of
    /// GitHub's MCP server is 7,012 bytes and the largest of `server-everything` 648, and
    /// compiling costs time about linear in this size (milliseconds per MiB).
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// The deepest nesting of arrays and objects in the schema document (`{}` is 1).
    /// Defaults to 128, serde_json's own parse limit: every schema that arrived as JSON text
    /// fits, and real tool schemas nest less than 10 levels (9 at most in GitHub's MCP
    /// server, 4 in `server-everything`). A deeper `Value` can only be
    /// built in Rust; it is refused before anything recurses over it (note that raising this
    /// bound lets `Schema` clone and drop such values with serde_json's recursive code).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// The most subschemas the schema may have once every `$ref`, `$dynamicRef` and
    /// `$recursiveRef` is replaced by its target (a reference back into a cycle counts as
    /// one). Counted with memoization over the reference graph, so the count costs one
    /// visit per subschema and reference (a subschema of annotations only, such as
    /// `{"description": …}`, counts as one). Defaults to 100,000: real tool schemas expand to
    /// far less (56 nodes for the largest of GitHub's MCP server, 5 for
    /// `@modelcontextprotocol/server-everything`), while definitions that each refer twice to
    /// the next, 30 deep, expand to 2^32 and are refused in about 0.2 ms.
    pub fn max_expansion(mut self, nodes: u64) -> Self {
        self.max_expansion = nodes;
        self
    }

    /// The work budget of one `validate` call: one step per (subschema, instance location)
    /// evaluation, plus the work of `uniqueItems`, `enum` and `const` comparisons (one step
    /// per value compared) and of `pattern` (one step per KiB matched). Past it, `validate`
    /// returns a single budget violation ([`SchemaViolation::is_budget`]). Defaults to
    /// 1,000,000, about 10 ms of one core (measured: the worst schema the other defaults
    /// accept runs out of the budget in 9.9 ms): tool arguments take tens of steps, and a
    /// structured result of a few MB about one step per value per subschema that checks it.
    ///
    /// [`SchemaViolation::is_budget`]: super::SchemaViolation::is_budget
    pub fn max_steps(mut self, steps: u64) -> Self {
        self.max_steps = steps;
        self
    }

    /// The deepest nesting of subschema evaluations in one `validate` call (each `$ref`,
    /// `allOf` branch or property level is one). Validation recurses, so this bounds its
    /// stack: a self-referencing schema on an instance deeper than that stops with a budget
    /// violation instead of overflowing the stack. Defaults to 512: serde_json parses
    /// instances at most 128 levels deep, and a recursive schema takes one to four levels per
    /// instance level; 512 levels fit in a 2 MiB thread stack (a spawned thread's default)
    /// even in a debug build, as `tests/schema/hostile.rs` checks (about 1 KiB a level in a
    /// release build).
    pub fn max_validation_depth(mut self, depth: usize) -> Self {
        self.max_validation_depth = depth;
        self
    }

    /// The most bytes one `pattern` (or `patternProperties` key) may compile to, passed to
    /// the `regex` crate's `RegexBuilder::size_limit` (and its lazy DFA cache limit). A
    /// pattern over it makes the schema fail to compile. Defaults to 256 KiB: the patterns of
    /// real tool schemas (names, dates, e-mail and URL shapes) compile to less than 16 KiB,
    /// while `\w{1000}`-like patterns that would take
    /// megabytes are refused. Identical patterns are compiled once per schema; the number of
    /// distinct ones is bounded by [`SchemaLimits::max_bytes`].
    pub fn max_regex_bytes(mut self, bytes: usize) -> Self {
        self.max_regex_bytes = bytes;
        self
    }
}

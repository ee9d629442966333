//! From a schema document to the arena of [`Node`]s. Locations are compiled from a work list,
//! never by recursion: a `$ref` names a location, the location gets a node index the first
//! time it is named and is compiled once, so a chain of 50,000 references or a cycle costs
//! one node each and no stack.
//!
//! Keyword values are checked as the meta-schemas would (a `type` of `5`, a negative
//! `minLength`, a `pattern` that is not a string): a schema that says something impossible
//! is an error naming the keyword and its location, not a validator that guesses.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Number, Value};

use super::draft::Draft;
use super::index::{child_pointer, Index, Target};
use super::keywords::{
    Body, Bound, Compiled, EnumValues, Keyword, Keywords, Node, NodeId, Pattern, ResourceAnchors,
    TypeSet,
};
use super::names::NameIndex;
use super::value::{self, Num};
use super::SchemaLimits;

/// Past this many values an `enum` is also indexed by hash.
const ENUM_HASH_FROM: usize = 8;

/// Compiles a whole document (already checked against the size and depth bounds).
///
/// # Errors
///
/// What is wrong with the schema, and where.
pub(crate) fn compile(document: &Value, limits: &SchemaLimits) -> Result<Compiled, String> {
    let index = Index::build(document, Draft::V2020);
    let mut compiler = Compiler {
        document,
        index,
        limits,
        nodes: Vec::new(),
        by_pointer: HashMap::new(),
        queue: Vec::new(),
        patterns: HashMap::new(),
        uses_dynamic_scope: false,
    };
    let root = compiler.node_for(String::new());
    compiler.drain()?;
    let mut resources: Vec<ResourceAnchors> = Vec::new();
    if compiler.uses_dynamic_scope {
        for resource in 0..compiler.index.resources.len() {
            let mut anchors = ResourceAnchors::default();
            let named: Vec<(String, String)> = compiler.index.resources[resource]
                .dynamic_anchors
                .iter()
                .map(|(name, pointer)| (name.clone(), pointer.clone()))
                .collect();
            for (name, pointer) in named {
                let node = compiler.node_for(pointer);
                anchors.dynamic.insert(name, node);
            }
            if compiler.index.resources[resource].recursive_anchor {
                let pointer = compiler.index.resources[resource].pointer.clone();
                anchors.recursive = Some(compiler.node_for(pointer));
            }
            resources.push(anchors);
        }
        compiler.drain()?;
    }
    let nodes = compiler
        .nodes
        .into_iter()
        .map(|node| node.expect("every queued node is compiled by drain"))
        .collect();
    Ok(Compiled {
        nodes,
        root,
        resources,
    })
}

struct Compiler<'d> {
    document: &'d Value,
    index: Index,
    limits: &'d SchemaLimits,
    nodes: Vec<Option<Node>>,
    by_pointer: HashMap<String, NodeId>,
    queue: Vec<(NodeId, String)>,
    patterns: HashMap<String, Arc<Pattern>>,
    uses_dynamic_scope: bool,
}

/// `#/a/b` for messages (`#` for the root).
fn at(pointer: &str) -> String {
    format!("#{pointer}")
}

/// A non-negative integer (`2` or `2.0`), as the `min*`/`max*` keywords take.
fn non_negative(value: &Value) -> Option<u64> {
    match value {
        Value::Number(number) => number.as_u64().or_else(|| {
            number
                .as_f64()
                .filter(|float| *float >= 0.0 && float.fract() == 0.0 && *float < 1.8e19)
                .map(|float| float as u64)
        }),
        _ => None,
    }
}

impl Compiler<'_> {
    /// The node of a location, queued for compiling the first time it is named.
    fn node_for(&mut self, pointer: String) -> NodeId {
        if let Some(&node) = self.by_pointer.get(&pointer) {
            return node;
        }
        let node = self.nodes.len();
        self.nodes.push(None);
        self.by_pointer.insert(pointer.clone(), node);
        self.queue.push((node, pointer));
        node
    }

    fn drain(&mut self) -> Result<(), String> {
        while let Some((node, pointer)) = self.queue.pop() {
            let compiled = self.compile_location(&pointer)?;
            self.nodes[node] = Some(compiled);
        }
        Ok(())
    }

    fn compile_location(&mut self, pointer: &str) -> Result<Node, String> {
        let resource = self.index.resource_of(pointer);
        let draft = self.index.resources[resource].draft;
        let document = self.document;
        let body = match document.pointer(pointer) {
            Some(Value::Bool(flag)) => Body::Bool(*flag),
            Some(Value::Object(object)) => {
                let keywords = self.compile_object(pointer, object, resource, draft)?;
                if keywords.list.is_empty() {
                    // Only annotations (`description`, `title`, …): it accepts everything.
                    Body::Bool(true)
                } else {
                    Body::Keywords(keywords)
                }
            }
            Some(other) => {
                return Err(format!(
                    "at {}: a schema must be an object or a boolean, not {}",
                    at(pointer),
                    super::document::render(other, 40)
                ))
            }
            None => return Err(format!("at {}: no schema there", at(pointer))),
        };
        Ok(Node { resource, body })
    }

    /// The node of the subschema under `keyword` (and `tokens` below it).
    fn subschema(
        &mut self,
        pointer: &str,
        tokens: &[&str],
        value: &Value,
    ) -> Result<NodeId, String> {
        let child = child_pointer(pointer, tokens);
        match value {
            Value::Object(_) | Value::Bool(_) => Ok(self.node_for(child)),
            other => Err(format!(
                "at {}: a schema must be an object or a boolean, not {}",
                at(&child),
                super::document::render(other, 40)
            )),
        }
    }

    fn subschema_list(
        &mut self,
        pointer: &str,
        keyword: &str,
        value: &Value,
    ) -> Result<Vec<NodeId>, String> {
        let Value::Array(items) = value else {
            return Err(format!(
                "at {}: {keyword} must be an array of schemas",
                at(&child_pointer(pointer, &[keyword]))
            ));
        };
        items
            .iter()
            .enumerate()
            .map(|(position, item)| {
                self.subschema(pointer, &[keyword, &position.to_string()], item)
            })
            .collect()
    }

    fn subschema_map(
        &mut self,
        pointer: &str,
        keyword: &str,
        value: &Value,
    ) -> Result<Vec<(String, NodeId)>, String> {
        let Value::Object(map) = value else {
            return Err(format!(
                "at {}: {keyword} must be an object of schemas",
                at(&child_pointer(pointer, &[keyword]))
            ));
        };
        map.iter()
            .map(|(name, item)| {
                Ok((
                    name.clone(),
                    self.subschema(pointer, &[keyword, name], item)?,
                ))
            })
            .collect()
    }

    fn pattern(&mut self, pointer: &str, source: &str) -> Result<Arc<Pattern>, String> {
        if let Some(pattern) = self.patterns.get(source) {
            return Ok(Arc::clone(pattern));
        }
        let regex = super::regex::compile(source, self.limits.max_regex_bytes)
            .map_err(|error| format!("at {}: {error}", at(pointer)))?;
        let pattern = Arc::new(Pattern {
            regex,
            source: source.to_owned(),
        });
        self.patterns
            .insert(source.to_owned(), Arc::clone(&pattern));
        Ok(pattern)
    }

    fn reference(
        &mut self,
        pointer: &str,
        keyword: &str,
        resource: usize,
        value: &Value,
    ) -> Result<Option<(NodeId, String)>, String> {
        let Some(reference) = value.as_str() else {
            return Err(format!(
                "at {}: {keyword} must be a string",
                at(&child_pointer(pointer, &[keyword]))
            ));
        };
        match self
            .index
            .resolve(self.document, resource, reference)
            .map_err(|error| format!("at {}: {error}", at(pointer)))?
        {
            Target::MetaSchema => Ok(None),
            Target::Location(target) => {
                let node = self.node_for(target.clone());
                Ok(Some((node, target)))
            }
        }
    }

    fn compile_object(
        &mut self,
        pointer: &str,
        object: &Map<String, Value>,
        resource: usize,
        draft: Draft,
    ) -> Result<Keywords, String> {
        let mut list = Vec::new();
        if draft.ref_overrides_siblings() {
            if let Some(reference) = object.get("$ref") {
                if let Some((node, _)) = self.reference(pointer, "$ref", resource, reference)? {
                    list.push(Keyword::Ref(node));
                }
                return Ok(Keywords {
                    list,
                    tracks: false,
                });
            }
        }
        let bad = |keyword: &str, what: &str| {
            format!(
                "at {}: {keyword} must be {what}",
                at(&child_pointer(pointer, &[keyword]))
            )
        };
        if let Some(value) = object.get("type") {
            list.push(Keyword::Type(type_set(value, draft).ok_or_else(|| {
                bad("type", "a type name or an array of unique type names")
            })?));
        }
        if let Some(value) = object.get("enum") {
            let Value::Array(values) = value else {
                return Err(bad("enum", "an array"));
            };
            list.push(Keyword::Enum(Box::new(enum_values(values))));
        }
        if draft >= Draft::V6 {
            if let Some(value) = object.get("const") {
                list.push(Keyword::Const(Box::new(value.clone())));
            }
        }
        self.numeric(object, draft, &mut list, &bad)?;
        for (keyword, make) in [
            ("minLength", Keyword::MinLength as fn(u64) -> Keyword),
            ("maxLength", Keyword::MaxLength),
            ("minItems", Keyword::MinItems),
            ("maxItems", Keyword::MaxItems),
            ("minProperties", Keyword::MinProperties),
            ("maxProperties", Keyword::MaxProperties),
        ] {
            if let Some(value) = object.get(keyword) {
                let count =
                    non_negative(value).ok_or_else(|| bad(keyword, "a non-negative integer"))?;
                list.push(make(count));
            }
        }
        if let Some(value) = object.get("pattern") {
            let source = value.as_str().ok_or_else(|| bad("pattern", "a string"))?;
            let pattern = self.pattern(&child_pointer(pointer, &["pattern"]), source)?;
            list.push(Keyword::Pattern(pattern));
        }
        if let Some(value) = object.get("uniqueItems") {
            match value {
                Value::Bool(true) => list.push(Keyword::UniqueItems),
                Value::Bool(false) => {}
                _ => return Err(bad("uniqueItems", "a boolean")),
            }
        }
        if let Some(value) = object.get("required") {
            let mut names =
                string_list(value).ok_or_else(|| bad("required", "an array of strings"))?;
            let mut seen = std::collections::HashSet::new();
            names.retain(|name| seen.insert(name.clone()));
            let index = NameIndex::new(names.iter().map(String::as_str));
            list.push(Keyword::Required { names, index });
        }
        self.arrays(pointer, object, draft, &mut list)?;
        self.objects(pointer, object, draft, &mut list, &bad)?;
        self.applicators(pointer, object, resource, draft, &mut list)?;
        let mut tracks = false;
        if draft >= Draft::V2019 {
            if let Some(value) = object.get("unevaluatedItems") {
                let node = self.subschema(pointer, &["unevaluatedItems"], value)?;
                list.push(Keyword::UnevaluatedItems(node));
                tracks = true;
            }
            if let Some(value) = object.get("unevaluatedProperties") {
                let node = self.subschema(pointer, &["unevaluatedProperties"], value)?;
                list.push(Keyword::UnevaluatedProperties(node));
                tracks = true;
            }
        }
        Ok(Keywords { list, tracks })
    }

    fn numeric(
        &mut self,
        object: &Map<String, Value>,
        draft: Draft,
        list: &mut Vec<Keyword>,
        bad: &dyn Fn(&str, &str) -> String,
    ) -> Result<(), String> {
        let number = |keyword: &str| -> Result<Option<Number>, String> {
            match object.get(keyword) {
                None => Ok(None),
                Some(Value::Number(number)) => Ok(Some(number.clone())),
                Some(_) => Err(bad(keyword, "a number")),
            }
        };
        let bound = |written: Number| Bound {
            limit: Num::of(&written),
            written,
        };
        if draft == Draft::V4 {
            // Draft 4: the exclusive keywords are booleans that change maximum/minimum.
            let flag = |keyword: &str| match object.get(keyword) {
                None => Ok(false),
                Some(Value::Bool(flag)) => Ok(*flag),
                Some(_) => Err(bad(keyword, "a boolean in draft 4")),
            };
            if let Some(written) = number("minimum")? {
                list.push(if flag("exclusiveMinimum")? {
                    Keyword::ExclusiveMinimum(bound(written))
                } else {
                    Keyword::Minimum(bound(written))
                });
            }
            if let Some(written) = number("maximum")? {
                list.push(if flag("exclusiveMaximum")? {
                    Keyword::ExclusiveMaximum(bound(written))
                } else {
                    Keyword::Maximum(bound(written))
                });
            }
        } else {
            for (keyword, make) in [
                ("minimum", Keyword::Minimum as fn(Bound) -> Keyword),
                ("exclusiveMinimum", Keyword::ExclusiveMinimum),
                ("maximum", Keyword::Maximum),
                ("exclusiveMaximum", Keyword::ExclusiveMaximum),
            ] {
                if let Some(written) = number(keyword)? {
                    list.push(make(bound(written)));
                }
            }
        }
        if let Some(written) = number("multipleOf")? {
            let divisor = bound(written);
            if value::compare(divisor.limit, Num::Int(0)) != std::cmp::Ordering::Greater {
                return Err(bad("multipleOf", "a number greater than 0"));
            }
            list.push(Keyword::MultipleOf(divisor));
        }
        Ok(())
    }

    fn arrays(
        &mut self,
        pointer: &str,
        object: &Map<String, Value>,
        draft: Draft,
        list: &mut Vec<Keyword>,
    ) -> Result<(), String> {
        let items = object.get("items");
        let prefix_items = if draft >= Draft::V2020 {
            object.get("prefixItems")
        } else {
            None
        };
        let mut prefix = Vec::new();
        let mut rest = None;
        if let Some(value) = prefix_items {
            prefix = self.subschema_list(pointer, "prefixItems", value)?;
        }
        match items {
            Some(value @ Value::Array(_)) => {
                // The tuple form of drafts 4 to 2019-09; read the same way in a 2020-12
                // schema, where many schemas converted from draft 7 still use it.
                if prefix_items.is_some() {
                    return Err(format!(
                        "at {}: items must be a schema when prefixItems is present",
                        at(&child_pointer(pointer, &["items"]))
                    ));
                }
                if draft >= Draft::V2020 {
                    log::debug!("toolwire: a 2020-12 schema uses the array form of items; read as prefixItems");
                }
                prefix = self.subschema_list(pointer, "items", value)?;
                if let Some(additional) = object.get("additionalItems") {
                    rest = Some(self.subschema(pointer, &["additionalItems"], additional)?);
                }
            }
            Some(value) => rest = Some(self.subschema(pointer, &["items"], value)?),
            None => {}
        }
        if !prefix.is_empty() || rest.is_some() || prefix_items.is_some() {
            list.push(Keyword::Items { prefix, rest });
        }
        if draft >= Draft::V6 {
            if let Some(value) = object.get("contains") {
                let schema = self.subschema(pointer, &["contains"], value)?;
                let (mut min, mut max) = (1, None);
                if draft >= Draft::V2019 {
                    if let Some(value) = object.get("minContains") {
                        min = non_negative(value).ok_or_else(|| {
                            format!(
                                "at {}: minContains must be a non-negative integer",
                                at(pointer)
                            )
                        })?;
                    }
                    if let Some(value) = object.get("maxContains") {
                        max = Some(non_negative(value).ok_or_else(|| {
                            format!(
                                "at {}: maxContains must be a non-negative integer",
                                at(pointer)
                            )
                        })?);
                    }
                }
                list.push(Keyword::Contains {
                    schema,
                    min,
                    max,
                    marks: draft >= Draft::V2020,
                });
            }
        }
        Ok(())
    }

    fn objects(
        &mut self,
        pointer: &str,
        object: &Map<String, Value>,
        draft: Draft,
        list: &mut Vec<Keyword>,
        bad: &dyn Fn(&str, &str) -> String,
    ) -> Result<(), String> {
        let properties = match object.get("properties") {
            Some(value) => self.subschema_map(pointer, "properties", value)?,
            None => Vec::new(),
        };
        let named = NameIndex::new(properties.iter().map(|(name, _)| name.as_str()));
        let nodes: Vec<NodeId> = properties.iter().map(|(_, node)| *node).collect();
        let mut patterns = Vec::new();
        if let Some(value) = object.get("patternProperties") {
            for (source, node) in self.subschema_map(pointer, "patternProperties", value)? {
                let pattern = self.pattern(
                    &child_pointer(pointer, &["patternProperties", &source]),
                    &source,
                )?;
                patterns.push((pattern, node));
            }
        }
        let additional = match object.get("additionalProperties") {
            Some(value) => Some(self.subschema(pointer, &["additionalProperties"], value)?),
            None => None,
        };
        if !nodes.is_empty() || !patterns.is_empty() || additional.is_some() {
            list.push(Keyword::Properties {
                named,
                nodes,
                patterns,
                additional,
            });
        }
        if draft >= Draft::V6 {
            if let Some(value) = object.get("propertyNames") {
                list.push(Keyword::PropertyNames(self.subschema(
                    pointer,
                    &["propertyNames"],
                    value,
                )?));
            }
        }
        let mut required_by = Vec::new();
        let mut schemas_by = Vec::new();
        if draft >= Draft::V2019 {
            if let Some(value) = object.get("dependentRequired") {
                let Value::Object(map) = value else {
                    return Err(bad("dependentRequired", "an object of string arrays"));
                };
                for (name, names) in map {
                    let names = string_list(names)
                        .ok_or_else(|| bad("dependentRequired", "an object of string arrays"))?;
                    required_by.push((name.clone(), names));
                }
            }
            if let Some(value) = object.get("dependentSchemas") {
                schemas_by = self.subschema_map(pointer, "dependentSchemas", value)?;
            }
        } else if let Some(value) = object.get("dependencies") {
            let Value::Object(map) = value else {
                return Err(bad("dependencies", "an object"));
            };
            for (name, dependency) in map {
                match dependency {
                    Value::Array(_) => {
                        let names = string_list(dependency).ok_or_else(|| {
                            bad("dependencies", "an object of schemas or string arrays")
                        })?;
                        required_by.push((name.clone(), names));
                    }
                    other => schemas_by.push((
                        name.clone(),
                        self.subschema(pointer, &["dependencies", name], other)?,
                    )),
                }
            }
        }
        if !required_by.is_empty() {
            list.push(Keyword::DependentRequired(required_by));
        }
        if !schemas_by.is_empty() {
            list.push(Keyword::DependentSchemas(schemas_by));
        }
        Ok(())
    }

    fn applicators(
        &mut self,
        pointer: &str,
        object: &Map<String, Value>,
        resource: usize,
        draft: Draft,
        list: &mut Vec<Keyword>,
    ) -> Result<(), String> {
        for (keyword, make) in [
            ("allOf", Keyword::AllOf as fn(Vec<NodeId>) -> Keyword),
            ("anyOf", Keyword::AnyOf),
            ("oneOf", Keyword::OneOf),
        ] {
            if let Some(value) = object.get(keyword) {
                let nodes = self.subschema_list(pointer, keyword, value)?;
                if nodes.is_empty() {
                    return Err(format!(
                        "at {}: {keyword} must be a non-empty array of schemas",
                        at(&child_pointer(pointer, &[keyword]))
                    ));
                }
                list.push(make(nodes));
            }
        }
        if let Some(value) = object.get("not") {
            list.push(Keyword::Not(self.subschema(pointer, &["not"], value)?));
        }
        if draft >= Draft::V7 {
            if let Some(value) = object.get("if") {
                let condition = self.subschema(pointer, &["if"], value)?;
                let then = match object.get("then") {
                    Some(value) => Some(self.subschema(pointer, &["then"], value)?),
                    None => None,
                };
                let otherwise = match object.get("else") {
                    Some(value) => Some(self.subschema(pointer, &["else"], value)?),
                    None => None,
                };
                list.push(Keyword::Conditional {
                    condition,
                    then,
                    otherwise,
                });
            }
        }
        if let Some(value) = object.get("$ref") {
            if let Some((node, _)) = self.reference(pointer, "$ref", resource, value)? {
                list.push(Keyword::Ref(node));
            }
        }
        if draft >= Draft::V2020 {
            if let Some(value) = object.get("$dynamicRef") {
                if let Some((target, target_pointer)) =
                    self.reference(pointer, "$dynamicRef", resource, value)?
                {
                    let anchor = self.dynamic_anchor(value.as_str().unwrap_or(""), &target_pointer);
                    self.uses_dynamic_scope |= anchor.is_some();
                    list.push(Keyword::DynamicRef { target, anchor });
                }
            }
        }
        if draft == Draft::V2019 {
            if let Some(value) = object.get("$recursiveRef") {
                if let Some((target, _)) =
                    self.reference(pointer, "$recursiveRef", resource, value)?
                {
                    self.uses_dynamic_scope = true;
                    list.push(Keyword::RecursiveRef { target });
                }
            }
        }
        Ok(())
    }

    /// The anchor name of a `$dynamicRef` whose static target is a `$dynamicAnchor` of the
    /// same name (only then does the dynamic scope decide).
    fn dynamic_anchor(&self, reference: &str, target_pointer: &str) -> Option<String> {
        let (_, fragment) = super::uri::split_fragment(reference);
        if fragment.is_empty() || fragment.starts_with('/') {
            return None;
        }
        let resource = self.index.resource_of(target_pointer);
        let declared = self.index.resources[resource]
            .dynamic_anchors
            .get(fragment)?;
        (declared == target_pointer).then(|| fragment.to_owned())
    }
}

fn type_set(value: &Value, draft: Draft) -> Option<TypeSet> {
    let mut bits = 0u8;
    match value {
        Value::String(name) => bits = TypeSet::bit(name)?,
        Value::Array(names) => {
            for name in names {
                let bit = TypeSet::bit(name.as_str()?)?;
                if bits & bit != 0 {
                    return None;
                }
                bits |= bit;
            }
        }
        _ => return None,
    }
    Some(TypeSet {
        bits,
        floats_are_integers: draft >= Draft::V6,
    })
}

fn string_list(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect()
}

fn enum_values(values: &[Value]) -> EnumValues {
    let mut by_hash: HashMap<u64, Vec<usize>> = HashMap::new();
    if values.len() > ENUM_HASH_FROM {
        let mut work = 0;
        for (position, item) in values.iter().enumerate() {
            by_hash
                .entry(value::hash(item, &mut work))
                .or_default()
                .push(position);
        }
    }
    EnumValues {
        values: values.to_vec(),
        by_hash,
    }
}

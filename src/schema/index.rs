//! The identifiers of a schema document, found before anything is compiled: every schema
//! resource (`$id`, or `id` in draft 4) with its base URI and draft, every `$anchor`,
//! `$dynamicAnchor` and `$recursiveAnchor`, and the resource each subschema location is in.
//! A `$ref` is then resolved to a location (a JSON pointer into the document) without
//! fetching anything.
//!
//! The walk keeps its own stack: the document's depth was bounded before, but nothing here
//! should depend on that.

use std::collections::HashMap;

use serde_json::Value;

use super::draft::Draft;
use super::uri;

/// One schema resource: the document root or a subschema with its own `$id`.
#[derive(Debug)]
pub(crate) struct Resource {
    /// The absolute URI of the resource, without fragment.
    pub(crate) base: String,
    /// Where it is in the document.
    pub(crate) pointer: String,
    pub(crate) draft: Draft,
    /// `$dynamicAnchor` names to their locations.
    pub(crate) dynamic_anchors: HashMap<String, String>,
    /// The root says `"$recursiveAnchor": true`.
    pub(crate) recursive_anchor: bool,
}

/// The identifiers found in one document.
#[derive(Debug)]
pub(crate) struct Index {
    pub(crate) resources: Vec<Resource>,
    /// Resource URI (no fragment) to resource.
    by_uri: HashMap<String, usize>,
    /// `uri#name` to the location of the anchor.
    anchors: HashMap<String, String>,
    /// Subschema location to the resource it is in.
    locations: HashMap<String, usize>,
}

/// Where a resolved reference lands.
#[derive(Debug)]
pub(crate) enum Target {
    /// A location in the document.
    Location(String),
    /// A draft meta-schema, read as `true`.
    MetaSchema,
}

impl Index {
    /// Indexes `document`, whose own draft is `draft` unless its `$schema` says otherwise.
    pub(crate) fn build(document: &Value, draft: Draft) -> Index {
        let mut index = Index {
            resources: Vec::new(),
            by_uri: HashMap::new(),
            anchors: HashMap::new(),
            locations: HashMap::new(),
        };
        index.resources.push(Resource {
            base: uri::DEFAULT_BASE.to_owned(),
            pointer: String::new(),
            draft,
            dynamic_anchors: HashMap::new(),
            recursive_anchor: false,
        });
        index.by_uri.insert(uri::DEFAULT_BASE.to_owned(), 0);
        let mut stack: Vec<(String, &Value, usize)> = vec![(String::new(), document, 0)];
        while let Some((pointer, value, parent)) = stack.pop() {
            let Value::Object(object) = value else {
                index.locations.insert(pointer, parent);
                continue;
            };
            let resource = index.enter(&pointer, value, parent);
            index.locations.insert(pointer.clone(), resource);
            let draft = index.resources[resource].draft;
            for &keyword in draft.single_subschema_keywords() {
                if let Some(child @ (Value::Object(_) | Value::Bool(_))) = object.get(keyword) {
                    stack.push((child_pointer(&pointer, &[keyword]), child, resource));
                }
            }
            for &keyword in draft.array_subschema_keywords() {
                if let Some(Value::Array(items)) = object.get(keyword) {
                    for (position, child) in items.iter().enumerate() {
                        let position = position.to_string();
                        stack.push((
                            child_pointer(&pointer, &[keyword, &position]),
                            child,
                            resource,
                        ));
                    }
                }
            }
            for &keyword in draft.map_subschema_keywords() {
                if let Some(Value::Object(map)) = object.get(keyword) {
                    for (name, child) in map {
                        if matches!(child, Value::Object(_) | Value::Bool(_)) {
                            stack.push((
                                child_pointer(&pointer, &[keyword, name]),
                                child,
                                resource,
                            ));
                        }
                    }
                }
            }
        }
        index
    }

    /// Records the identifiers a schema object declares; returns the resource it is in (a new
    /// one if it has an `$id`).
    fn enter(&mut self, pointer: &str, value: &Value, parent: usize) -> usize {
        let inherited = self.resources[parent].draft;
        let is_root = pointer.is_empty();
        let own_draft = Draft::of(value, inherited);
        let id_keyword = own_draft.id_keyword();
        let mut resource = parent;
        let ignores_id = own_draft.ref_overrides_siblings() && value.get("$ref").is_some();
        if let (Some(id), false) = (value.get(id_keyword).and_then(Value::as_str), ignores_id) {
            let base = self.resources[parent].base.clone();
            if own_draft <= Draft::V7 && id.starts_with('#') {
                // A location-independent identifier of the old drafts: an anchor.
                self.anchors
                    .insert(format!("{base}{id}"), pointer.to_owned());
            } else {
                let resolved = uri::resolve(&base, id);
                let (resource_uri, fragment) = uri::split_fragment(&resolved);
                let new_resource = if is_root {
                    // The root is resource 0; its $id renames it.
                    self.resources[0].base = resource_uri.to_owned();
                    self.resources[0].draft = own_draft;
                    0
                } else {
                    self.resources.push(Resource {
                        base: resource_uri.to_owned(),
                        pointer: pointer.to_owned(),
                        draft: own_draft,
                        dynamic_anchors: HashMap::new(),
                        recursive_anchor: false,
                    });
                    self.resources.len() - 1
                };
                self.by_uri.insert(resource_uri.to_owned(), new_resource);
                if own_draft <= Draft::V7 && !fragment.is_empty() {
                    self.anchors.insert(resolved.clone(), pointer.to_owned());
                }
                resource = new_resource;
            }
        } else if is_root {
            self.resources[0].draft = own_draft;
        }
        let draft = self.resources[resource].draft;
        let base = self.resources[resource].base.clone();
        if draft >= Draft::V2019 {
            if let Some(name) = value.get("$anchor").and_then(Value::as_str) {
                self.anchors
                    .insert(format!("{base}#{name}"), pointer.to_owned());
            }
        }
        if draft >= Draft::V2020 {
            if let Some(name) = value.get("$dynamicAnchor").and_then(Value::as_str) {
                self.anchors
                    .insert(format!("{base}#{name}"), pointer.to_owned());
                self.resources[resource]
                    .dynamic_anchors
                    .insert(name.to_owned(), pointer.to_owned());
            }
        }
        if draft == Draft::V2019
            && self.resources[resource].pointer == pointer
            && value.get("$recursiveAnchor") == Some(&Value::Bool(true))
        {
            self.resources[resource].recursive_anchor = true;
        }
        resource
    }

    /// The resource a location is in: the one recorded for it, or for its nearest recorded
    /// ancestor (a `$ref` may point into a place no keyword walks, such as an unknown keyword).
    pub(crate) fn resource_of(&self, pointer: &str) -> usize {
        let mut prefix = pointer;
        loop {
            if let Some(&resource) = self.locations.get(prefix) {
                return resource;
            }
            match prefix.rfind('/') {
                Some(at) => prefix = &prefix[..at],
                None => return 0,
            }
        }
    }

    /// Resolves `reference` found in resource `resource` to a location.
    ///
    /// # Errors
    ///
    /// A message when it names another document or nothing in this one.
    pub(crate) fn resolve(
        &self,
        document: &Value,
        resource: usize,
        reference: &str,
    ) -> Result<Target, String> {
        let absolute = uri::resolve(&self.resources[resource].base, reference);
        let (resource_uri, fragment) = uri::split_fragment(&absolute);
        let Some(&target_resource) = self.by_uri.get(resource_uri) else {
            if super::draft::is_meta_schema(resource_uri) {
                return Ok(Target::MetaSchema);
            }
            return Err(format!(
                "the $ref {reference:?} points outside the schema document ({resource_uri}); \
                 remote references are never fetched"
            ));
        };
        let fragment = uri::percent_decode(fragment);
        let pointer = if fragment.is_empty() {
            self.resources[target_resource].pointer.clone()
        } else if let Some(tokens) = uri::pointer_tokens(&fragment) {
            let mut pointer = self.resources[target_resource].pointer.clone();
            for token in &tokens {
                uri::push_token(&mut pointer, token);
            }
            pointer
        } else {
            match self.anchors.get(&format!("{resource_uri}#{fragment}")) {
                Some(pointer) => pointer.clone(),
                None => {
                    return Err(format!(
                        "the $ref {reference:?} names an anchor {fragment:?} that the schema \
                         does not define"
                    ))
                }
            }
        };
        if document.pointer(&pointer).is_none() {
            return Err(format!(
                "the $ref {reference:?} points to nothing in the schema (#{pointer})"
            ));
        }
        Ok(Target::Location(pointer))
    }
}

/// `pointer` with `tokens` appended.
pub(crate) fn child_pointer(pointer: &str, tokens: &[&str]) -> String {
    let mut child = pointer.to_owned();
    for token in tokens {
        uri::push_token(&mut child, token);
    }
    child
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn location(target: Target) -> String {
        match target {
            Target::Location(pointer) => pointer,
            Target::MetaSchema => "meta".into(),
        }
    }

    #[test]
    fn ids_and_anchors_resolve_to_locations() {
        let document = json!({
            "$id": "http://example.com/root.json",
            "$defs": {
                "a": {"$id": "nested/a.json", "$anchor": "top", "$defs": {"b": {"type": "string"}}},
                "c": {"$anchor": "here"}
            }
        });
        let index = Index::build(&document, Draft::V2020);
        let found = |reference: &str| location(index.resolve(&document, 0, reference).unwrap());
        assert_eq!(found("#"), "");
        assert_eq!(found("#here"), "/$defs/c");
        assert_eq!(found("nested/a.json"), "/$defs/a");
        assert_eq!(found("nested/a.json#top"), "/$defs/a");
        assert_eq!(found("nested/a.json#/$defs/b"), "/$defs/a/$defs/b");
        assert_eq!(found("http://json-schema.org/draft-07/schema#"), "meta");
        assert!(index
            .resolve(&document, 0, "other.json")
            .unwrap_err()
            .contains("outside the schema document"));
        assert!(index.resolve(&document, 0, "#nope").is_err());
        assert!(index.resolve(&document, 0, "#/$defs/zzz").is_err());
        assert_eq!(index.resource_of("/$defs/a/$defs/b"), 1);
        assert_eq!(index.resource_of("/$defs/c/unknown/x"), 0);
    }

    #[test]
    fn old_drafts_use_id_and_fragment_ids() {
        let document = json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "definitions": {"a": {"id": "#foo", "type": "integer"}}
        });
        let index = Index::build(&document, Draft::V2020);
        assert_eq!(index.resources[0].draft, Draft::V4);
        assert_eq!(
            location(index.resolve(&document, 0, "#foo").unwrap()),
            "/definitions/a"
        );
    }
}

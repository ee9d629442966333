//! Resources of a server: those with a fixed URI, and templates whose URIs match a pattern.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::catalog::{insert_some, ReadFn, TemplateFn};
use super::context::RequestContext;
use super::types::HandlerError;

/// A resource with a fixed URI.
pub struct Resource {
    pub(crate) uri: String,
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) handler: ReadFn,
    /// Listed as this object instead of from the fields (a gateway lists a backend's own).
    pub(crate) listed: Option<Value>,
}

impl Resource {
    /// A resource at `uri`, listed as `name`, read by `handler` (which returns its contents).
    pub fn new(
        uri: impl Into<String>,
        name: impl Into<String>,
        handler: impl Fn(&RequestContext, &str) -> std::result::Result<Vec<Value>, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> Resource {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            handler: Arc::new(handler),
            listed: None,
        }
    }

    /// Lists it as `raw` (another server's listing, every field kept).
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))]
    pub(crate) fn listed_as(mut self, raw: Value) -> Self {
        self.listed = Some(raw);
        self
    }

    /// A display title. Defaults to none.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// A description. Defaults to none.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The MIME type of its contents. Defaults to none.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    pub(crate) fn listing(&self) -> Value {
        if let Some(raw) = &self.listed {
            return raw.clone();
        }
        let mut object = Map::new();
        object.insert("uri".into(), Value::from(self.uri.clone()));
        object.insert("name".into(), Value::from(self.name.clone()));
        insert_some(&mut object, "title", &self.title);
        insert_some(&mut object, "description", &self.description);
        insert_some(&mut object, "mimeType", &self.mime_type);
        Value::Object(object)
    }
}

/// A family of resources whose URIs match a template like `file:///logs/{day}.txt` (simple
/// `{name}` variables, each matching one or more characters other than `/`).
pub struct ResourceTemplate {
    pub(crate) uri_template: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) parts: Vec<TemplatePart>,
    pub(crate) handler: TemplateFn,
    /// Listed as this object instead of from the fields (a gateway lists a backend's own).
    pub(crate) listed: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TemplatePart {
    Literal(String),
    Variable(String),
}

impl ResourceTemplate {
    /// A template listed as `name`, read by `handler` with the variables of the URI.
    pub fn new(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        handler: impl Fn(
                &RequestContext,
                &str,
                &BTreeMap<String, String>,
            ) -> std::result::Result<Vec<Value>, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> ResourceTemplate {
        let uri_template = uri_template.into();
        let parts = parse_template(&uri_template);
        ResourceTemplate {
            uri_template,
            name: name.into(),
            description: None,
            mime_type: None,
            parts,
            handler: Arc::new(handler),
            listed: None,
        }
    }

    /// Lists it as `raw` (another server's listing, every field kept).
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))]
    pub(crate) fn listed_as(mut self, raw: Value) -> Self {
        self.listed = Some(raw);
        self
    }

    /// A description. Defaults to none.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The MIME type of its resources. Defaults to none.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    pub(crate) fn listing(&self) -> Value {
        if let Some(raw) = &self.listed {
            return raw.clone();
        }
        let mut object = Map::new();
        object.insert("uriTemplate".into(), Value::from(self.uri_template.clone()));
        object.insert("name".into(), Value::from(self.name.clone()));
        insert_some(&mut object, "description", &self.description);
        insert_some(&mut object, "mimeType", &self.mime_type);
        Value::Object(object)
    }

    /// The variables when `uri` matches.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        match_parts(&self.parts, uri)
    }
}

pub(crate) fn parse_template(template: &str) -> Vec<TemplatePart> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            parts.push(TemplatePart::Literal(rest[..open].to_owned()));
        }
        parts.push(TemplatePart::Variable(
            rest[open + 1..open + close].to_owned(),
        ));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(TemplatePart::Literal(rest.to_owned()));
    }
    parts
}

pub(crate) fn match_parts(parts: &[TemplatePart], uri: &str) -> Option<BTreeMap<String, String>> {
    let mut vars = BTreeMap::new();
    let mut rest = uri;
    let mut index = 0;
    while index < parts.len() {
        match &parts[index] {
            TemplatePart::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
            TemplatePart::Variable(name) => {
                // Up to the next literal (or the end), never across a `/`.
                let end = match parts.get(index + 1) {
                    Some(TemplatePart::Literal(next)) => rest.find(next.as_str())?,
                    _ => rest.len(),
                };
                let value = &rest[..end];
                if value.is_empty() || value.contains('/') {
                    return None;
                }
                vars.insert(name.clone(), value.to_owned());
                rest = &rest[end..];
            }
        }
        index += 1;
    }
    rest.is_empty().then_some(vars)
}

//! Resources of a server: those with a fixed URI, and templates whose URIs match a pattern.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::catalog::{insert_some, ReadFn, TemplateFn};
use super::context::RequestContext;
use super::types::HandlerError;
pub(crate) use super::uri_template::{match_parts, parse_template, TemplatePart};

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

/// A family of resources whose URIs match an RFC 6570 template like
/// `file:///logs/{day}.txt`, `file:///{+path}` or `search://{?q,lang}`: every operator, several
/// variables per expression, values percent-decoded (a simple `{name}` matches one or more
/// characters other than `/`; `{+name}` crosses `/`; `{?name}` may be left out).
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

//! Resources of a server: those with a fixed URI, and templates whose URIs match a pattern.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::catalog::{ReadFn, TemplateFn};
use super::context::RequestContext;
use super::types::HandlerError;
pub(crate) use super::uri_template::{match_parts, parse_template, TemplatePart};
use crate::mcp::{Resource, ResourceTemplate};

/// A resource with a fixed URI that a server serves: its listing (the one
/// [`crate::mcp::Resource`] a client reads) and the function that reads it.
pub struct ServerResource {
    pub(crate) resource: Resource,
    pub(crate) handler: ReadFn,
}

impl ServerResource {
    /// A resource at `uri`, listed as `name`, read by `handler` (which returns its contents).
    pub fn new(
        uri: impl Into<String>,
        name: impl Into<String>,
        handler: impl Fn(&RequestContext, &str) -> std::result::Result<Vec<Value>, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> ServerResource {
        ServerResource::from_listing(Resource::new(uri, name), handler)
    }

    /// A resource listed as `resource` says, every field it holds kept (e.g. another server's
    /// listing, passed on by a proxy), read by `handler`.
    pub fn from_listing(
        resource: Resource,
        handler: impl Fn(&RequestContext, &str) -> std::result::Result<Vec<Value>, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> ServerResource {
        ServerResource {
            resource,
            handler: Arc::new(handler),
        }
    }

    /// A display title. Defaults to none.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.resource.title = Some(title.into());
        self
    }

    /// A description. Defaults to none.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.resource.description = Some(description.into());
        self
    }

    /// The MIME type of its contents. Defaults to none.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.resource.mime_type = Some(mime_type.into());
        self
    }

    /// The listing.
    pub fn listing(&self) -> &Resource {
        &self.resource
    }

    /// Its URI.
    pub(crate) fn uri(&self) -> &str {
        &self.resource.uri
    }
}

/// A family of resources whose URIs match an RFC 6570 template like
/// `file:///logs/{day}.txt`, `file:///{+path}` or `search://{?q,lang}`: every operator, several
/// variables per expression, values percent-decoded (a simple `{name}` matches one or more
/// characters other than `/`; `{+name}` crosses `/`; `{?name}` may be left out). Its listing
/// is the one [`crate::mcp::ResourceTemplate`] a client reads.
pub struct ServerResourceTemplate {
    pub(crate) template: ResourceTemplate,
    pub(crate) parts: Vec<TemplatePart>,
    pub(crate) handler: TemplateFn,
}

impl ServerResourceTemplate {
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
    ) -> ServerResourceTemplate {
        ServerResourceTemplate::from_listing(ResourceTemplate::new(uri_template, name), handler)
    }

    /// A template listed as `template` says, every field it holds kept (e.g. another server's
    /// listing, passed on by a proxy), read by `handler`.
    pub fn from_listing(
        template: ResourceTemplate,
        handler: impl Fn(
                &RequestContext,
                &str,
                &BTreeMap<String, String>,
            ) -> std::result::Result<Vec<Value>, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> ServerResourceTemplate {
        let parts = parse_template(&template.uri_template);
        ServerResourceTemplate {
            template,
            parts,
            handler: Arc::new(handler),
        }
    }

    /// A description. Defaults to none.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.template.description = Some(description.into());
        self
    }

    /// The MIME type of its resources. Defaults to none.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.template.mime_type = Some(mime_type.into());
        self
    }

    /// The listing.
    pub fn listing(&self) -> &ResourceTemplate {
        &self.template
    }

    /// Its URI template.
    pub(crate) fn uri_template(&self) -> &str {
        &self.template.uri_template
    }

    /// The variables when `uri` matches.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        match_parts(&self.parts, uri)
    }
}

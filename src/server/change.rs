//! Changing what a server offers in one step: a [`CatalogChange`] removes and adds tools,
//! resources, templates and prompts under one lock, and clients are told once per kind that
//! changed, not once per item (a gateway re-listing a backend of 200 tools sends one
//! `notifications/tools/list_changed`, not 400).

use super::catalog::{ServerPrompt, ServerResource, ServerResourceTemplate, ToolEntry};
use super::Server;
use crate::error::{Error, RegistryErrorKind};
use crate::harness::LocalTool;
use crate::mcp::methods;

/// Removals and additions applied together by [`Server::apply`]. Removals come first, so a
/// change may replace an item by removing and adding the same name. Defaults to no change.
#[derive(Default)]
pub struct CatalogChange {
    remove_tools: Vec<String>,
    add_tools: Vec<LocalTool>,
    remove_resources: Vec<String>,
    add_resources: Vec<ServerResource>,
    remove_templates: Vec<String>,
    add_templates: Vec<ServerResourceTemplate>,
    remove_prompts: Vec<String>,
    add_prompts: Vec<ServerPrompt>,
}

impl std::fmt::Debug for CatalogChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogChange")
            .field("remove_tools", &self.remove_tools)
            .field("add_tools", &self.add_tools.len())
            .field("remove_resources", &self.remove_resources)
            .field("add_resources", &self.add_resources.len())
            .field("remove_templates", &self.remove_templates)
            .field("add_templates", &self.add_templates.len())
            .field("remove_prompts", &self.remove_prompts)
            .field("add_prompts", &self.add_prompts.len())
            .finish()
    }
}

impl CatalogChange {
    /// No change yet.
    pub fn new() -> CatalogChange {
        CatalogChange::default()
    }

    /// Removes the tool named `name` (nothing when it is not served).
    pub fn remove_tool(mut self, name: impl Into<String>) -> Self {
        self.remove_tools.push(name.into());
        self
    }

    /// Adds a tool (checked as [`Server::add_tool`] checks it).
    pub fn add_tool(mut self, tool: impl Into<LocalTool>) -> Self {
        self.add_tools.push(tool.into());
        self
    }

    /// Removes the resource at `uri` (nothing when it is not served).
    pub fn remove_resource(mut self, uri: impl Into<String>) -> Self {
        self.remove_resources.push(uri.into());
        self
    }

    /// Adds a resource.
    pub fn add_resource(mut self, resource: ServerResource) -> Self {
        self.add_resources.push(resource);
        self
    }

    /// Removes the template `uri_template` (nothing when it is not served).
    pub fn remove_template(mut self, uri_template: impl Into<String>) -> Self {
        self.remove_templates.push(uri_template.into());
        self
    }

    /// Adds a resource template.
    pub fn add_template(mut self, template: ServerResourceTemplate) -> Self {
        self.add_templates.push(template);
        self
    }

    /// Removes the prompt named `name` (nothing when it is not served).
    pub fn remove_prompt(mut self, name: impl Into<String>) -> Self {
        self.remove_prompts.push(name.into());
        self
    }

    /// Adds a prompt.
    pub fn add_prompt(mut self, prompt: ServerPrompt) -> Self {
        self.add_prompts.push(prompt);
        self
    }
}

/// What kind of item a [`Refused`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogKind {
    /// A tool.
    Tool,
    /// A resource.
    Resource,
    /// A resource template.
    Template,
    /// A prompt.
    Prompt,
}

/// An item a [`CatalogChange`] could not add, and why.
#[derive(Debug)]
pub struct Refused {
    /// What it is.
    pub kind: CatalogKind,
    /// The tool's or prompt's name, the resource's URI, or the template.
    pub key: String,
    /// Why: a bad name or schema, or the key already served.
    pub error: Error,
}

impl Server {
    /// Applies `change` under one lock: its removals, then its additions. Clients already
    /// connected are told once for each kind that changed (`notifications/tools/list_changed`,
    /// `notifications/resources/list_changed` for resources and templates alike,
    /// `notifications/prompts/list_changed`), and not at all when nothing changed. An item
    /// that cannot be added (a bad tool, a key already served) is left out and returned with
    /// why; the rest of the change is applied.
    pub fn apply(&self, change: CatalogChange) -> Vec<Refused> {
        let mut refused = Vec::new();
        let mut tools: Vec<ToolEntry> = Vec::new();
        for tool in change.add_tools {
            let name = tool.name.clone();
            match ToolEntry::local(tool) {
                Ok(entry) => tools.push(entry),
                Err(error) => refused.push(Refused {
                    kind: CatalogKind::Tool,
                    key: name,
                    error,
                }),
            }
        }
        let duplicate = |kind: CatalogKind, what: &str, key: &str| Refused {
            kind,
            key: key.to_owned(),
            error: Error::Config(format!("the {what} {key:?} is already served")),
        };
        let (mut tools_changed, mut resources_changed, mut prompts_changed) = (false, false, false);
        {
            let mut catalog = self.shared.catalog.write();
            tools_changed |= catalog.tools.remove_all(&change.remove_tools);
            resources_changed |= catalog.resources.remove_all(&change.remove_resources);
            resources_changed |= catalog.templates.remove_all(&change.remove_templates);
            prompts_changed |= catalog.prompts.remove_all(&change.remove_prompts);
            for entry in tools {
                let name = entry.name().to_owned();
                if catalog.tools.insert(name.clone(), entry) {
                    tools_changed = true;
                } else {
                    refused.push(Refused {
                        kind: CatalogKind::Tool,
                        error: Error::registry_error(
                            RegistryErrorKind::Duplicate,
                            &name,
                            format!("a tool named {name:?} is already served"),
                        ),
                        key: name,
                    });
                }
            }
            for resource in change.add_resources {
                let uri = resource.uri().to_owned();
                if catalog.resources.insert(uri.clone(), resource) {
                    resources_changed = true;
                } else {
                    refused.push(duplicate(CatalogKind::Resource, "resource", &uri));
                }
            }
            for template in change.add_templates {
                let key = template.uri_template().to_owned();
                if catalog.templates.insert(key.clone(), template) {
                    resources_changed = true;
                } else {
                    refused.push(duplicate(CatalogKind::Template, "template", &key));
                }
            }
            for prompt in change.add_prompts {
                let name = prompt.name().to_owned();
                if catalog.prompts.insert(name.clone(), prompt) {
                    prompts_changed = true;
                } else {
                    refused.push(duplicate(CatalogKind::Prompt, "prompt", &name));
                }
            }
        }
        // Sent after the lock is released: a client that lists at once sees the new catalog.
        for (changed, method) in [
            (tools_changed, methods::TOOLS_LIST_CHANGED),
            (resources_changed, methods::RESOURCES_LIST_CHANGED),
            (prompts_changed, methods::PROMPTS_LIST_CHANGED),
        ] {
            if changed {
                self.list_changed(method);
            }
        }
        refused
    }
}

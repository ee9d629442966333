//! What a server offers: tools (its own and a served `ToolRegistry`'s), resources and
//! resource templates, prompts, completion, and plain JSON-RPC methods; and the listings of
//! them, in the order they were added.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::auth::Caller;
use super::context::RequestContext;
use super::tasks::TaskSupport;
use super::types::{HandlerError, PromptResult};
use crate::error::{Error, RegistryErrorKind, Result};
use crate::harness::{BeforeTask, LocalTool, OutputSchema, RegisteredTool, ToolRegistry};
use crate::mcp::headers::{designations, ParamHeader};
use crate::mcp::ToolAnnotations;
use crate::schema::Schema;

#[cfg(test)]
use super::resources::{match_parts, parse_template};
pub use super::resources::{ServerResource, ServerResourceTemplate};
use crate::mcp::Prompt;

/// Reads a resource: its URI; returns its contents (see [`super::content::text_contents`]).
pub type ReadFn = Arc<
    dyn Fn(&RequestContext, &str) -> std::result::Result<Vec<Value>, HandlerError> + Send + Sync,
>;
/// Reads a resource matched by a template: its URI and the template's variables.
pub type TemplateFn = Arc<
    dyn Fn(
            &RequestContext,
            &str,
            &BTreeMap<String, String>,
        ) -> std::result::Result<Vec<Value>, HandlerError>
        + Send
        + Sync,
>;
/// Fills a prompt in from its arguments (strings, checked for the required ones).
pub type PromptFn = Arc<
    dyn Fn(&RequestContext, &Map<String, Value>) -> std::result::Result<PromptResult, HandlerError>
        + Send
        + Sync,
>;
/// Answers a plain JSON-RPC method: its params (`Value::Null` when absent).
pub type MethodFn =
    Arc<dyn Fn(&RequestContext, &Value) -> std::result::Result<Value, HandlerError> + Send + Sync>;
/// Completes an argument: the values offered (at most 100 are sent).
pub type CompletionFn = Arc<
    dyn Fn(&RequestContext, &CompletionRequest) -> std::result::Result<Vec<String>, HandlerError>
        + Send
        + Sync,
>;

/// A `completion/complete` request.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// What is completed: `{"type": "ref/prompt", "name"}` or `{"type": "ref/resource", "uri"}`.
    pub reference: Value,
    /// The argument's name.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// The arguments already filled in (`context.arguments`), when sent.
    pub context: Option<Value>,
}

/// Checks a tool name against the one tool-name rule ([`crate::mcp::TOOL_NAME_RULE`]).
pub(crate) fn check_tool_name(name: &str) -> Result<()> {
    crate::mcp::check_tool_name(name)
        .map_err(|reason| Error::registry_error(RegistryErrorKind::BadName, name, reason))
}

/// A tool's `x-mcp-header` parameters. A checked tool's were validated when it was
/// registered; an unchecked or imported tool with invalid ones has none that a client would
/// mirror.
fn header_params(schema: &Value) -> Arc<[ParamHeader]> {
    designations(schema).unwrap_or_default().into()
}

/// A tool of the catalog, ready to list and call: a registered [`crate::harness::LocalTool`]
/// (or an imported tool) and the registry whose checks its calls pass.
pub(crate) struct ToolEntry {
    /// The registry it came from.
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) tool: Arc<RegisteredTool>,
    /// The parameters its input schema designates with `x-mcp-header`, found once.
    headers: Arc<[ParamHeader]>,
}

fn annotations_value(annotations: &ToolAnnotations) -> Option<Value> {
    let mut object = Map::new();
    for (key, value) in [
        ("readOnlyHint", annotations.read_only_hint),
        ("destructiveHint", annotations.destructive_hint),
        ("idempotentHint", annotations.idempotent_hint),
        ("openWorldHint", annotations.open_world_hint),
    ] {
        if let Some(value) = value {
            object.insert(key.into(), Value::Bool(value));
        }
    }
    (!object.is_empty()).then_some(Value::Object(object))
}

impl ToolEntry {
    pub(crate) fn registry(registry: Arc<ToolRegistry>, tool: Arc<RegisteredTool>) -> ToolEntry {
        let headers = header_params(tool.schema.source());
        ToolEntry {
            registry,
            tool,
            headers,
        }
    }

    /// A tool served on its own: registered (its name, schemas and options checked) in a
    /// registry of its own.
    pub(crate) fn local(tool: LocalTool) -> Result<ToolEntry> {
        let name = tool.name.clone();
        let mut registry = ToolRegistry::new();
        registry.register(tool)?;
        let registered = registry.get(&name).map(Arc::clone).ok_or_else(|| {
            Error::registry_error(
                RegistryErrorKind::BadName,
                &name,
                "the tool was not registered".into(),
            )
        })?;
        Ok(ToolEntry::registry(Arc::new(registry), registered))
    }

    /// The parameters whose `Mcp-Param-{name}` headers a 2026-07-28 HTTP call must carry.
    pub(crate) fn param_headers(&self) -> Arc<[ParamHeader]> {
        Arc::clone(&self.headers)
    }

    pub(crate) fn name(&self) -> &str {
        &self.tool.name
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.tool.timeout()
    }

    pub(crate) fn inline(&self) -> bool {
        self.tool.served.inline
    }

    pub(crate) fn task_support(&self) -> TaskSupport {
        self.tool.served.task
    }

    pub(crate) fn before_task(&self) -> Option<&BeforeTask> {
        self.tool.served.before_task.as_ref()
    }

    pub(crate) fn requires(&self) -> &[String] {
        &self.tool.served.requires
    }

    /// The tool as `tools/list` shows it.
    pub(crate) fn listing(&self) -> Value {
        let tool = &self.tool;
        let mut hints = tool.served.annotations;
        if hints.idempotent_hint.is_none() && tool.idempotent {
            hints.idempotent_hint = Some(true);
        }
        let mut object = Map::new();
        object.insert("name".into(), Value::from(self.name()));
        if let Some(title) = &tool.served.title {
            object.insert("title".into(), Value::from(title.clone()));
        }
        object.insert("description".into(), Value::from(tool.description.clone()));
        object.insert("inputSchema".into(), tool.schema.source().clone());
        if let Some(output) = &tool.output_schema {
            object.insert("outputSchema".into(), output.source().clone());
        }
        if let Some(annotations) = annotations_value(&hints) {
            object.insert("annotations".into(), annotations);
        }
        Value::Object(object)
    }

    /// The compiled output schema results are checked against, when the tool has one.
    pub(crate) fn checked_output(&self) -> Option<&Schema> {
        match &self.tool.output_schema {
            Some(OutputSchema::Checked(schema)) => Some(schema),
            _ => None,
        }
    }
}

/// A prompt template a server serves: its listing (the one [`crate::mcp::Prompt`] a client
/// reads) and the function that fills it in.
pub struct ServerPrompt {
    pub(crate) prompt: Prompt,
    pub(crate) handler: PromptFn,
    /// False when the handler checks the arguments itself.
    pub(crate) checked: bool,
}

impl ServerPrompt {
    /// A prompt named `name`, described, filled in by `handler`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: impl Fn(
                &RequestContext,
                &Map<String, Value>,
            ) -> std::result::Result<PromptResult, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> ServerPrompt {
        ServerPrompt::from_listing(Prompt::new(name).description(description), handler)
    }

    /// A prompt listed as `prompt` says, every field it holds kept (e.g. another server's
    /// listing under a name of this server's, passed on by a proxy), filled in by `handler`.
    pub fn from_listing(
        prompt: Prompt,
        handler: impl Fn(
                &RequestContext,
                &Map<String, Value>,
            ) -> std::result::Result<PromptResult, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> ServerPrompt {
        ServerPrompt {
            prompt,
            handler: Arc::new(handler),
            checked: true,
        }
    }

    /// A display title. Defaults to none.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.prompt.title = Some(title.into());
        self
    }

    /// Declares an argument; a `prompts/get` without a required one is refused (-32602) before
    /// the handler runs. Defaults to no arguments.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.prompt = self.prompt.argument(name, description, required);
        self
    }

    /// Whether a `prompts/get` missing a required argument is refused (-32602) before the
    /// handler runs. False for a handler that checks them itself (a proxy, whose upstream
    /// server answers for its own prompt). Defaults to true.
    pub fn check_arguments(mut self, check: bool) -> Self {
        self.checked = check;
        self
    }

    /// The listing.
    pub fn listing(&self) -> &Prompt {
        &self.prompt
    }

    /// The name it is got by.
    pub(crate) fn name(&self) -> &str {
        &self.prompt.name
    }
}

/// A plain JSON-RPC method (not MCP's): for servers that offer more than the protocol.
pub struct Method {
    pub(crate) name: String,
    pub(crate) inline: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) handler: MethodFn,
}

impl Method {
    /// A method named `name` answered by `handler`.
    pub fn new(
        name: impl Into<String>,
        handler: impl Fn(&RequestContext, &Value) -> std::result::Result<Value, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> Method {
        Method {
            name: name.into(),
            inline: false,
            timeout: None,
            handler: Arc::new(handler),
        }
    }

    /// Runs on the thread that read the request, not the pool (see
    /// [`LocalTool::inline`]). Defaults to false.
    pub fn inline(mut self, inline: bool) -> Self {
        self.inline = inline;
        self
    }

    /// Its bound (1 ms to 1 hour). Defaults to the server's
    /// [`super::ServerConfig::request_timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// An ordered, keyed collection: listed in the order added.
pub(crate) struct Ordered<T> {
    order: Vec<String>,
    items: HashMap<String, Arc<T>>,
}

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered {
            order: Vec::new(),
            items: HashMap::new(),
        }
    }
}

impl<T> Ordered<T> {
    pub(crate) fn insert(&mut self, key: String, item: T) -> bool {
        if self.items.contains_key(&key) {
            return false;
        }
        self.order.push(key.clone());
        self.items.insert(key, Arc::new(item));
        true
    }

    pub(crate) fn remove(&mut self, key: &str) -> bool {
        if self.items.remove(key).is_none() {
            return false;
        }
        self.order.retain(|known| known != key);
        true
    }

    /// Removes every one of `keys` that is held, in one pass over the order whatever their
    /// number (one [`Ordered::remove`] each would pass once per key: a gateway replacing a
    /// backend's 10,000 tools would compare 10^8 names under the catalog's lock). True when
    /// one was held.
    pub(crate) fn remove_all(&mut self, keys: &[String]) -> bool {
        let mut removed = false;
        for key in keys {
            removed |= self.items.remove(key).is_some();
        }
        if removed {
            let items = &self.items;
            self.order.retain(|known| items.contains_key(known));
        }
        removed
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Arc<T>> {
        self.items.get(key)
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The items from `offset`, at most `count`.
    pub(crate) fn page(&self, offset: usize, count: usize) -> impl Iterator<Item = &Arc<T>> {
        self.order
            .iter()
            .skip(offset)
            .take(count)
            .filter_map(|key| self.items.get(key))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Arc<T>> {
        self.order.iter().filter_map(|key| self.items.get(key))
    }
}

/// What an authenticated caller may do with a tool ([`super::Server::set_tool_access`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolAccess {
    /// Listed to the caller and callable.
    Allowed,
    /// Not listed to the caller; a call is answered as a call of a tool not served.
    Hidden,
    /// Listed, but a call is refused: over HTTP with 403 and the challenge
    /// `Bearer error="insufficient_scope", scope="…"` naming these scopes (every scope the
    /// tool needs), so the client can ask for a token that has them.
    NeedsScopes(Vec<String>),
}

/// Decides a tool's access for a caller (runs while the catalog is read).
pub(crate) type ToolAccessFn = Arc<dyn Fn(&str, &Caller) -> ToolAccess + Send + Sync>;

/// Everything a server offers.
#[derive(Default)]
pub(crate) struct Catalog {
    pub(crate) tools: Ordered<ToolEntry>,
    pub(crate) resources: Ordered<ServerResource>,
    pub(crate) templates: Ordered<ServerResourceTemplate>,
    pub(crate) prompts: Ordered<ServerPrompt>,
    pub(crate) methods: HashMap<String, Arc<Method>>,
    pub(crate) completion: Option<CompletionFn>,
    /// The text of a call to a tool not served (the gateway's UNKNOWN_TOOL).
    pub(crate) unknown_tool: Option<super::UnknownToolFn>,
    /// Who may use which tool ([`super::Server::set_tool_access`]).
    pub(crate) access: Option<ToolAccessFn>,
    /// Holds `tools/list` and calls of unknown tools while a proxy's catalog settles.
    pub(crate) settling: Option<super::SettlingFn>,
    /// Kinds declared even while none are served (a gateway's come and go with its
    /// backends).
    pub(crate) declared: Declared,
    /// Runs a client's `resources/subscribe` (true) or `unsubscribe` (false) on a worker
    /// before it is recorded (a gateway passes it on); an error is the client's answer.
    pub(crate) subscribe: Option<SubscribeFn>,
    /// Answers `tasks/get`, `tasks/update` and `tasks/cancel` for tasks the server does not
    /// run itself (a gateway's backends'): see [`super::Server::set_forwarded_tasks`].
    pub(crate) forwarded_tasks: Option<ForwardedTasksFn>,
}

/// The kinds a server declares even while it serves none of them ([`super::Server::declare`]).
/// `Default` declares nothing beyond what is served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declared {
    pub(crate) resources: bool,
    pub(crate) subscribe: bool,
    pub(crate) prompts: bool,
}

impl Declared {
    /// Nothing beyond what is served.
    pub fn new() -> Declared {
        Declared::default()
    }

    /// Declares resources. Defaults to false.
    pub fn resources(mut self, declare: bool) -> Declared {
        self.resources = declare;
        self
    }

    /// Declares resource subscriptions (read only while resources are declared or served,
    /// and a subscribe hook is set, see [`super::Server::set_subscribe`]). Defaults to false.
    pub fn resource_subscriptions(mut self, declare: bool) -> Declared {
        self.subscribe = declare;
        self
    }

    /// Declares prompts. Defaults to false.
    pub fn prompts(mut self, declare: bool) -> Declared {
        self.prompts = declare;
        self
    }
}

/// See [`Catalog::subscribe`].
pub(crate) type SubscribeFn =
    Arc<dyn Fn(&RequestContext, &str, bool) -> std::result::Result<(), HandlerError> + Send + Sync>;

/// See [`Catalog::forwarded_tasks`]: `None` for a task id that is not the hook's.
pub(crate) type ForwardedTasksFn = Arc<
    dyn Fn(&RequestContext, &str, &Value) -> Option<std::result::Result<Value, HandlerError>>
        + Send
        + Sync,
>;

/// What one list method lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listing {
    Tools,
    Resources,
    Templates,
    Prompts,
}

impl Catalog {
    /// True when tools are declared: some are served, or (a gateway) they come and go.
    /// True when some tool may run as a task.
    pub(crate) fn offers_tasks(&self) -> bool {
        self.forwarded_tasks.is_some()
            || self
                .tools
                .values()
                .any(|tool| tool.task_support() != TaskSupport::Forbidden)
    }

    pub(crate) fn offers_tools(&self) -> bool {
        !self.tools.is_empty() || self.unknown_tool.is_some()
    }

    /// What `caller` may do with the tool `name`: [`ToolAccess::Allowed`] without a caller
    /// or without a decision set. A decision that panics hides the tool (fail closed).
    pub(crate) fn access(&self, name: &str, caller: Option<&Caller>) -> ToolAccess {
        match (&self.access, caller) {
            (Some(decide), Some(caller)) => {
                crate::sys::guard("the tool access decision", || decide(name, caller))
                    .unwrap_or(ToolAccess::Hidden)
            }
            _ => ToolAccess::Allowed,
        }
    }

    /// One page of the tools `caller` may see ([`ToolAccess::Hidden`] ones left out), from
    /// `offset` in that filtered order: the items and the offset of the next page.
    pub(crate) fn page_tools_for(
        &self,
        caller: Option<&Caller>,
        offset: usize,
        size: usize,
    ) -> (Vec<Value>, Option<usize>) {
        if self.access.is_none() || caller.is_none() {
            return self.page(Listing::Tools, offset, size);
        }
        let mut visible = self
            .tools
            .values()
            .filter(|tool| self.access(tool.name(), caller) != ToolAccess::Hidden)
            .skip(offset);
        let items: Vec<Value> = visible.by_ref().take(size).map(|t| t.listing()).collect();
        let next = offset.saturating_add(size);
        (items, visible.next().is_some().then_some(next))
    }

    /// One page of a listing from `offset`: the items and the offset of the next page.
    pub(crate) fn page(
        &self,
        listing: Listing,
        offset: usize,
        size: usize,
    ) -> (Vec<Value>, Option<usize>) {
        let (items, total): (Vec<Value>, usize) = match listing {
            Listing::Tools => (
                self.tools.page(offset, size).map(|t| t.listing()).collect(),
                self.tools.len(),
            ),
            Listing::Resources => (
                self.resources
                    .page(offset, size)
                    .map(|r| r.listing().to_value())
                    .collect(),
                self.resources.len(),
            ),
            Listing::Templates => (
                self.templates
                    .page(offset, size)
                    .map(|t| t.listing().to_value())
                    .collect(),
                self.templates.len(),
            ),
            Listing::Prompts => (
                self.prompts
                    .page(offset, size)
                    .map(|p| p.listing().to_value())
                    .collect(),
                self.prompts.len(),
            ),
        };
        let next = offset.saturating_add(size);
        (items, (next < total).then_some(next))
    }

    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty() || self.declared.resources
    }

    /// True when prompts are declared: some are served, or (a gateway) they come and go.
    pub(crate) fn offers_prompts(&self) -> bool {
        !self.prompts.is_empty() || self.declared.prompts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_many_keys_keeps_the_order_of_the_rest() {
        let mut ordered: Ordered<usize> = Ordered::default();
        for index in 0..10 {
            assert!(ordered.insert(format!("k{index}"), index));
        }
        let gone: Vec<String> = ["k0", "k3", "k4", "k9", "absent"]
            .iter()
            .map(|key| (*key).to_owned())
            .collect();
        assert!(ordered.remove_all(&gone));
        let left: Vec<usize> = ordered.values().map(|item| **item).collect();
        assert_eq!(left, [1, 2, 5, 6, 7, 8]);
        assert_eq!(ordered.len(), 6);
        assert!(
            !ordered.remove_all(&gone),
            "nothing of these is held any more"
        );
        // Added again, they come after the others, as any new key does.
        assert!(ordered.insert("k0".into(), 0));
        let keys: Vec<usize> = ordered.page(4, 10).map(|item| **item).collect();
        assert_eq!(keys, [7, 8, 0]);
    }

    #[test]
    fn templates_match_simple_variables() {
        let parts = parse_template("test://template/{id}/data");
        let vars = match_parts(&parts, "test://template/123/data").unwrap();
        assert_eq!(vars["id"], "123");
        assert!(match_parts(&parts, "test://template//data").is_none());
        assert!(match_parts(&parts, "test://template/1/2/data").is_none());
        assert!(match_parts(&parts, "test://template/1/data/more").is_none());
        let tail = parse_template("file:///logs/{day}");
        assert_eq!(
            match_parts(&tail, "file:///logs/mon").unwrap()["day"],
            "mon"
        );
    }

    #[test]
    fn tool_names_follow_the_one_rule() {
        assert!(check_tool_name("get_weather.v2-x_Y").is_ok());
        for bad in ["", "has space", "ünï", "a/b", &"a".repeat(129)] {
            assert!(check_tool_name(bad).is_err(), "{bad:?}");
        }
    }
}

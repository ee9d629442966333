//! The gateway's policy: a small JSON document, read strictly (a key it does not know, a key
//! written twice, a value of the wrong type or out of its bounds is an error naming the
//! place), either a file of its own or the `"toolwire"` section of the config file.
//!
//! See [`Policy`] for the document.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::harness::{check_bound, Overflow, ResultLimit, ToolOptions, ToolTimeout};

mod access;
mod auth;
mod check;

use access::Access;
pub use auth::AuthSection;
pub use check::{PolicyMismatch, UnknownName};

/// The largest policy document read, in bytes.
pub const MAX_POLICY_BYTES: usize = 256 * 1024;
/// The most calls per caller and window a policy may allow.
const MAX_CALLS_PER_CALLER: u32 = 1_000_000;
/// The shortest and the longest budget window a policy may set.
const BUDGET_WINDOWS: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(24 * 3600));
/// The most calls in flight per backend a policy may allow.
const MAX_CONCURRENCY: usize = 256;
/// The largest result limit, in characters.
const MAX_RESULT_CHARS: usize = 16 * 1024 * 1024;

/// The settings a tool may have at any level; `None` is "as the level above says".
#[derive(Debug, Clone, Default, PartialEq)]
struct Rule {
    timeout: Option<ToolTimeout>,
    result_chars: Option<usize>,
    overflow: Option<Overflow>,
    idempotent: Option<bool>,
    allow_large_integers: Option<bool>,
}

impl Rule {
    /// `self` where it says something, else `below`.
    fn over(&self, below: &Rule) -> Rule {
        Rule {
            timeout: self.timeout.or(below.timeout),
            result_chars: self.result_chars.or(below.result_chars),
            overflow: self.overflow.or(below.overflow),
            idempotent: self.idempotent.or(below.idempotent),
            allow_large_integers: self.allow_large_integers.or(below.allow_large_integers),
        }
    }
}

/// One server's part of the policy.
#[derive(Debug, Clone, Default, PartialEq)]
struct ServerRules {
    allow: Option<BTreeSet<String>>,
    deny: BTreeSet<String>,
    concurrency: Option<usize>,
    rule: Rule,
    tools: BTreeMap<String, Rule>,
    access: Access,
    tool_access: BTreeMap<String, Access>,
}

/// What the gateway enforces on every call. `Policy::default()` is: every tool of every
/// server, named `mcp__{server}__{tool}`, 1000 calls per session, 4 calls in flight per
/// backend, the harness's default tool options.
///
/// The document ([`Policy::load`], [`Policy::parse`], or the `"toolwire"` section of a config
/// file, [`Policy::from_config_section`]) is read strictly: a key it does not know, a key
/// written twice, a value of the wrong type or out of its bounds is an error naming the place.
///
/// ```json
/// {
///   "namespace": "mcp__{server}__{tool}",
///   "calls_per_caller": 1000,
///   "budget_window": "1m",
///   "concurrency": 4,
///   "timeout": "standard",
///   "servers": {
///     "files": {
///       "deny": ["delete_file"],
///       "concurrency": 2,
///       "tools": {"read_file": {"timeout": "fast", "idempotent": true, "result_chars": 8000}}
///     },
///     "search": {"allow": ["query"], "timeout": "30s", "overflow": "reject"}
///   }
/// }
/// ```
///
/// | key | where | meaning | default |
/// |---|---|---|---|
/// | `namespace` | top | the front name of a tool: `{server}` and `{tool}` are replaced (`"{tool}"`: the backends' own names; a name two backends give is served by the first in the config's order) | `mcp__{server}__{tool}` |
/// | `pins` | top | the pin file: tool definitions pinned when first served, a changed one held until approved ([pins](super::pins)); a relative path is from the current directory | none (pinning off) |
/// | `new_tools` | top | with `pins`: `serve` (serve and pin a tool no pin names) or `hold` (hold it for approval) | `serve` |
/// | `calls_per_caller` (or its old name `calls_per_session`) | top | tool calls forwarded per front caller and budget window: each sending to a backend counts (a retried call counts each sending), refusals count nothing; BUDGET past it (see [the gateway's budgets](crate::gateway#budgets)) | 1000 |
/// | `budget_window` | top | after how long a caller's count starts over: `30s`, `1m`, `2h` (1 s to 24 hours) | `1m` |
/// | `concurrency` | top, server | calls in flight per backend (BUSY past it, never queued) | 4 |
/// | `allow` | server | only these tools and prompts (the backend's names) are served | all |
/// | `deny` | server | these tools and prompts are never served (UNKNOWN_TOOL if called; a prompt's `prompts/get` is -32602) | none |
/// | `tools` | server | per-tool settings, by the backend's name | none |
/// | `timeout` | top, server, tool | `fast` (10 s), `standard` (60 s), `long` (300 s), or `500ms`, `30s`, `2m` (1 ms to 1 hour) | `standard` |
/// | `result_chars` | top, server, tool | the most characters of result text passed on (1 to 16 Mi) | 16384 |
/// | `overflow` | top, server, tool | `truncate` (cut, with a marker) or `reject` (TOOL_ERROR) | `truncate` |
/// | `idempotent` | top, server, tool | a call may be sent again once after its backend died and restarted | false (or the tool's `idempotentHint`/`readOnlyHint`) |
/// | `allow_large_integers` | top, server, tool | integers beyond ±(2^53 − 1) are passed on | false (INVALID) |
/// | `scopes` | top, server, tool | scopes the caller's access token must hold (at most 256); a caller without them is answered HTTP 403 `insufficient_scope` naming every scope the tool needs | none |
/// | `subjects` | top, server, tool | `{"allow": […], "deny": […]}` (at most 256 each): the token subjects who may use the tool; to anyone else it is not listed and is UNKNOWN_TOOL if called | everyone |
/// | `auth` | top | the authorization in front of the gateway over HTTP: `resource`, `issuer`, `tokens`, `introspection`, `scopes`, `leeway`, `introspection_max_age` ([`AuthSection`]; `toolwire serve`'s `--auth-*` flags override it) | none |
///
/// A tool's setting is its own, else its server's, else the top level's, else the default;
/// except `scopes` and `subjects`, which add up: a tool needs the scopes of all its levels,
/// and a subject must pass every level's `subjects` ([`Policy::decide`]). They are decided
/// per authenticated caller (see [`crate::server::Authorization`]): a gateway with a policy
/// naming them and no authorization in front of it does not start.
///
/// Every name is checked: a server the config lacks stops the gateway's start
/// ([`Policy::check_servers`]), and a `deny`, `allow` or `tools` name its backend does not
/// list keeps that backend out ([`Policy::check_listing`]), each with a "did you mean".
///
/// Prompts are named with `namespace` too (`{tool}` is the prompt's name) and filtered by
/// `allow` and `deny` as tools are; the other keys are about calls and do not apply to
/// them. Resources and templates are not filtered: they keep their URIs and are served as
/// their backends list them.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    namespace: String,
    calls_per_caller: u32,
    budget_window: Duration,
    concurrency: usize,
    rule: Rule,
    access: Access,
    servers: BTreeMap<String, ServerRules>,
    auth: Option<AuthSection>,
    pins: Option<std::path::PathBuf>,
    new_tools: super::NewTools,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            namespace: "mcp__{server}__{tool}".into(),
            calls_per_caller: 1000,
            budget_window: Duration::from_secs(60),
            concurrency: 4,
            rule: Rule::default(),
            access: Access::default(),
            servers: BTreeMap::new(),
            auth: None,
            pins: None,
            new_tools: super::NewTools::Serve,
        }
    }
}

/// A tool's settings once the levels are resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Resolved {
    pub(crate) options: ToolOptions,
    /// Set in the policy (not only hinted by the server).
    pub(crate) idempotent: Option<bool>,
}

impl Policy {
    /// The default policy (see [`Policy`]).
    pub fn new() -> Policy {
        Policy::default()
    }

    /// Reads a policy file.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming the file when it cannot be read, is larger than
    /// [`MAX_POLICY_BYTES`], or is not a valid policy (see [`Policy::parse`]).
    pub fn load(path: impl AsRef<Path>) -> Result<Policy> {
        let path = path.as_ref();
        let text = read_bounded(path)?;
        Policy::parse(&text).map_err(|error| in_file(path, error))
    }

    /// Reads the `"toolwire"` section of a config file (a host's `mcpServers` file), when it
    /// has one; `Ok(None)` when it has none.
    ///
    /// # Errors
    ///
    /// As [`Policy::load`], for the file and for its section.
    pub fn from_config_section(path: impl AsRef<Path>) -> Result<Option<Policy>> {
        let path = path.as_ref();
        let text = read_bounded(path)?;
        let document = crate::json::parse(&text)
            .map_err(|refusal| Error::Config(format!("{}: {refusal}", path.display())))?;
        match document.get("toolwire") {
            None => Ok(None),
            Some(section) => Policy::from_value(section, "/toolwire")
                .map(Some)
                .map_err(|error| in_file(path, error)),
        }
    }

    /// Reads a policy document.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for text over [`MAX_POLICY_BYTES`], text that is not strict JSON (a
    /// repeated key, an integer outside 64 bits), an unknown key, a value of the wrong type,
    /// or a bound out of its range, naming the JSON pointer.
    pub fn parse(text: &str) -> Result<Policy> {
        if text.len() > MAX_POLICY_BYTES {
            return Err(Error::Config(format!(
                "the policy is {} bytes, over the limit of {MAX_POLICY_BYTES}",
                text.len()
            )));
        }
        let value = crate::json::parse(text)
            .map_err(|refusal| Error::Config(format!("the policy is not valid JSON: {refusal}")))?;
        Policy::from_value(&value, "")
    }

    fn from_value(value: &Value, at: &str) -> Result<Policy> {
        let object = object(value, at)?;
        let mut policy = Policy::default();
        for (key, value) in object {
            let here = format!("{at}/{key}");
            match key.as_str() {
                "namespace" => policy.namespace = namespace(value, &here)?,
                "calls_per_caller" | "calls_per_session" => {
                    if ["calls_per_caller", "calls_per_session"]
                        .iter()
                        .all(|name| object.contains_key(*name))
                    {
                        return Err(Error::Config(format!(
                            "the policy's {} has both calls_per_caller and its old name \
                             calls_per_session; keep calls_per_caller",
                            place(at)
                        )));
                    }
                    policy.calls_per_caller =
                        bounded(value, &here, 1, MAX_CALLS_PER_CALLER as u64)? as u32
                }
                "budget_window" => policy.budget_window = budget_window(value, &here)?,
                "pins" => match value.as_str() {
                    Some(path) if !path.is_empty() && path.len() <= 4096 => {
                        policy.pins = Some(path.into());
                    }
                    _ => {
                        return Err(Error::Config(format!(
                            "the policy's {here} must be the pin file's path (1 to 4096 bytes)"
                        )))
                    }
                },
                "new_tools" => {
                    policy.new_tools = match value.as_str() {
                        Some("serve") => super::NewTools::Serve,
                        Some("hold") => super::NewTools::Hold,
                        _ => {
                            return Err(Error::Config(format!(
                                "the policy's {here} must be \"serve\" or \"hold\", not {value}"
                            )))
                        }
                    }
                }
                "concurrency" => {
                    policy.concurrency = bounded(value, &here, 1, MAX_CONCURRENCY as u64)? as usize
                }
                "auth" => policy.auth = Some(auth::section(value, &here)?),
                "servers" => {
                    for (server, rules) in self::object(value, &here)? {
                        let rules = server_rules(rules, &format!("{here}/{server}"))?;
                        policy.servers.insert(server.clone(), rules);
                    }
                }
                _ => {
                    if !rule_key(&mut policy.rule, key, value, &here)?
                        && !policy.access.key(key, value, &here)?
                    {
                        return Err(unknown(key, at, "namespace, calls_per_caller, budget_window, concurrency, servers, pins, new_tools, timeout, result_chars, overflow, idempotent, allow_large_integers, scopes, subjects, auth"));
                    }
                }
            }
        }
        Ok(policy)
    }

    /// The `"auth"` section: the authorization in front of the gateway over HTTP, when the
    /// document has one.
    pub fn auth(&self) -> Option<&AuthSection> {
        self.auth.as_ref()
    }

    /// The template of front names: `{server}` and `{tool}` are replaced. Defaults to
    /// `mcp__{server}__{tool}`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when it lacks `{tool}`.
    pub fn namespace(mut self, template: impl Into<String>) -> Result<Self> {
        self.namespace = namespace(&Value::String(template.into()), "namespace")?;
        Ok(self)
    }

    /// Tool calls forwarded per front caller and budget window (1 to 1,000,000), counted by
    /// a harness budget scope per caller (each sending to a backend counts, a retried call
    /// each time; refusals count nothing); past it a call is BUDGET until the caller's
    /// window ends. Who a caller is: [the gateway's budgets](crate::gateway#budgets).
    /// Defaults to 1000.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] out of its range.
    pub fn calls_per_caller(mut self, calls: u32) -> Result<Self> {
        self.calls_per_caller = bounded(
            &Value::from(calls),
            "calls_per_caller",
            1,
            MAX_CALLS_PER_CALLER as u64,
        )? as u32;
        Ok(self)
    }

    /// The old name of [`Policy::calls_per_caller`].
    ///
    /// # Errors
    ///
    /// As [`Policy::calls_per_caller`].
    #[deprecated(note = "renamed calls_per_caller: the budget bounds a caller, not a session")]
    pub fn calls_per_session(self, calls: u32) -> Result<Self> {
        self.calls_per_caller(calls)
    }

    /// After how long a caller's count starts over (1 s to 24 hours): the window begins with
    /// the first call it counts, and ends this long after. Defaults to 60 s.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] out of its range.
    pub fn budget_window(mut self, window: Duration) -> Result<Self> {
        check_window("budget_window", window)?;
        self.budget_window = window;
        Ok(self)
    }

    /// The pin file ([the gateway's pins](super::pins)): each backend tool's definition is
    /// pinned the first time it is served, and one that changes later is held until the
    /// operator approves it. Defaults to none: pinning is off.
    pub fn pins(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.pins = Some(path.into());
        self
    }

    /// What a tool no pin names gets when pinning is on: served and pinned
    /// ([`super::NewTools::Serve`]), or held for approval ([`super::NewTools::Hold`]).
    /// Defaults to [`super::NewTools::Serve`].
    pub fn new_tools(mut self, choice: super::NewTools) -> Self {
        self.new_tools = choice;
        self
    }

    /// The pin file ([`Policy::pins`], the policy's `"pins"`), when pinning is on.
    pub fn pin_file(&self) -> Option<&Path> {
        self.pins.as_deref()
    }

    /// What a tool no pin names gets ([`Policy::new_tools`]).
    pub fn new_tools_choice(&self) -> super::NewTools {
        self.new_tools
    }

    /// The front name of a backend's tool.
    pub fn front_name(&self, server: &str, tool: &str) -> String {
        self.namespace
            .replace("{server}", server)
            .replace("{tool}", tool)
    }

    /// The calls per caller and window.
    pub(crate) fn caller_budget(&self) -> u32 {
        self.calls_per_caller
    }

    /// The window of a caller's budget.
    pub(crate) fn window(&self) -> Duration {
        self.budget_window
    }

    /// Calls in flight allowed on `server`.
    pub(crate) fn concurrency(&self, server: &str) -> usize {
        self.servers
            .get(server)
            .and_then(|rules| rules.concurrency)
            .unwrap_or(self.concurrency)
    }

    /// Why a backend's tool is not served, or `None` when it is.
    pub(crate) fn refusal(&self, server: &str, tool: &str) -> Option<&'static str> {
        let rules = self.servers.get(server)?;
        if rules.deny.contains(tool) {
            return Some("it is on the policy's deny list");
        }
        match &rules.allow {
            Some(allow) if !allow.contains(tool) => Some("it is not on the policy's allow list"),
            _ => None,
        }
    }

    /// What `caller` may do with a backend's tool, by the `scopes` and `subjects` of its
    /// levels (see [`ToolAccess`](crate::server::ToolAccess)). Without a caller nothing is checked.
    pub fn decide(
        &self,
        server: &str,
        tool: &str,
        caller: Option<&crate::server::Caller>,
    ) -> crate::server::ToolAccess {
        let mut levels = vec![&self.access];
        if let Some(rules) = self.servers.get(server) {
            levels.push(&rules.access);
            if let Some(own) = rules.tool_access.get(tool) {
                levels.push(own);
            }
        }
        access::decide(&levels, caller)
    }

    /// What `caller` may do with a front tool no backend owns (one added to the front
    /// server): the top level's `scopes` and `subjects` only.
    pub(crate) fn decide_top(&self, caller: &crate::server::Caller) -> crate::server::ToolAccess {
        access::decide(&[&self.access], Some(caller))
    }

    /// Whether the policy decides per caller anywhere (`scopes` or `subjects` at any level):
    /// such a policy needs authorization in front of the gateway.
    pub fn names_callers(&self) -> bool {
        !self.access.is_empty()
            || self
                .servers
                .values()
                .any(|rules| !rules.access.is_empty() || !rules.tool_access.is_empty())
    }

    /// Refuses a policy that decides per caller when no authorization is in front of the
    /// gateway: without a caller nothing could be decided, so every tool would be open.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming what to add.
    pub(crate) fn check_callers(&self, authorized: bool) -> Result<()> {
        if self.names_callers() && !authorized {
            return Err(Error::Config(
                "the policy names scopes or subjects, which are decided per authenticated caller, \
                 but no authorization is in front of the gateway: serve it over HTTP with \
                 --auth-issuer or --auth-tokens (GatewayConfig::http with \
                 HttpServerConfig::authorization), or remove them"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The servers the policy names.
    pub(crate) fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// A tool's settings, its level first.
    pub(crate) fn resolve(&self, server: &str, tool: &str) -> Resolved {
        let mut rule = self.rule.clone();
        if let Some(rules) = self.servers.get(server) {
            rule = rules.rule.over(&rule);
            if let Some(own) = rules.tools.get(tool) {
                rule = own.over(&rule);
            }
        }
        let defaults = ResultLimit::default();
        let options = ToolOptions::new()
            .timeout(rule.timeout.unwrap_or_default())
            .idempotent(rule.idempotent.unwrap_or(false))
            .result_limit(ResultLimit::new(
                rule.result_chars.unwrap_or(defaults.max_chars),
                rule.overflow.unwrap_or(defaults.overflow),
            ))
            .allow_large_integers(rule.allow_large_integers.unwrap_or(false));
        Resolved {
            options,
            idempotent: rule.idempotent,
        }
    }
}

fn read_bounded(path: &Path) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .map_err(|error| Error::Config(format!("cannot open {}: {error}", path.display())))?;
    if !file.metadata().map(|meta| meta.is_file()).unwrap_or(false) {
        return Err(Error::Config(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let mut text = String::new();
    file.take(MAX_POLICY_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|error| Error::Config(format!("cannot read {}: {error}", path.display())))?;
    if text.len() > MAX_POLICY_BYTES {
        return Err(Error::Config(format!(
            "{} is over the policy limit of {MAX_POLICY_BYTES} bytes",
            path.display()
        )));
    }
    Ok(text)
}

fn in_file(path: &Path, error: Error) -> Error {
    match error {
        Error::Config(message) => Error::Config(format!("{}: {message}", path.display())),
        other => other,
    }
}

fn object<'a>(value: &'a Value, at: &str) -> Result<&'a Map<String, Value>> {
    value
        .as_object()
        .ok_or_else(|| Error::Config(format!("the policy's {} must be an object", place(at))))
}

fn place(at: &str) -> String {
    if at.is_empty() {
        "document".into()
    } else {
        format!("value at {at}")
    }
}

fn unknown(key: &str, at: &str, known: &str) -> Error {
    let at = if at.is_empty() { "/" } else { at };
    Error::Config(format!(
        "the policy has an unknown key {key:?} at {at} (known: {known})"
    ))
}

fn namespace(value: &Value, at: &str) -> Result<String> {
    let template = value
        .as_str()
        .ok_or_else(|| Error::Config(format!("the policy's {at} must be a string")))?;
    if !template.contains("{tool}") || template.len() > 64 {
        return Err(Error::Config(format!(
            "the policy's {at} {template:?} must hold {{tool}} (and may hold {{server}}), in at most 64 bytes"
        )));
    }
    Ok(template.to_owned())
}

fn bounded(value: &Value, at: &str, low: u64, high: u64) -> Result<u64> {
    match value.as_u64() {
        Some(number) if (low..=high).contains(&number) => Ok(number),
        _ => Err(Error::Config(format!(
            "the policy's {at} must be an integer from {low} to {high}, not {value}"
        ))),
    }
}

fn boolean(value: &Value, at: &str) -> Result<bool> {
    value
        .as_bool()
        .ok_or_else(|| Error::Config(format!("the policy's {at} must be true or false")))
}

fn names(value: &Value, at: &str) -> Result<BTreeSet<String>> {
    let items = value.as_array().ok_or_else(|| {
        Error::Config(format!("the policy's {at} must be an array of tool names"))
    })?;
    items
        .iter()
        .map(|item| {
            item.as_str().map(str::to_owned).ok_or_else(|| {
                Error::Config(format!(
                    "the policy's {at} must hold only strings, not {item}"
                ))
            })
        })
        .collect()
}

/// Reads `key` into `rule` when it is a rule key; false when it is not one.
fn rule_key(rule: &mut Rule, key: &str, value: &Value, at: &str) -> Result<bool> {
    match key {
        "timeout" => rule.timeout = Some(timeout(value, at)?),
        "result_chars" => {
            rule.result_chars = Some(bounded(value, at, 1, MAX_RESULT_CHARS as u64)? as usize)
        }
        "overflow" => {
            rule.overflow = Some(match value.as_str() {
                Some("truncate") => Overflow::Truncate,
                Some("reject") => Overflow::Reject,
                _ => {
                    return Err(Error::Config(format!(
                        "the policy's {at} must be \"truncate\" or \"reject\", not {value}"
                    )))
                }
            })
        }
        "idempotent" => rule.idempotent = Some(boolean(value, at)?),
        "allow_large_integers" => rule.allow_large_integers = Some(boolean(value, at)?),
        _ => return Ok(false),
    }
    Ok(true)
}

/// A duration as a policy writes it: digits and a unit, `ms`, `s`, `m` or `h`.
fn duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    Some(match unit {
        "ms" => Duration::from_millis(number),
        "s" => Duration::from_secs(number),
        "m" => Duration::from_secs(number.saturating_mul(60)),
        "h" => Duration::from_secs(number.saturating_mul(3600)),
        _ => return None,
    })
}

fn check_window(at: &str, window: Duration) -> Result<()> {
    let (low, high) = BUDGET_WINDOWS;
    if window < low || window > high {
        return Err(Error::Config(format!(
            "the policy's {at} must be 1 s to 24 hours, not {window:?}"
        )));
    }
    Ok(())
}

fn budget_window(value: &Value, at: &str) -> Result<Duration> {
    let window = value.as_str().and_then(duration).ok_or_else(|| {
        Error::Config(format!(
            "the policy's {at} must be a duration such as \"30s\", \"1m\", \"2h\" (1 s to 24 \
             hours), not {value}"
        ))
    })?;
    check_window(at, window)?;
    Ok(window)
}

fn timeout(value: &Value, at: &str) -> Result<ToolTimeout> {
    let bad = || {
        Error::Config(format!(
            "the policy's {at} must be \"fast\", \"standard\", \"long\" or a duration such as \
             \"500ms\", \"30s\", \"2m\" (1 ms to 1 hour), not {value}"
        ))
    };
    let text = value.as_str().ok_or_else(bad)?;
    let tier = match text {
        "fast" => ToolTimeout::Fast,
        "standard" => ToolTimeout::Standard,
        "long" => ToolTimeout::Long,
        _ => {
            let bound = duration(text).ok_or_else(bad)?;
            check_bound(&format!("the policy's {at}"), bound)?;
            ToolTimeout::Custom(bound)
        }
    };
    Ok(tier)
}

fn server_rules(value: &Value, at: &str) -> Result<ServerRules> {
    let mut rules = ServerRules::default();
    for (key, value) in object(value, at)? {
        let here = format!("{at}/{key}");
        match key.as_str() {
            "allow" => rules.allow = Some(names(value, &here)?),
            "deny" => rules.deny = names(value, &here)?,
            "concurrency" => {
                rules.concurrency = Some(bounded(value, &here, 1, MAX_CONCURRENCY as u64)? as usize)
            }
            "tools" => {
                for (tool, body) in object(value, &here)? {
                    let tool_at = format!("{here}/{tool}");
                    let mut rule = Rule::default();
                    let mut access = Access::default();
                    for (key, value) in object(body, &tool_at)? {
                        let key_at = format!("{tool_at}/{key}");
                        if !rule_key(&mut rule, key, value, &key_at)?
                            && !access.key(key, value, &key_at)?
                        {
                            return Err(unknown(
                                key,
                                &tool_at,
                                "timeout, result_chars, overflow, idempotent, allow_large_integers, scopes, subjects",
                            ));
                        }
                    }
                    rules.tools.insert(tool.clone(), rule);
                    if !access.is_empty() {
                        rules.tool_access.insert(tool.clone(), access);
                    }
                }
            }
            _ => {
                if !rule_key(&mut rules.rule, key, value, &here)?
                    && !rules.access.key(key, value, &here)?
                {
                    return Err(unknown(key, at, "allow, deny, concurrency, tools, timeout, result_chars, overflow, idempotent, allow_large_integers, scopes, subjects"));
                }
            }
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests;

//! A gateway: one MCP server in front of every server of a config file, with the harness's
//! policy enforced on every call (`toolwire serve`).
//!
//! [`Gateway::start`] starts every backend of a [`ServerConfigs`] in parallel, each within
//! [`GatewayConfig::start_timeout`] (10 s by default); one that fails to start (or to list
//! its tools) is reported in [`Gateway::report`] with its error, as `doctor` reports it,
//! logged once at `warn`, and left out, never holding up the others. The tools of the others
//! (all pages) are served through a [`Server`] under their front names
//! (`mcp__{server}__{tool}` by default, [`Policy::namespace`]), over stdio
//! ([`Gateway::serve_stdio`]) or Streamable HTTP ([`Gateway::serve_http`], loopback unless
//! told otherwise).
//!
//! # Starting without waiting
//!
//! [`Gateway::start`] returns once every backend has started or been left out.
//! [`Gateway::launch`] (what `toolwire serve` runs) returns at once: the front server answers
//! `initialize` and every request from the start, and each backend joins when it is ready,
//! its lists served in one change, so the front clients get one `list_changed` per kind.
//! [`StartReport::starting`] names those not ready yet, and [`Gateway::wait_started`] waits
//! for them. Meanwhile `tools/list`, and a call of a tool not served, wait (on a front worker,
//! at most until the start timeout: [`Server::set_settling`]) until every backend has
//! started or been left out, so a host that lists once, or calls without listing, sees every
//! backend that starts in time. Since a front client may initialize before any backend is
//! ready, the launched gateway declares tools, resources (with subscriptions), prompts and
//! completion from the start (lists empty until a backend offers them; a subscription or
//! completion a backend does not offer is refused or empty); the Skills extension is
//! declared once every backend has started or been left out, for the front clients that
//! initialize from then on. ([`Gateway::start`] declares what the started backends offer.)
//!
//! # The policy fails closed
//!
//! A [`Policy`] naming a server the config lacks is an error of the start
//! ([`Policy::check_servers`]: the config's names, with a "did you mean"). A backend whose
//! listing the policy's `deny`, `allow` or `tools` names do not match (a name it lists as
//! neither a tool nor a prompt, or a `tools` name that is not one of its tools; most likely a
//! typo, whose rule would silently not apply) is kept out: none of its tools, prompts or
//! resources are served, it is in [`StartReport::failed`] with a [`PolicyMismatch`] (the
//! names, a "did you mean", what it lists), logged once at `warn`. Its listing is judged when
//! it arrives at start, when the backend joins late, and on each of its list changes: a tool
//! that appears later is served or not by the same names, and a backend whose listing comes to
//! match them is served again (logged too). The policy is read once: a policy fixed on disk
//! takes effect when the gateway is started again.
//!
//! # Names and pinned definitions
//!
//! A tool's front name is the policy's `namespace` with `{server}` and `{tool}` filled in
//! (`"{tool}"` serves the backends' own names). A name two backends give is served by the
//! first of them in the config's order, whenever they join: one that joins first and is later
//! in the order gives the name up when the earlier one joins (the front clients are told the
//! list changed), and serves it again once the earlier one stops listing it. Each clash is
//! logged at `warn` and in `toolwire/stats`'s `clashes`.
//!
//! With a pin file ([`Policy::pins`]; see [`pins`] for its format) each backend tool's
//! definition is pinned the first time it is served; a listing (at start, after a restart
//! or a list change) whose definition of a pinned tool differs holds that tool: it is not
//! listed, calling it is `UNKNOWN_TOOL` saying why, and `toolwire/stats`'s `held`, a `warn`
//! line and the file's `pending` section say which fields changed, until the operator
//! approves it ([`PinFile::approve`]) and the gateway reads the file again
//! ([`Gateway::reload_pins`]) or starts again. A tool no pin names is served and pinned, or
//! held too under [`NewTools::Hold`].
//!
//! # Resources and prompts
//!
//! The backends' resources, resource templates and prompts (all pages, within the backends'
//! clients' list bounds) are served too:
//!
//! * Prompts are named like tools (`mcp__{server}__{prompt}`) and the policy's `allow` and
//!   `deny` lists apply to them by name, as to tools: a denied prompt is not listed, and its
//!   `prompts/get` is refused (-32602, unknown prompt). `prompts/get` goes to the owning
//!   backend under its own name, with the arguments; the backend checks them.
//! * Resources keep their URIs (a URI is an address: renamed, it would point nowhere), and
//!   templates are listed as their backends list them. `resources/read` goes to the backend
//!   that listed the URI, or whose template matches it (RFC 6570, every operator). A URI
//!   or template that two backends list is served from the first in the config's order
//!   ([`ServerConfigs::names`]) under [`Gateway::start`], and from the first to join under
//!   [`Gateway::launch`]; the clash is logged and in [`StartedBackend::clashes`].
//!   (A clash is settled when the second backend is listed: should the first drop the URI
//!   later, the second serves it from its own next re-listing.)
//!   The policy's lists do not apply to resources: they are data the host reads, never run.
//! * `completion/complete` goes to the backend that owns the prompt or template;
//!   `resources/subscribe` and `unsubscribe` to the backend that owns the URI (asked on the
//!   first front subscription and told on the last unsubscription), and its
//!   `notifications/resources/updated` come back to the front clients subscribed (a
//!   2026-07-28 backend, which has no `resources/subscribe`, is held one
//!   `subscriptions/listen`, which also carries its list changes: see `listen.rs`). A 2026-07-28 front client's
//!   `subscriptions/listen` hears the updates of URIs a handshake-era client subscribed to,
//!   but does not itself subscribe at the backend.
//! * A backend's `notifications/resources/list_changed` or `prompts/list_changed` lists that
//!   kind again, as its tools are. The gateway declares resources, subscriptions, prompts
//!   and completion when a backend did at start.
//! * Skills (the Skills extension, SEP-2640) keep their URIs and names, as resources do: when
//!   a backend declared the extension at start the gateway declares it (`directoryRead` when
//!   one did), `skills/list` merges the backends' entries as they sent them (a skill URI two
//!   list is served from the first in the config's order; the clash is logged and in
//!   [`StartedBackend::clashes`]), and `skills/get` and `resources/directory/read` go to the
//!   backends in that order, the first answer winning. The skills' files are the backends'
//!   resources, read through the resource pass-through; the front client verifies them.
//! * Reads, prompts and completions are forwarded within the front request's bound; each is
//!   a `request` and a `response` line of the transcript, but not counted in the stats
//!   (their counters are the tool calls').
//!
//! ```no_run
//! use toolwire::gateway::{Gateway, GatewayConfig, Policy};
//! use toolwire::ServerConfigs;
//!
//! # fn main() -> Result<(), toolwire::Error> {
//! let configs = ServerConfigs::load("claude_desktop_config.json")?;
//! let gateway = Gateway::start(&configs, Policy::load("policy.json")?, GatewayConfig::new())?;
//! for failed in &gateway.report().failed {
//!     eprintln!("{}: {}", failed.name, failed.error);
//! }
//! gateway.serve_stdio()?;
//! # Ok(()) }
//! ```
//!
//! # Every call, in order
//!
//! Every tool call runs through one [`Harness`] pipeline, the one a local harness runs: a
//! backend's tool is an [`crate::harness::ImportedTool`] whose run is the forwarded call
//! ([`Harness::call_imported`]).
//!
//! 1. A name the gateway does not serve (a tool the [`Policy`] denies is never listed) is
//!    answered `UNKNOWN_TOOL` and goes nowhere.
//! 2. The arguments are checked against the backend tool's input schema and the harness's
//!    integer bound (±(2^53 − 1)): `INVALID` with the repair message, before anything is
//!    forwarded.
//! 3. The caller's budget ([`Policy::calls_per_caller`] per [`Policy::budget_window`]), a
//!    harness budget scope counting each sending to a backend: `BUDGET` once spent, until
//!    the caller's window ends ([Budgets](#budgets) says who a caller is and what counts).
//! 4. The backend's admission handle ([`crate::harness::Admission`], its concurrency
//!    limit): `BUSY` at once when it has that many calls in flight; nothing is queued.
//! 5. The call goes to the backend with the tool's timeout (its tier or duration); progress
//!    comes back to the front client only when it sent a progress token, and the front
//!    client's cancellation is waited on beside the answer and sent on
//!    (`notifications/cancelled`). An idempotent tool's call that met its backend's death is
//!    sent once more (the harness's retry). The answer is passed on as the backend sent it,
//!    within the tool's result limit, measured over its text, content blocks and
//!    `structuredContent` together: over it, a tool that declares an `outputSchema` is
//!    answered with a tool error saying so (no `structuredContent`, which clients would
//!    check against the schema), any other is cut with the harness's marker (or refused,
//!    under [`crate::harness::Overflow::Reject`]). A timeout is `TIMEOUT`; a failure of the
//!    backend is `TOOL_ERROR` with the harness's words (the real text goes to the audit and
//!    the log).
//!
//! Each refusal is a tool result with `isError: true` whose text starts with the status
//! word, as the harness answers a model: `"INVALID: …"`, `"BUSY: …"`, `"BUDGET: …"`.
//!
//! # Budgets
//!
//! A budget bounds how many calls one caller can make the gateway send to its backends in a
//! window: [`Policy::calls_per_caller`] (default 1,000) per [`Policy::budget_window`]
//! (default 60 s), one harness budget scope ([`crate::harness::BudgetScopes::with_window`])
//! per caller.
//!
//! * **What counts**: each sending of a tool call to a backend, whatever its answer (`OK`, a
//!   tool error, `TIMEOUT`); a call sent again (an idempotent tool's retry after its backend
//!   died) counts each time. Refusals count nothing: `UNKNOWN_TOOL`, `INVALID`, `BUSY`,
//!   `BUDGET` itself. Other requests (listings, reads of resources, prompts, pings) are not
//!   tool calls and are not counted.
//! * **Who a caller is**: with authorization in front ([`GatewayConfig::http`] with
//!   [`crate::server::HttpServerConfig::authorization`], `serve --auth-…`), the subject of
//!   the caller's access token and its issuer, wherever and however often it connects;
//!   callers behind one address count apart. Without authorization, over HTTP, the network
//!   the client calls from: its IPv4 address,
//!   or its IPv6 address's /64 network (one host's usual share). Every handshake-era session
//!   the client opens (counted by the address that sent its `initialize`) and every
//!   2026-07-28 request it sends count against that one budget, so a new session or a new
//!   connection starts nothing over. Over stdio (and a connection in memory, through
//!   [`Gateway::server`]), the connection: both eras' requests on it.
//! * **The window**: a caller's window begins with the first call counted for it, and its
//!   count starts over once the window has ended; so at most `calls_per_caller` sendings per
//!   window, and at most twice that in any span of one window's length.
//! * **At the bound**: the call is answered at once, nothing sent, with a tool error
//!   (`isError: true`) whose text is `BUDGET: the attempt budget of 1000 per 60 s is spent
//!   (it starts over in 12 s); nothing was run`; the transcript records the decision.
//! * **How many callers**: the budgets of at most 4,096 callers are held. A caller whose
//!   window has ended holds nothing and makes room; while all 4,096 hold a count, new
//!   callers share one overflow budget (the same limit and window) until a window ends. No
//!   caller is forgotten with a count in its window, so none can start its own count over
//!   by calling from many addresses.
//! * **One address, many clients**: clients behind one proxy, load balancer or NAT, and
//!   all clients on the gateway's own host (loopback), have one address and share one
//!   budget: set `calls_per_caller` for all of them together.
//!
//! # Pass-through
//!
//! A backend's `notifications/tools/list_changed` (or the resources' or prompts') re-lists
//! that kind of that backend, on a thread of its own, and the gateway's list changes with it
//! in one step ([`Server::apply`]): front clients get one notification per kind that
//! changed, however many items were replaced. A backend's
//! requests to the client (`sampling/createMessage`, `elicitation/create`, `roots/list`) go
//! to the front client whose call is in flight on that backend, when there is exactly one
//! such call and that client declared the capability; otherwise they are declined with an
//! error saying why (roots: an empty list; elicitation: declined). A 2026-07-28 front client
//! cannot be sent requests: a handshake-era backend's requests during its tool call are
//! bridged into input rounds, the call held open between a round and its retry (at most
//! [`GatewayConfig::bridge_round_timeout`], 60 s by default, and
//! [`GatewayConfig::max_bridged_rounds`] calls, 1,024 by default), one call for the budget
//! and the audit. A backend's list changes reach the gateway on a handshake-era session
//! (stdio, or an HTTP session), and a 2026-07-28 backend's on the one `subscriptions/listen`
//! it is held from when it joins (asking for the list changes it declares and the updates of
//! the subscribed URIs: `listen.rs`); both re-list the same way. The
//! tasks extension passes through to a backend that offers it, for a front client that
//! declares it (the task's id sealed: `tasks.rs`). A backend that dies is
//! started again on its next call under [`GatewayConfig::restart`] (by default at most 5
//! restarts in 60 s, waiting 100 ms, doubling to 5 s, between them), while the others
//! serve; an idempotent tool's call that met the death is sent once more. The new process's
//! tools, resources and prompts are then listed again and served in place of the old ones
//! (a tool it no longer offers is `UNKNOWN_TOOL` from then on), and it is asked again for
//! the front clients' resource subscriptions.
//!
//! # Authorization
//!
//! With `GatewayConfig::token_store` (feature `oauth`; `toolwire serve` passes the tokens
//! file `toolwire login` writes), an HTTP backend that needs OAuth authorizes with the
//! stored tokens, refreshing them as they expire, and its entry's OAuth fields. The gateway
//! never asks anyone: a backend whose tokens are missing or refused is in
//! [`StartReport::failed`] as needing authorization, with the command that logs in
//! (`toolwire --config FILE --server NAME login`), and left out while the others serve. An
//! entry with its own `Authorization` header is sent as it is.
//!
//! # Observability
//!
//! With [`GatewayConfig::transcript`], every decision and every forwarded call is a line of
//! the harness's JSONL transcript (`received`, `busy`, `request`, `response`, `retry`,
//! `finished`: the harness writes them, with one sequence of call numbers), and each forwarded read, prompt get and completion a `request` and a
//! `response` line whose `tool` is the method and what it names (`resources/read URI`,
//! `prompts/get NAME`): sizes and statuses, never arguments or results, and URLs in error
//! texts masked. A backend that quotes its credentials (its entry's header values, URL
//! password, OAuth token, `env` and `envFile` values) in an error, an `isError` text, a log
//! message or its stderr has them taken out where its client reads them (see
//! [`crate::transport::Scrubber`]), so no log line, transcript detail or front client's
//! answer shows them. Counters per backend and status answer the `toolwire/stats` request and
//! [`Gateway::stats`]; [`Gateway::stats_table`] is the text `toolwire serve` prints on exit.
//!
//! # Scaling out over HTTP
//!
//! The gateway keeps no state that a second instance cannot rebuild from the same config and
//! policy: its backends are its own children (or its own HTTP sessions), started from the
//! config. Several instances behind an ordinary HTTP load balancer serve the same tools
//! (docs/server.md, "Running several instances", has tested HAProxy and nginx configurations):
//!
//! * 2026-07-28 requests may go to any instance (round robin) once the instances share
//!   their `requestState` keys ([`GatewayConfig::state_keys`], `serve --state-key-file`).
//!   Budgets are per instance unless the instances share a store
//!   ([`GatewayConfig::state_store`], `serve --state redis://…`; see [Budgets](#budgets)).
//! * Handshake-era sessions live in the instance that answered `initialize`: the balancer
//!   routes on `Mcp-Session-Id` (ids carry [`HttpServerConfig::instance_id`] as a prefix);
//!   an instance that never saw a session answers 404 and the client starts a new one.
//!
//! Each instance starts its own copy of every stdio backend; a backend that is itself an
//! HTTP service is shared by all of them, its own limits on top of each instance's.
//!
//! # Threads
//!
//! The front [`Server`]'s workers (each forwarded call holds one while its backend works:
//! the harness admits a backend's calls by its own handle and runs them there), one idle
//! harness worker, a starting thread per backend (ended by its deadline), the backends'
//! clients' threads, a short-lived thread per re-listing, and a thread per bridged call (a
//! 2026-07-28 front client's call of a handshake-era backend) while it runs or is held.
//! [`Gateway::close`] (or
//! dropping the last clone) closes every backend.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::Value;

use crate::config::ServerConfigs;
use crate::error::{Error, Result};
use crate::harness::{Audit, AuditEvent, BudgetScopes, Harness, HarnessConfig, Transcript};
use crate::mcp::{ProtocolMode, RestartPolicy};
use crate::server::{HttpServer, HttpServerConfig, Method, Server, ServerConfig};

mod backend;
mod bridge;
mod catalog;
mod forward;
mod listen;
mod lists;
mod names;
mod pinning;
pub mod pins;
mod policy;
mod rounds;
mod skills;
mod start;
mod stats;
mod tasks;

pub use pins::{NewTools, PinFile, MAX_PIN_FILE_BYTES};
pub use policy::{AuthSection, Policy, PolicyMismatch, UnknownName, MAX_POLICY_BYTES};
pub use start::{Clash, FailedBackend, StartReport, StartedBackend};

use backend::Backend;

/// The log target of the gateway's records.
pub const LOG_TARGET: &str = "toolwire::gateway";
/// The method that answers the gateway's counters.
pub const STATS_METHOD: &str = "toolwire/stats";

/// How long past its own timeout the front server waits for a forwarded call, so the
/// gateway's TIMEOUT answer, not the server's bound, is what the client reads.
const FRONT_GRACE: Duration = Duration::from_secs(2);
/// The most callers whose budgets are held at once (see [Budgets](self#budgets)).
const MAX_CALLER_BUDGETS: usize = 4096;

/// How the gateway runs. `GatewayConfig::new()` spells out every default.
#[derive(Clone)]
pub struct GatewayConfig {
    name: String,
    version: String,
    start_timeout: Duration,
    connect_timeout: Duration,
    restart: RestartPolicy,
    workers: usize,
    protocol: ProtocolMode,
    transcript: Option<Arc<Transcript>>,
    http: HttpServerConfig,
    metrics: Option<crate::metrics::Metrics>,
    state_keys: Option<crate::server::StateKeys>,
    #[cfg(feature = "oauth")]
    token_store: Option<Arc<dyn crate::auth::TokenStore>>,
    // Shared state (issue 25).
    state_store: Option<Arc<dyn crate::server::StateStore>>,
    bridge: bridge::Bounds,
}

/// The name [`GatewayConfig`] had before every configuration was a `*Config`; kept for one
/// release.
#[deprecated(note = "renamed to `GatewayConfig`")]
pub type GatewayOptions = GatewayConfig;

impl std::fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("GatewayConfig");
        debug
            .field("name", &self.name)
            .field("version", &self.version)
            .field("start_timeout", &self.start_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("restart", &self.restart)
            .field("workers", &self.workers)
            .field("protocol", &self.protocol)
            .field("transcript", &self.transcript.is_some())
            .field("http", &self.http)
            .field("metrics", &self.metrics.is_some())
            .field("state_keys", &self.state_keys);
        #[cfg(feature = "oauth")]
        debug.field("token_store", &self.token_store.is_some());
        debug.finish()
    }
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            name: "toolwire-gateway".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            start_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(30),
            restart: RestartPolicy::default(),
            workers: 64,
            protocol: ProtocolMode::Auto,
            transcript: None,
            http: HttpServerConfig::new(),
            metrics: None,
            state_keys: None,
            #[cfg(feature = "oauth")]
            token_store: None,
            // Shared state (issue 25).
            state_store: None,
            bridge: bridge::Bounds::default(),
        }
    }
}

impl GatewayConfig {
    /// The defaults.
    pub fn new() -> GatewayConfig {
        GatewayConfig::default()
    }

    /// The `serverInfo` name. Defaults to `toolwire-gateway`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How long each backend may take to start, finish its lifecycle and list its tools,
    /// resources and prompts (1 ms to 1 hour): one that has not by then is left out (and
    /// reported once), while the others serve. It bounds the backends' requests that carry no
    /// deadline of their own (listing again after a change) too. Defaults to 10 s.
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// How long starting or reaching a backend and its handshake may take, each time it is
    /// started (at the gateway's start, within [`GatewayConfig::start_timeout`] too, and
    /// again after it died). Defaults to 30 s (so at the first start the start timeout is
    /// the bound).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// When a backend that died is started again (on its next call). Defaults to
    /// [`RestartPolicy::default`]: at most 5 restarts in 60 s, 100 ms doubling to 5 s between
    /// them.
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.restart = policy;
        self
    }

    /// The front server's workers (1 to 1024): each forwarded call holds one while it runs;
    /// past them a request is answered busy at once. Defaults to 64.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// The lifecycle the backends' clients use. Defaults to [`ProtocolMode::Auto`].
    pub fn protocol(mut self, mode: ProtocolMode) -> Self {
        self.protocol = mode;
        self
    }

    /// The JSONL transcript every decision and forwarded call goes to. Defaults to none.
    pub fn transcript(mut self, transcript: Arc<Transcript>) -> Self {
        self.transcript = Some(transcript);
        self
    }

    /// Where the tokens of HTTP backends that need OAuth are (those `toolwire login` stored:
    /// [`crate::auth::FileTokenStore::default_path`]). Each HTTP entry that sends no
    /// `Authorization` header of its own then authorizes with its tokens (refreshed when
    /// they expire) and its entry's OAuth fields (client id and secret, scopes, metadata
    /// URL), and never asks anyone: a backend whose tokens are missing or refused is
    /// reported ("needs authorization: run `toolwire … login`") and left out, while the
    /// others serve. Defaults to none: HTTP backends get no authorization, and one that
    /// needs it is left out with the server's refusal.
    #[cfg(feature = "oauth")]
    pub fn token_store(mut self, store: Arc<dyn crate::auth::TokenStore>) -> Self {
        self.token_store = Some(store);
        self
    }

    /// Records the front server's requests and the harness's calls into `metrics`, which
    /// [`Gateway::serve_metrics`] serves ([`crate::metrics`]). Defaults to none.
    pub fn metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The front server's `requestState` keys ([`ServerConfig::state_keys`]), shared by the
    /// instances behind one load balancer. Defaults to a random key per process.
    pub fn state_keys(mut self, keys: crate::server::StateKeys) -> Self {
        self.state_keys = Some(keys);
        self
    }

    /// The HTTP settings of [`Gateway::serve_http`] (its address is the one given there).
    /// Defaults to [`HttpServerConfig::new`] (loopback only, with its bounds).
    pub fn http(mut self, config: HttpServerConfig) -> Self {
        self.http = config;
        self
    }
}

/// The backend of each front tool name served.
type Owners = Arc<RwLock<std::collections::HashMap<String, (String, String)>>>;

/// What every part of the gateway shares.
pub(crate) struct Core {
    server: Server,
    policy: Policy,
    backends: RwLock<BTreeMap<String, Arc<Backend>>>,
    /// Front names of denied tools, by backend, so a call of one is counted where it belongs.
    denied: RwLock<BTreeMap<String, String>>,
    stats: Arc<stats::Stats>,
    /// The backend of each front tool name, for the counters the harness's `request` lines
    /// feed.
    owners: Owners,
    audit: Audit,
    /// Every tool call runs through it; its call numbers are the transcript's.
    harness: Harness,
    /// The front callers' budgets.
    scopes: BudgetScopes,
    /// The last number given to a front connection without an address (its budget scope's
    /// key).
    next_connection: AtomicU64,
    /// Front subscriptions to resources, by URI.
    subscriptions: catalog::Subscriptions,
    /// Where each backend is.
    roster: start::Roster,
    /// Who serves a front tool name two backends list.
    names: names::Names,
    /// The pinned tool definitions (off without a pin file).
    pins: pinning::Pinning,
    /// The calls held between a bridged input round and its retry.
    held: Arc<bridge::Held>,
}

impl Core {
    fn next_call(&self) -> u64 {
        self.harness.next_call_number()
    }

    fn emit(&self, event: AuditEvent) {
        self.audit.emit(event);
    }
}

/// The gateway. Cheap to clone; clones share everything. See the module documentation.
#[derive(Clone)]
pub struct Gateway {
    core: Arc<Core>,
    options: Arc<GatewayConfig>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("report", &self.report())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Starts every backend of `configs` in parallel (each within the start timeout), lists
    /// their lists, and makes the front server; returns once every backend has started or
    /// been left out, and serves those started in the config's order. See the module
    /// documentation. Backends that fail are in [`Gateway::report`]; the gateway starts even
    /// with none.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for options out of their bounds, or a policy naming a server the
    /// config does not have ([`Policy::check_servers`]); [`Error::Io`] when a thread cannot
    /// be started.
    pub fn start(
        configs: &ServerConfigs,
        policy: Policy,
        options: GatewayConfig,
    ) -> Result<Gateway> {
        Gateway::begin(configs, policy, options, true)
    }

    /// As [`Gateway::start`], but returns at once: the front server answers from the start
    /// (`initialize` does not wait for any backend), and each backend joins when it is
    /// ready, its front clients told the tool list changed. One not ready within the start
    /// timeout is left out and reported once. [`Gateway::wait_started`] waits for them all.
    ///
    /// # Errors
    ///
    /// As [`Gateway::start`].
    pub fn launch(
        configs: &ServerConfigs,
        policy: Policy,
        options: GatewayConfig,
    ) -> Result<Gateway> {
        Gateway::begin(configs, policy, options, false)
    }

    /// Waits until every backend has started or been left out (at most the start timeout
    /// from [`Gateway::launch`], and a little more for the last to be served); true when
    /// they have. At once after [`Gateway::start`].
    pub fn wait_started(&self) -> bool {
        self.core
            .roster
            .wait(std::time::Instant::now() + self.options.start_timeout + FRONT_GRACE)
    }

    fn begin(
        configs: &ServerConfigs,
        policy: Policy,
        options: GatewayConfig,
        hold: bool,
    ) -> Result<Gateway> {
        crate::harness::check_bound("the gateway's start timeout", options.start_timeout)?;
        crate::harness::check_bound("the gateway's connect timeout", options.connect_timeout)?;
        options.bridge.check()?;
        if !(1..=1024).contains(&options.workers) {
            return Err(Error::Config(format!(
                "the gateway's workers must be 1 to 1024, not {}",
                options.workers
            )));
        }
        let mut server_config = ServerConfig::new(options.name.clone(), options.version.clone())
            .workers(options.workers)
            .request_timeout(crate::harness::ToolTimeout::Long.duration() + FRONT_GRACE);
        server_config.metrics = options.metrics.clone();
        server_config.state_keys = options.state_keys.clone();
        if let Some(store) = &options.state_store {
            server_config = server_config.state_store(Arc::clone(store));
        }
        let server = Server::new(server_config)?;
        policy.check_servers(configs)?;
        policy.check_callers(options.http.authorization.is_some())?;
        // Each backend's tools run on the front server's workers, admitted by the backend's
        // own handle: the harness's one worker never runs a gateway call.
        let mut harness_config = HarnessConfig::default()
            .workers(1)
            .attempt_budget(policy.caller_budget());
        harness_config.transcript = options.transcript.clone();
        harness_config.metrics = options.metrics.clone();
        // Each attempt sent to a backend is counted as its `request` line would be written,
        // by its tool's name only: no event is made for it (nor its sizes, which take
        // writing the arguments and the result out) unless a transcript or the log reads it.
        let stats = Arc::new(stats::Stats::default());
        let owners: Owners = Arc::default();
        let (counted, owned) = (Arc::clone(&stats), Arc::clone(&owners));
        harness_config.requests = Some(Arc::new(move |tool: Option<&str>| {
            let owner =
                tool.and_then(|tool| owned.read().get(tool).map(|(backend, _)| backend.clone()));
            if let Some(backend) = owner {
                counted.forwarded(&backend);
            }
        }));
        let harness = Harness::new(crate::harness::ToolRegistry::new(), harness_config)?;
        let scopes = forward::caller_scopes(&policy, options.state_store.as_ref());
        // A pin file that cannot be read stops the start: pins fail closed.
        let pins = pinning::Pinning::open(&policy)?;
        let core = Arc::new(Core {
            server,
            policy,
            backends: RwLock::new(BTreeMap::new()),
            denied: RwLock::new(BTreeMap::new()),
            stats,
            owners,
            audit: Audit {
                transcript: options.transcript.clone(),
                observer: None,
                metrics: options.metrics.clone(),
                requests: None,
            },
            scopes,
            harness,
            next_connection: AtomicU64::new(0),
            subscriptions: catalog::Subscriptions::default(),
            roster: start::Roster::default(),
            names: names::Names::default(),
            pins,
            held: bridge::Held::new(options.bridge),
        });
        forward::decide_access(&core);
        let weak = Arc::downgrade(&core);
        core.server
            .set_unknown_tool(move |name: &str| match weak.upgrade() {
                Some(core) => core.unknown_tool(name),
                None => format!("UNKNOWN_TOOL: {}", crate::json::quote(name)),
            });
        // A host that lists the tools (or calls one) while backends start is answered once
        // they have started or been left out: it sees every backend that starts in time.
        let weak = Arc::downgrade(&core);
        core.server.set_settling(move |deadline| {
            weak.upgrade().is_none_or(|core| core.roster.wait(deadline))
        });
        let weak = Arc::downgrade(&core);
        core.server.add_method(
            Method::new(STATS_METHOD, move |_context, _params| {
                Ok(weak.upgrade().map_or(Value::Null, |core| core.stats_json()))
            })
            .inline(true),
        )?;
        if !hold {
            // Declared before any backend is ready: a front client initializing now learns
            // of the kinds a backend that joins later offers.
            catalog::serve_catalog(&core, true);
        }
        start::start_backends(&core, configs, &options, hold)?;
        Ok(Gateway {
            core,
            options: Arc::new(options),
        })
    }

    /// Which backends are served, which are left out (and why), and which are still
    /// starting, now: a backend that joins late, or that a list change puts out of or back
    /// in line with the policy's names, moves.
    pub fn report(&self) -> StartReport {
        self.core.roster.report()
    }

    /// The front server (to serve it over another transport, or to add tools of its own).
    pub fn server(&self) -> &Server {
        &self.core.server
    }

    /// Serves the process's stdin and stdout until stdin ends.
    ///
    /// # Errors
    ///
    /// When the stdio threads cannot start.
    pub fn serve_stdio(&self) -> Result<()> {
        self.core.server.serve_stdio()
    }

    /// Serves Streamable HTTP at `addr` (with [`GatewayConfig::http`]'s other settings);
    /// returns the running server at once. A non-loopback address is served only when it is
    /// given explicitly: put a TLS proxy in front of it.
    ///
    /// # Errors
    ///
    /// When the address cannot be bound.
    pub fn serve_http(&self, addr: SocketAddr) -> Result<HttpServer> {
        HttpServer::bind(&self.core.server, self.options.http.clone().addr(addr))
    }

    /// Serves [`GatewayConfig::metrics`] as Prometheus text at `GET /metrics` on `addr` (with
    /// [`GatewayConfig::http`]'s other settings, as [`Gateway::serve_http`] does); returns the
    /// running listener at once.
    ///
    /// # Errors
    ///
    /// When the gateway records no metrics or the address cannot be bound.
    pub fn serve_metrics(&self, addr: SocketAddr) -> Result<HttpServer> {
        let config = self.options.http.clone().addr(addr).path("/metrics");
        HttpServer::bind_metrics(&self.core.server, config)
    }

    /// The counters: `{"calls": n, "backends": {name: {"tools", "in_flight", "limit",
    /// "forwarded", "cancelled", "statuses": {"OK": n, …}}}, "unserved": {"UNKNOWN_TOOL": n},
    /// "clashes": […], "held": […]}`, as `toolwire/stats` answers them. `clashes` lists each
    /// name two backends list (`{"kind": "tool", "name", "server", "served_by"}`: `server`
    /// lists it and does not serve it); `held` each tool the pins hold (`{"server", "tool",
    /// "name", "reason": "changed" | "new", "changed": [fields]}`).
    pub fn stats(&self) -> Value {
        self.core.stats_json()
    }

    /// The counters as lines of text, one per backend.
    pub fn stats_table(&self) -> String {
        self.core.stats.table()
    }

    /// Closes every backend (stdio children are ended) and the harness (calls from then on
    /// are `BUSY`). Idempotent.
    pub fn close(&self) {
        self.core.roster.close();
        self.core.held.clear();
        for backend in self.core.backends.read().values() {
            backend.close();
        }
        self.core.harness.close();
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        for backend in self.backends.get_mut().values() {
            backend.close();
        }
    }
}

fn masked(error: &Error) -> String {
    crate::mask::mask_urls_in(&error.to_string()).into_owned()
}

//! Starting the backends: each in parallel on a thread of its own, within the start
//! deadline, listing its tools, resources and prompts; one that fails is reported once and
//! left out. Each backend joins when it is ready (its tools served, the front clients told
//! the list changed), or, for [`super::Gateway::start`], all together in the config's order
//! once every one is ready or left out.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::backend::Backend;
use super::catalog::{self, Listed};
use super::{lists, masked, Core, GatewayConfig, FRONT_GRACE, LOG_TARGET};
use crate::config::ServerConfigs;
use crate::error::Error;
use crate::error::Result;
use crate::harness::SkippedTool;
use crate::mcp::{McpClient, McpConfig, Tool};
use crate::transport::Connector;

/// A backend that started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedBackend {
    /// Its name in the config.
    pub name: String,
    /// The front names of its tools.
    pub tools: Vec<String>,
    /// Its tools the gateway does not serve, and why (the policy, a bad name or schema).
    pub skipped: Vec<SkippedTool>,
    /// The front names of its prompts.
    pub prompts: Vec<String>,
    /// Its prompts the gateway does not serve, and why (the policy).
    pub skipped_prompts: Vec<SkippedTool>,
    /// The URIs of its resources served (another backend's clashes are not here).
    pub resources: Vec<String>,
    /// Its resource templates served.
    pub templates: Vec<String>,
    /// Its tool names, resource URIs, templates or prompt names another backend serves.
    pub clashes: Vec<Clash>,
    /// The lists (resources, prompts) that could not be read, and why; its tools serve.
    pub unlisted: Vec<String>,
}

/// A front tool or prompt name, resource URI or template that two backends list. A tool
/// name is served by the first backend in the config's order, whenever the backends join; a
/// URI, template or prompt by the first in the config's order under
/// [`super::Gateway::start`], and the first to join under [`super::Gateway::launch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    /// The URI, template or front name.
    pub key: String,
    /// The backend that serves it.
    pub served_by: String,
}

/// A backend that is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedBackend {
    /// Its name in the config.
    pub name: String,
    /// Why (secrets masked).
    pub error: String,
}

/// Where the backends are ([`super::Gateway::report`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartReport {
    /// The backends served, in the config's order.
    pub started: Vec<StartedBackend>,
    /// The backends left out: a bad config entry, a start or list that failed or passed its
    /// deadline, or a listing the policy's names do not match ([`super::PolicyMismatch`]: kept
    /// out until they match).
    pub failed: Vec<FailedBackend>,
    /// The backends still starting (only after [`super::Gateway::launch`], within the start
    /// timeout).
    pub starting: Vec<String>,
}

/// How far past the start deadline a starting backend's client's own bounds reach.
const OWN_BOUNDS_MARGIN: Duration = Duration::from_secs(1);

/// What a starting thread reports.
type Started = (String, Result<Connected>);
/// A backend's client and its lists.
type Connected = (McpClient, Arc<Vec<Tool>>, Listed);
/// A backend that started, or why it did not (as the report says it).
type Joined = std::result::Result<Connected, String>;

/// Where a backend is.
enum Place {
    Starting,
    Started(StartedBackend),
    Out(String),
}

/// Where each backend of the config is, in the config's order: what
/// [`super::Gateway::report`] reads.
#[derive(Default)]
pub(super) struct Roster {
    state: Mutex<Places>,
    settled: Condvar,
}

#[derive(Default)]
struct Places {
    order: Vec<(String, Place)>,
    /// Every backend has started or been left out.
    done: bool,
    /// The gateway is closed: a backend that starts now is closed at once.
    closed: bool,
}

impl Roster {
    fn add(&self, name: &str, place: Place) {
        self.state.lock().order.push((name.to_owned(), place));
    }

    /// Records that a backend is served (with its report) or left out (with why).
    pub(super) fn place(&self, name: &str, outcome: std::result::Result<StartedBackend, String>) {
        let mut state = self.state.lock();
        if let Some((_, place)) = state.order.iter_mut().find(|(known, _)| known == name) {
            *place = match outcome {
                Ok(started) => Place::Started(started),
                Err(why) => Place::Out(why),
            };
        }
    }

    fn is_starting(&self, name: &str) -> bool {
        self.state
            .lock()
            .order
            .iter()
            .any(|(known, place)| known == name && matches!(place, Place::Starting))
    }

    fn add_clash(&self, name: &str, clash: Clash) {
        for (known, place) in &mut self.state.lock().order {
            if let (true, Place::Started(started)) = (known == name, place) {
                started.clashes.push(clash);
                return;
            }
        }
    }

    /// A backend's place in the config's order (a name the config lacks is last).
    pub(super) fn rank(&self, name: &str) -> usize {
        self.state
            .lock()
            .order
            .iter()
            .position(|(known, _)| known == name)
            .unwrap_or(usize::MAX)
    }

    /// Records that a backend no longer serves a tool: a backend earlier in the config's
    /// order took its front name.
    pub(super) fn lose_tool(&self, name: &str, clash: Clash) {
        for (known, place) in &mut self.state.lock().order {
            if let (true, Place::Started(started)) = (known == name, place) {
                started.tools.retain(|tool| tool != &clash.key);
                started.clashes.retain(|known| known.key != clash.key);
                started.clashes.push(clash);
                return;
            }
        }
    }

    /// The backends still starting.
    pub(super) fn starting(&self) -> Vec<String> {
        let state = self.state.lock();
        state
            .order
            .iter()
            .filter(|(_, place)| matches!(place, Place::Starting))
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn started_names(&self) -> Vec<String> {
        let state = self.state.lock();
        state
            .order
            .iter()
            .filter(|(_, place)| matches!(place, Place::Started(_)))
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn finish(&self) {
        self.state.lock().done = true;
        self.settled.notify_all();
    }

    /// Waits until every backend has started or been left out, or `deadline`; true when
    /// they have.
    pub(super) fn wait(&self, deadline: Instant) -> bool {
        let mut state = self.state.lock();
        while !state.done {
            if self.settled.wait_until(&mut state, deadline).timed_out() {
                return state.done;
            }
        }
        true
    }

    /// Runs `then` unless the gateway is closed (then a backend that started is closed
    /// instead); false when it is.
    fn unless_closed(&self, then: impl FnOnce()) -> bool {
        let state = self.state.lock();
        if state.closed {
            return false;
        }
        then();
        true
    }

    /// Every backend has started or been left out, one at least is served, and the gateway
    /// is not closed.
    fn ready(&self) -> bool {
        let state = self.state.lock();
        state.done
            && !state.closed
            && state
                .order
                .iter()
                .any(|(_, place)| matches!(place, Place::Started(_)))
    }

    /// Marks the gateway closed: backends that start from now on are closed at once.
    pub(super) fn close(&self) {
        self.state.lock().closed = true;
    }

    pub(super) fn report(&self) -> StartReport {
        let state = self.state.lock();
        let mut report = StartReport::default();
        for (name, place) in &state.order {
            match place {
                Place::Starting => report.starting.push(name.clone()),
                Place::Started(started) => report.started.push(started.clone()),
                Place::Out(error) => report.failed.push(FailedBackend {
                    name: name.clone(),
                    error: error.clone(),
                }),
            }
        }
        report
    }
}

/// Starts every backend of `configs`, each on a thread of its own. With `hold`, waits until
/// each has started or passed its deadline and serves those started in the config's order;
/// without, returns at once and each joins when it is ready.
pub(super) fn start_backends(
    core: &Arc<Core>,
    configs: &ServerConfigs,
    options: &GatewayConfig,
    hold: bool,
) -> Result<()> {
    // `/readyz` (several instances behind a load balancer): ready once every backend has
    // started or been left out, with at least one served, until the gateway closes.
    let weak = Arc::downgrade(core);
    core.server.add_readiness_check("backends", move || {
        weak.upgrade().is_some_and(|core| core.roster.ready())
    })?;
    let left_out = |name: &str, error: String| {
        log::warn!(target: LOG_TARGET, "server {name:?} is left out: {error}");
        core.roster.add(name, Place::Out(error));
    };
    for (name, error) in configs.rejected() {
        left_out(name, error.to_owned());
    }
    let (sender, receiver) = crossbeam_channel::unbounded::<Started>();
    let mut starting = Vec::new();
    for name in configs.names_in_file_order() {
        let backend = Backend::new(name, core.policy.concurrency(name));
        core.stats.add_backend(name);
        let connector = match connector(configs, name, options) {
            Ok(connector) => connector,
            Err(error) => {
                left_out(name, masked(&error));
                continue;
            }
        };
        let config = backend.mcp_config(backend_config(options), lists::events(core));
        let sender = sender.clone();
        let thread_name = name.to_owned();
        let spawned = std::thread::Builder::new()
            .name("toolwire-gateway-start".into())
            .spawn(move || {
                let started = McpClient::connect_with(connector, config).and_then(|client| {
                    match catalog::list_tools(&client) {
                        Ok(tools) => {
                            let listed =
                                catalog::list(&client, catalog::RESOURCES | catalog::PROMPTS);
                            Ok((client, tools, listed))
                        }
                        Err(error) => {
                            let _ = client.close();
                            Err(error)
                        }
                    }
                });
                if let Err(crossbeam_channel::SendError((_, Ok((client, _, _))))) =
                    sender.send((thread_name, started))
                {
                    // Too late: the gateway left this backend out.
                    let _ = client.close();
                }
            });
        match spawned {
            Ok(_) => {
                core.roster.add(name, Place::Starting);
                starting.push(backend);
            }
            Err(error) => left_out(name, format!("cannot start a thread: {error}")),
        }
    }
    drop(sender);
    let deadline = Instant::now() + options.start_timeout;
    let joining = Joining {
        core: Arc::downgrade(core),
        configs: configs.clone(),
        timeout: options.start_timeout,
        hold,
    };
    if hold {
        joining.run(receiver, starting, deadline);
        return Ok(());
    }
    std::thread::Builder::new()
        .name("toolwire-gateway-join".into())
        .spawn(move || joining.run(receiver, starting, deadline))
        .map(drop)
        .map_err(Error::Io)
}

/// The start's end: takes each backend's word as it comes, until every one has spoken or
/// the deadline passed.
struct Joining {
    core: Weak<Core>,
    configs: ServerConfigs,
    timeout: Duration,
    hold: bool,
}

impl Joining {
    fn run(
        self,
        receiver: crossbeam_channel::Receiver<Started>,
        starting: Vec<Arc<Backend>>,
        deadline: Instant,
    ) {
        let mut held: BTreeMap<String, Joined> = BTreeMap::new();
        for _ in 0..starting.len() {
            let Ok((name, started)) = receiver.recv_deadline(deadline) else {
                break;
            };
            let started = started.map_err(|error| failure(&self.configs, &name, &error));
            match (
                self.hold,
                starting.iter().find(|backend| backend.name == name),
            ) {
                (false, Some(backend)) => self.join(backend, started),
                _ => {
                    held.insert(name, started);
                }
            }
        }
        // Late threads find the channel closed and close what they started.
        drop(receiver);
        // In the config's order, so a URI two backends list goes to the first.
        for backend in &starting {
            match held.remove(&backend.name) {
                Some(started) => self.join(backend, started),
                None if self
                    .core
                    .upgrade()
                    .is_some_and(|core| core.roster.is_starting(&backend.name)) =>
                {
                    let why = format!(
                        "it did not start and list its tools within {:?}",
                        self.timeout
                    );
                    self.join(backend, Err(why));
                }
                None => {}
            }
        }
        let Some(core) = self.core.upgrade() else {
            return;
        };
        if self.hold {
            super::catalog::serve_catalog(&core, false);
        }
        match super::skills::serve(&core, core.roster.started_names()) {
            Ok(clashes) => {
                for (name, clash) in clashes {
                    core.roster.add_clash(&name, clash);
                }
            }
            Err(error) => log::warn!(target: LOG_TARGET, "the skills cannot be served: {error}"),
        }
        core.roster.finish();
    }

    /// Serves a backend that started, or reports it left out (once).
    fn join(&self, backend: &Arc<Backend>, started: Joined) {
        let Some(core) = self.core.upgrade() else {
            if let Ok((client, _, _)) = started {
                let _ = client.close();
            }
            return;
        };
        let (client, tools, listed) = match started {
            Ok(connected) => connected,
            Err(why) => {
                log::warn!(target: LOG_TARGET, "server {:?} is left out: {why}", backend.name);
                core.roster.place(&backend.name, Err(why));
                return;
            }
        };
        // Every log message is asked for; each front call's own level decides what goes on.
        let logs = client
            .session_info()
            .is_ok_and(|info| !info.capabilities["logging"].is_null());
        if logs {
            if let Err(error) = client.set_logging_level("debug") {
                log::debug!(target: LOG_TARGET, "server {:?}: logging/setLevel: {error}", backend.name);
            }
        }
        backend.set_client(client);
        let admitted = core.roster.unless_closed(|| {
            core.backends
                .write()
                .insert(backend.name.clone(), Arc::clone(backend));
        });
        if !admitted {
            backend.close();
            return;
        }
        let (tools, listed) = listening(&core, backend, self.timeout, tools, listed);
        let joined = lists::serve_started(&core, backend, &tools, &listed);
        core.roster.place(&backend.name, joined);
        lists::after_start(&core, backend);
    }
}

/// A 2026-07-28 backend tells its list changes only on a `subscriptions/listen`: one is
/// opened before it is served (waited for at most the start timeout, and
/// [`super::listen::ACK_WAIT`]), and its lists are listed again once the backend listens, so
/// that a change it made since they were listed is served too.
fn listening(
    core: &Arc<Core>,
    backend: &Arc<Backend>,
    timeout: Duration,
    tools: Arc<Vec<Tool>>,
    listed: Listed,
) -> (Arc<Vec<Tool>>, Listed) {
    let until = Instant::now() + timeout.min(super::listen::ACK_WAIT);
    if !super::listen::join(core, backend, until) {
        return (tools, listed);
    }
    let Some(client) = backend.client() else {
        return (tools, listed);
    };
    match catalog::list_tools(client) {
        Ok(tools) => (
            tools,
            catalog::list(client, catalog::RESOURCES | catalog::PROMPTS),
        ),
        Err(error) => {
            log::warn!(
                target: LOG_TARGET,
                "server {:?} cannot be listed again: {}",
                backend.name,
                masked(&error)
            );
            (tools, listed)
        }
    }
}

/// The MCP settings every backend's client starts from.
fn backend_config(options: &GatewayConfig) -> McpConfig {
    let start = options.start_timeout;
    // Past the start deadline by a margin: the deadline, not a race with the client's own
    // bounds, decides when a backend is left out (and says so in its words).
    let connect = options.connect_timeout.min(start + OWN_BOUNDS_MARGIN);
    McpConfig::default()
        .mode(options.protocol)
        .client_name(options.name.clone())
        .connect_timeout(connect)
        .initialize_timeout(connect)
        .discover_timeout(start.min(Duration::from_secs(10)))
        .restart(options.restart)
        .rpc(
            crate::client::ClientConfig::default()
                .request_timeout(start)
                .max_total_timeout(
                    crate::harness::ToolTimeout::Custom(Duration::from_secs(3600)).duration()
                        + FRONT_GRACE,
                ),
        )
}

/// Why a backend is left out: a refused or missing authorization says how to log in, as
/// `doctor` says it; anything else is the error (URLs masked).
fn failure(configs: &ServerConfigs, name: &str, error: &Error) -> String {
    use crate::error::AuthErrorKind;
    match error.auth().map(|auth| auth.kind) {
        Some(AuthErrorKind::LoginRequired) => {
            format!(
                "needs authorization: run `{}`",
                login_command(configs, name)
            )
        }
        Some(AuthErrorKind::Refused) => format!(
            "needs authorization: run `{}` ({})",
            login_command(configs, name),
            masked(error)
        ),
        _ => masked(error),
    }
}

/// The command that logs in to a backend of `configs`.
fn login_command(configs: &ServerConfigs, name: &str) -> String {
    // A config read from a file names it; one parsed from text has no file to name.
    if std::path::Path::new(configs.source()).is_file() {
        format!(
            "toolwire --config {} --server {name} login",
            configs.source()
        )
    } else {
        format!("toolwire --server {name} login")
    }
}

/// How a backend is reached: its entry's connector, or for an HTTP entry without its own
/// `Authorization` header and with a token store, one that authorizes from the store.
fn connector(configs: &ServerConfigs, name: &str, options: &GatewayConfig) -> Result<Connector> {
    #[cfg(feature = "oauth")]
    if let Some(store) = &options.token_store {
        if let Some(crate::config::ServerEntry::Http { url, headers }) = configs.get(name) {
            let own = headers
                .iter()
                .any(|(header, _)| header.eq_ignore_ascii_case("authorization"));
            if !own {
                return authorized(configs, name, url, headers, store);
            }
        }
    }
    let _ = options;
    configs.connector(name)
}

/// An HTTP connector whose requests carry the store's tokens for `url`.
#[cfg(feature = "oauth")]
fn authorized(
    configs: &ServerConfigs,
    name: &str,
    url: &str,
    headers: &[(String, String)],
    store: &Arc<dyn crate::auth::TokenStore>,
) -> Result<Connector> {
    use crate::auth::{NonInteractive, OAuth, OAuthConfig};
    let settings = configs.oauth(name).cloned().unwrap_or_default();
    let mut config = OAuthConfig::default()
        .store(Arc::clone(store))
        .authorizer(Arc::new(NonInteractive::new(format!(
            "run `{}` first",
            login_command(configs, name)
        ))));
    if let Some(id) = settings.client_id {
        config = config.client_id(id);
    }
    if let Some(secret) = settings.client_secret {
        config = config.client_secret(secret);
    }
    if let Some(scopes) = settings.scopes {
        config = config.scopes(scopes);
    }
    if let Some(metadata) = settings.auth_server_metadata_url {
        config = config.server_metadata_url(metadata);
    }
    let oauth = Arc::new(OAuth::new(url.to_owned(), config)?);
    let mut http =
        crate::transport::HttpConfig::new(url).auth(oauth as Arc<dyn crate::transport::HttpAuth>);
    for (header, value) in headers {
        http = http.header(header.clone(), value.clone());
    }
    // The URL and headers are checked now, not at the first connection.
    crate::transport::HttpTransport::new(http.clone())?;
    Ok(http.connector())
}

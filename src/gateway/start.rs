//! Starting the backends: each in parallel on a thread of its own, within the start
//! deadline, listing its tools, resources and prompts; one that fails is reported and left
//! out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::backend::Backend;
use super::catalog::{self, Listed};
use super::{lists, masked, Core, FailedBackend, GatewayConfig, StartReport, FRONT_GRACE};
use super::{LOG_TARGET, START_GRACE};
use crate::config::ServerConfigs;
use crate::error::Error;
use crate::error::Result;
use crate::mcp::{McpClient, McpConfig, Tool};
use crate::transport::Connector;

/// What a starting thread reports.
type Started = (String, Result<Connected>);
/// A backend's client and its lists.
type Connected = (McpClient, Arc<Vec<Tool>>, Listed);

pub(super) fn start_backends(
    core: &Arc<Core>,
    configs: &ServerConfigs,
    options: &GatewayConfig,
) -> StartReport {
    let mut report = StartReport::default();
    for (name, error) in configs.rejected() {
        report.failed.push(FailedBackend {
            name: name.to_owned(),
            error: error.to_owned(),
        });
    }
    let (sender, receiver) = crossbeam_channel::unbounded::<Started>();
    let mut starting = Vec::new();
    for name in configs.names() {
        let backend = Backend::new(name, core.policy.concurrency(name));
        core.stats.add_backend(name);
        let connector = match connector(configs, name, options) {
            Ok(connector) => connector,
            Err(error) => {
                report.failed.push(FailedBackend {
                    name: name.to_owned(),
                    error: masked(&error),
                });
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
            Ok(_) => starting.push(backend),
            Err(error) => report.failed.push(FailedBackend {
                name: name.to_owned(),
                error: format!("cannot start a thread: {error}"),
            }),
        }
    }
    drop(sender);
    let deadline = Instant::now() + options.start_timeout + START_GRACE;
    let mut results: BTreeMap<String, Result<Connected>> = BTreeMap::new();
    while results.len() < starting.len() {
        match receiver.recv_deadline(deadline) {
            Ok((name, started)) => {
                results.insert(name, started);
            }
            Err(_) => break,
        }
    }
    // Late threads find the channel closed and close what they started.
    drop(receiver);
    // In the config's order, so a URI two backends list goes to the first.
    for backend in starting {
        match results.remove(&backend.name) {
            Some(Ok((client, tools, listed))) => {
                backend.set_client(client);
                core.backends
                    .write()
                    .insert(backend.name.clone(), Arc::clone(&backend));
                report
                    .started
                    .push(lists::serve_started(core, &backend, &tools, &listed));
                lists::after_start(core, &backend);
            }
            Some(Err(error)) => report.failed.push(FailedBackend {
                error: failure(configs, &backend.name, &error),
                name: backend.name.clone(),
            }),
            None => report.failed.push(FailedBackend {
                name: backend.name.clone(),
                error: format!(
                    "it did not start and list its tools within {:?}",
                    options.start_timeout
                ),
            }),
        }
    }
    for failed in &report.failed {
        log::warn!(target: LOG_TARGET, "server {:?} is left out: {}", failed.name, failed.error);
    }
    report
}

/// The MCP settings every backend's client starts from.
fn backend_config(options: &GatewayConfig) -> McpConfig {
    let start = options.start_timeout;
    McpConfig::default()
        .mode(options.protocol)
        .client_name(options.name.clone())
        .connect_timeout(start)
        .initialize_timeout(start)
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

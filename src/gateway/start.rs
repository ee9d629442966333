//! Starting the backends: each in parallel on a thread of its own, within the start
//! deadline, listing its tools, resources and prompts; one that fails is reported and left
//! out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::backend::Backend;
use super::catalog::{self, Listed};
use super::{lists, masked, Core, FailedBackend, GatewayOptions, StartReport, FRONT_GRACE};
use super::{LOG_TARGET, START_GRACE};
use crate::config::ServerConfigs;
use crate::error::Result;
use crate::mcp::{McpClient, McpConfig, Tool};

/// What a starting thread reports.
type Started = (String, Result<Connected>);
/// A backend's client and its lists.
type Connected = (McpClient, Arc<Vec<Tool>>, Listed);

pub(super) fn start_backends(
    core: &Arc<Core>,
    configs: &ServerConfigs,
    options: &GatewayOptions,
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
        let connector = match configs.connector(name) {
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
            }
            Some(Err(error)) => report.failed.push(FailedBackend {
                name: backend.name.clone(),
                error: masked(&error),
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
fn backend_config(options: &GatewayOptions) -> McpConfig {
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

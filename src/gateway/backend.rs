//! One backend: its MCP client, its admission handle (its concurrency limit, the harness's),
//! the front clients of the calls in flight on it (where its requests to the client go),
//! the front names it serves, and the handlers that forward its sampling, elicitation and
//! roots requests.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::harness::Admission;
use crate::mcp::{methods, ElicitRequest, ElicitResult, LogMessage, McpClient, McpConfig, Root};
use crate::server::BackChannel as FrontLink;
use crate::server::LogLevel;
use crate::wire::{ErrorCode, ErrorObject, Notification};

/// What a backend's notifications the gateway acts on run (on the client's dispatch thread:
/// quick, never blocking).
pub(crate) type Events = Arc<dyn Fn(&Arc<Backend>, Event<'_>) + Send + Sync>;

/// A backend's notification the gateway acts on.
pub(crate) enum Event<'a> {
    /// These kinds of list changed ([`super::catalog::TOOLS`] and the others).
    ListChanged(u8),
    /// A subscribed resource changed.
    ResourceUpdated(&'a str),
    /// It died and was started again: a new process, whose lists may differ.
    Restarted,
    /// It acknowledged a 2026-07-28 `subscriptions/listen` (see `super::listen`).
    Listening,
}

/// A call in flight on a backend.
struct InFlight {
    ticket: u64,
    front: FrontLink,
    /// For a 2026-07-28 front client's call: its requests become input rounds.
    bridge: Option<Arc<super::bridge::Asker>>,
}

/// One server of the config, as the gateway holds it.
pub(crate) struct Backend {
    pub(crate) name: String,
    /// Set once its client has connected.
    client: OnceLock<McpClient>,
    /// Its concurrency limit: every tool of it is imported with this handle.
    pub(crate) admission: Admission,
    in_flight: Mutex<Vec<InFlight>>,
    next_ticket: AtomicU64,
    /// The front names of its tools served now.
    pub(crate) served: Mutex<Vec<String>>,
    /// Its resources, templates and prompts served now.
    pub(crate) catalog: Mutex<super::catalog::Served>,
    /// The names of its tools and of its prompts as it last listed them, which the policy's
    /// names are checked against.
    pub(crate) listing: Mutex<(Vec<String>, Vec<String>)>,
    /// Why it is kept out (nothing of it served): the policy names what it does not list.
    pub(crate) kept_out: Mutex<Option<String>>,
    /// A re-listing is running; `pending` holds the kinds still to list.
    relisting: AtomicBool,
    pending: AtomicU8,
}

/// A call's place among its backend's calls in flight (for its requests to the client);
/// left when dropped.
pub(crate) struct Entered<'a> {
    backend: &'a Backend,
    ticket: u64,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.backend
            .in_flight
            .lock()
            .retain(|call| call.ticket != self.ticket);
    }
}

impl Backend {
    /// `limit` is the policy's, 1 to 256.
    pub(crate) fn new(name: &str, limit: usize) -> Arc<Backend> {
        let door = format!("the server {name:?}");
        let admission = Admission::new(door.clone(), limit)
            .or_else(|_| Admission::new(door, limit.clamp(1, 1024)))
            .unwrap_or_else(|_| unreachable!("a limit clamped to its bounds is accepted"));
        Arc::new(Backend {
            name: name.to_owned(),
            client: OnceLock::new(),
            admission,
            in_flight: Mutex::new(Vec::new()),
            next_ticket: AtomicU64::new(1),
            served: Mutex::new(Vec::new()),
            catalog: Mutex::new(Default::default()),
            listing: Mutex::new(Default::default()),
            kept_out: Mutex::new(None),
            // Held by the start until the first lists are served: a change notified
            // meanwhile waits in `pending` (see `lists::after_start`).
            relisting: AtomicBool::new(true),
            pending: AtomicU8::new(0),
        })
    }

    /// The client, once connected.
    pub(crate) fn client(&self) -> Option<&McpClient> {
        self.client.get()
    }

    pub(crate) fn set_client(&self, client: McpClient) {
        if let Err(extra) = self.client.set(client) {
            let _ = extra.close();
        }
    }

    /// The policy's limit of calls in flight.
    pub(crate) fn limit(&self) -> usize {
        self.admission.limit()
    }

    /// How many calls are in flight now.
    pub(crate) fn in_flight(&self) -> usize {
        self.admission.in_flight()
    }

    /// Notes a front call about to run on this backend, so that the backend's requests to
    /// the client meanwhile can go to its front client. Admission is the harness's (a call
    /// it refuses `BUSY` is here for that moment only). With `bridge`, the backend's requests
    /// go to the front client as input rounds ([`super::bridge`]).
    pub(crate) fn enter(
        &self,
        front: FrontLink,
        bridge: Option<super::bridge::Asker>,
    ) -> Entered<'_> {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let bridge = bridge.map(Arc::new);
        self.in_flight.lock().push(InFlight {
            ticket,
            front,
            bridge,
        });
        Entered {
            backend: self,
            ticket,
        }
    }

    /// The front client a request from this backend belongs to: the one call in flight on
    /// it. With none, or several (the request does not say which call it serves), there is
    /// no way to tell, and the request is declined.
    fn front(&self) -> Result<(FrontLink, Option<Arc<super::bridge::Asker>>), String> {
        let in_flight = self.in_flight.lock();
        match in_flight.as_slice() {
            [one] => Ok((one.front.clone(), one.bridge.clone())),
            [] => Err(format!(
                "the gateway has no call in flight on server {:?} to ask its client for",
                self.name
            )),
            many => Err(format!(
                "the gateway cannot tell which of the {} calls in flight on server {:?} this \
                 request belongs to",
                many.len(),
                self.name
            )),
        }
    }

    /// Forwards a request of the backend to the front client of its call.
    fn forward(&self, capability: &str, method: &str, params: Value) -> Result<Value, String> {
        let (front, bridge) = self.front()?;
        if !front.supports(capability) {
            return Err(format!(
                "the gateway's client did not declare `{capability}`, so `{method}` cannot be \
                 forwarded to it"
            ));
        }
        if let Some(bridge) = bridge {
            log::debug!(
                target: super::LOG_TARGET,
                "bridging {method} from server {:?} into an input round",
                self.name
            );
            return bridge.ask(method, params);
        }
        log::debug!(
            target: super::LOG_TARGET,
            "forwarding {method} from server {:?} to the client of request {}",
            self.name,
            front.id()
        );
        front.request(method, params).map_err(|error| {
            format!(
                "`{method}` forwarded to the gateway's client failed: {}",
                crate::mask::mask_urls_in(&error.to_string())
            )
        })
    }

    /// The MCP settings of this backend's client: `base` with the handlers that forward its
    /// requests to the client, and `events` for its list changes and resource updates.
    pub(crate) fn mcp_config(self: &Arc<Self>, base: McpConfig, events: Events) -> McpConfig {
        let sampling = Arc::downgrade(self);
        let elicitation = Arc::downgrade(self);
        let roots = Arc::downgrade(self);
        let notified = Arc::downgrade(self);
        let logged = Arc::downgrade(self);
        let restarted = Arc::downgrade(self);
        let restart_events = Arc::clone(&events);
        base.on_restart(move || {
            if let Some(backend) = restarted.upgrade() {
                restart_events(&backend, Event::Restarted);
            }
        })
        .sampling(move |params| {
            let backend = upgrade(&sampling)?;
            backend
                .forward("sampling", methods::SAMPLING_CREATE_MESSAGE, params.clone())
                .map_err(declined)
        })
        .elicitation(move |request: &ElicitRequest| {
            let Ok(backend) = upgrade(&elicitation) else {
                return ElicitResult::Decline;
            };
            match backend.forward(
                "elicitation",
                methods::ELICITATION_CREATE,
                request.raw.clone(),
            ) {
                Ok(answer) => elicit_answer(&answer),
                Err(reason) => {
                    log::info!(target: super::LOG_TARGET, "elicitation declined: {reason}");
                    ElicitResult::Decline
                }
            }
        })
        .roots(move || {
            let Ok(backend) = upgrade(&roots) else {
                return Vec::new();
            };
            match backend.forward("roots", methods::ROOTS_LIST, json!({})) {
                Ok(answer) => roots_answer(&answer),
                Err(reason) => {
                    log::info!(target: super::LOG_TARGET, "roots/list answered empty: {reason}");
                    Vec::new()
                }
            }
        })
        .on_log_in_order(move |message: &LogMessage| {
            // A log message of a call goes to the front client of that call, at its level (on
            // the reader thread: before the call's response).
            let Some(backend) = logged.upgrade() else {
                return;
            };
            let (Ok((front, bridge)), Some(level)) =
                (backend.front(), LogLevel::parse(&message.level))
            else {
                return;
            };
            let (logger, data) = (message.logger.as_deref(), message.data.clone());
            match bridge {
                // A bridged call's: to its front request waiting now ([`super::bridge`]).
                Some(bridge) => bridge.log(level, logger, data),
                None => front.log(level, logger, data),
            }
        })
        .on_notification(move |notification: &Notification| {
            use super::catalog::{PROMPTS, RESOURCES, TOOLS};
            let event = match notification.method.as_str() {
                methods::TOOLS_LIST_CHANGED => Event::ListChanged(TOOLS),
                methods::RESOURCES_LIST_CHANGED => Event::ListChanged(RESOURCES),
                methods::PROMPTS_LIST_CHANGED => Event::ListChanged(PROMPTS),
                methods::RESOURCES_UPDATED => match notification
                    .params
                    .as_ref()
                    .and_then(|params| params.get("uri"))
                    .and_then(Value::as_str)
                {
                    Some(uri) => Event::ResourceUpdated(uri),
                    None => return,
                },
                "notifications/subscriptions/acknowledged" => Event::Listening,
                _ => return,
            };
            if let Some(backend) = notified.upgrade() {
                events(&backend, event);
            }
        })
    }

    /// Marks the `kinds` to be listed again; true when the caller is to run the re-listing
    /// (none was running).
    pub(crate) fn want_relist(&self, kinds: u8) -> bool {
        self.pending.fetch_or(kinds, Ordering::SeqCst);
        !self.relisting.swap(true, Ordering::SeqCst)
    }

    /// Called by the re-lister before each round: the kinds to list (changes that came in
    /// meanwhile included), or 0 when it is done (and no longer running).
    pub(crate) fn take_pending(&self) -> u8 {
        loop {
            let kinds = self.pending.swap(0, Ordering::SeqCst);
            if kinds != 0 {
                return kinds;
            }
            self.relisting.store(false, Ordering::SeqCst);
            // A change that came between the swap and the store would be lost: look once
            // more, and run it unless another re-lister took it.
            if self.pending.load(Ordering::SeqCst) == 0
                || self.relisting.swap(true, Ordering::SeqCst)
            {
                return 0;
            }
        }
    }

    /// Closes the client, if any.
    pub(crate) fn close(&self) {
        if let Some(client) = self.client.get() {
            if let Err(error) = client.close() {
                log::debug!(target: super::LOG_TARGET, "closing server {:?}: {error}", self.name);
            }
        }
    }
}

fn upgrade(backend: &Weak<Backend>) -> Result<Arc<Backend>, ErrorObject> {
    backend
        .upgrade()
        .ok_or_else(|| declined("the gateway is closing".into()))
}

/// A request of a backend the gateway could not forward.
fn declined(reason: String) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_REQUEST, reason)
}

/// The front client's answer to an elicitation, as the backend's client gives it on.
fn elicit_answer(answer: &Value) -> ElicitResult {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitResult::Accept(answer.get("content").cloned().unwrap_or(json!({}))),
        Some("cancel") => ElicitResult::Cancel,
        _ => ElicitResult::Decline,
    }
}

/// The front client's roots, as the backend's client gives them on.
fn roots_answer(answer: &Value) -> Vec<Root> {
    answer
        .get("roots")
        .and_then(Value::as_array)
        .map(|roots| {
            roots
                .iter()
                .filter_map(|root| {
                    Some(Root {
                        uri: root.get("uri")?.as_str()?.to_owned(),
                        name: root.get("name").and_then(Value::as_str).map(str::to_owned),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

//! The dispatch thread: the peer's requests and notifications run here, never on the reader.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use parking_lot::Mutex;
use serde_json::json;

use super::config::{ClientConfig, RequestHandler};
use super::{spawn_named, Inner};
use crate::error::Result;
use crate::wire::{ErrorCode, ErrorObject, Notification, Request, Response};

enum Item {
    Request(Request),
    Notification(Notification),
}

/// Owns the dispatch thread and the queue in front of it.
pub(crate) struct Dispatcher {
    tx: Mutex<Option<Sender<Item>>>,
    /// Disconnected once the thread has ended (it holds the only sender).
    done: Receiver<()>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    client: Arc<Mutex<Weak<Inner>>>,
}

impl Dispatcher {
    pub(crate) fn start(config: &ClientConfig) -> Result<Dispatcher> {
        let (tx, rx) = bounded::<Item>(config.inbound_queue.max(1));
        let (done_tx, done) = bounded::<()>(0);
        let client: Arc<Mutex<Weak<Inner>>> = Arc::new(Mutex::new(Weak::new()));
        let request_handler = config.request_handler.clone();
        let notification_handler = config.notification_handler.clone();
        let thread_client = Arc::clone(&client);
        let thread = spawn_named("toolwire-dispatch", move || {
            let _done = done_tx;
            for item in rx {
                match item {
                    Item::Request(request) => {
                        let response = answer(&request, request_handler.as_ref());
                        let client = thread_client.lock().upgrade();
                        match client {
                            Some(inner) => inner.reply(response),
                            None => return,
                        }
                    }
                    Item::Notification(notification) => match &notification_handler {
                        Some(handler) => handler(&notification),
                        None => log::debug!(
                            "toolwire: notification `{}` from the peer (no handler)",
                            notification.method
                        ),
                    },
                }
            }
        })?;
        Ok(Dispatcher {
            tx: Mutex::new(Some(tx)),
            done,
            thread: Mutex::new(Some(thread)),
            client,
        })
    }

    pub(crate) fn attach(&self, inner: Weak<Inner>) {
        *self.client.lock() = inner;
    }

    /// Queues a request from the peer; a full queue is answered at once with -32603.
    pub(crate) fn request(&self, request: Request, inner: &Inner) {
        let Some(tx) = self.tx.lock().clone() else {
            return;
        };
        match tx.try_send(Item::Request(request)) {
            Ok(()) => {}
            Err(TrySendError::Full(Item::Request(request))) => {
                log::warn!(
                    "toolwire: inbound queue full; refusing `{}` from the peer",
                    request.method
                );
                inner.reply(Response::error(
                    Some(request.id),
                    ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the client is overloaded"),
                ));
            }
            Err(_) => {}
        }
    }

    /// Queues a notification from the peer; a full queue drops it with a warning.
    pub(crate) fn notification(&self, notification: Notification) {
        let Some(tx) = self.tx.lock().clone() else {
            return;
        };
        if let Err(TrySendError::Full(_)) = tx.try_send(Item::Notification(notification)) {
            log::warn!("toolwire: inbound queue full; dropped a notification from the peer");
        }
    }

    /// Stops taking items and waits (bounded) for the thread to finish what it has.
    pub(crate) fn stop(&self, grace: Duration) {
        drop(self.tx.lock().take());
        let Some(thread) = self.thread.lock().take() else {
            return;
        };
        if thread.thread().id() == std::thread::current().id() {
            // Closing from inside a handler: the thread ends by itself after this item.
            return;
        }
        match self.done.recv_deadline(Instant::now() + grace) {
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
            }
            _ => log::warn!(
                "toolwire: the dispatch thread is still inside a handler after {grace:?}; leaving it"
            ),
        }
    }
}

/// The default answer: `ping` gets `{}`, everything else -32601.
fn answer(request: &Request, handler: Option<&RequestHandler>) -> Response {
    let payload = match handler {
        Some(handler) => handler(request),
        None if request.method == "ping" => Ok(json!({})),
        None => Err(ErrorObject::method_not_found(&request.method)),
    };
    Response {
        id: Some(request.id.clone()),
        payload,
    }
}

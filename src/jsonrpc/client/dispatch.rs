//! The dispatch thread: the peer's requests and notifications run here, never on the reader.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use parking_lot::Mutex;

use super::config::{ClientConfig, NotificationHandler, RequestHandler};
use super::dialect::Dialect;
use super::Inner;
use crate::error::Result;
use crate::sys::{self, spawn_named};
use crate::wire::{ErrorCode, ErrorObject, Notification, Request, Response};

enum Item {
    Request(Request),
    Notification(Notification),
    /// The requests of one inbound batch, answered together as one array, with the error
    /// responses for its invalid elements.
    Batch(Vec<Request>, Vec<Response>),
    /// Answered when every item queued before it has been handled.
    Barrier(Sender<()>),
}

/// Owns the dispatch thread and the queue in front of it.
pub(crate) struct Dispatcher {
    tx: Mutex<Option<Sender<Item>>>,
    /// Disconnected once the thread has ended (it holds the only sender).
    done: Receiver<()>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    client: Arc<Mutex<Weak<Inner>>>,
    /// Notifications dropped because the queue was full, and when the last warning was
    /// logged: a flood logs one warning a second, not one per notification.
    dropped: AtomicU64,
    last_warning: Mutex<Option<Instant>>,
}

/// The handlers the dispatch thread runs.
struct Handlers {
    request: Option<RequestHandler>,
    notification: Option<NotificationHandler>,
    dialect: Arc<dyn Dialect>,
}

impl Dispatcher {
    pub(crate) fn start(config: &ClientConfig) -> Result<Dispatcher> {
        let (tx, rx) = bounded::<Item>(config.inbound_queue.max(1));
        let (done_tx, done) = bounded::<()>(0);
        let client: Arc<Mutex<Weak<Inner>>> = Arc::new(Mutex::new(Weak::new()));
        if config.request_sink.is_some() && config.notification_handler.is_none() {
            // The layer above takes the peer's requests and sees its notifications through
            // the tap: there is nothing for a dispatch thread to do.
            return Ok(Dispatcher {
                tx: Mutex::new(None),
                done,
                thread: Mutex::new(None),
                client,
                dropped: AtomicU64::new(0),
                last_warning: Mutex::new(None),
            });
        }
        let handlers = Handlers {
            request: config.request_handler.clone(),
            notification: config.notification_handler.clone(),
            dialect: Arc::clone(&config.dialect),
        };
        let thread_client = Arc::clone(&client);
        let thread = spawn_named("toolwire-dispatch", move || {
            let _done = done_tx;
            for item in rx {
                match item {
                    Item::Request(request) => {
                        let response = handlers.answer(&request);
                        let client = thread_client.lock().upgrade();
                        match client {
                            Some(inner) => inner.reply(response),
                            None => return,
                        }
                    }
                    Item::Notification(notification) => handlers.notify(&notification),
                    Item::Batch(requests, mut responses) => {
                        responses.extend(requests.iter().map(|request| handlers.answer(request)));
                        let client = thread_client.lock().upgrade();
                        match client {
                            Some(inner) => inner.reply_batch(responses),
                            None => return,
                        }
                    }
                    Item::Barrier(reached) => {
                        let _ = reached.send(());
                    }
                }
            }
        })?;
        Ok(Dispatcher {
            tx: Mutex::new(Some(tx)),
            done,
            thread: Mutex::new(Some(thread)),
            client,
            dropped: AtomicU64::new(0),
            last_warning: Mutex::new(None),
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

    /// Queues the requests of one inbound batch (with the error responses of its invalid
    /// elements) to be answered as one array; a full queue answers every request with -32603,
    /// in one array too.
    pub(crate) fn batch(&self, requests: Vec<Request>, errors: Vec<Response>, inner: &Inner) {
        let Some(tx) = self.tx.lock().clone() else {
            return;
        };
        if let Err(TrySendError::Full(Item::Batch(requests, mut errors))) =
            tx.try_send(Item::Batch(requests, errors))
        {
            log::warn!(
                "toolwire: inbound queue full; refusing a batch of {} request(s) from the peer",
                requests.len()
            );
            errors.extend(requests.into_iter().map(|request| {
                Response::error(
                    Some(request.id),
                    ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the client is overloaded"),
                )
            }));
            inner.reply_batch(errors);
        }
    }

    /// Queues a notification from the peer; a full queue drops it, with at most one warning
    /// a second (saying how many were dropped).
    pub(crate) fn notification(&self, notification: Notification) {
        let Some(tx) = self.tx.lock().clone() else {
            return;
        };
        if let Err(TrySendError::Full(_)) = tx.try_send(Item::Notification(notification)) {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            let mut last = self.last_warning.lock();
            let now = Instant::now();
            if last.is_none_or(|at| now.duration_since(at) >= Duration::from_secs(1)) {
                *last = Some(now);
                log::warn!(
                    "toolwire: inbound queue full; dropped {dropped} notification(s) from the peer so far"
                );
            }
        }
    }

    /// Waits until every request and notification queued before this call has been handled,
    /// or until `deadline`; true when they all have (or there is no dispatch thread).
    pub(crate) fn settle(&self, deadline: Instant) -> bool {
        let Some(tx) = self.tx.lock().clone() else {
            return true;
        };
        let (reached_tx, reached) = bounded::<()>(1);
        if tx
            .send_deadline(Item::Barrier(reached_tx), deadline)
            .is_err()
        {
            return false;
        }
        drop(tx);
        reached.recv_deadline(deadline).is_ok()
    }

    /// How many notifications were dropped because the queue was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
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
                sys::join_reporting(thread);
            }
            _ => log::warn!(
                "toolwire: the dispatch thread is still inside a handler after {grace:?}; leaving it"
            ),
        }
    }
}

impl Handlers {
    /// The user's handler, else the dialect's answer, else -32601. A handler that panics is
    /// answered with -32603 and the thread goes on.
    fn answer(&self, request: &Request) -> Response {
        let payload = match &self.request {
            Some(handler) => sys::guard(
                &format!("the request handler for `{}`", request.method),
                || handler(request),
            )
            .unwrap_or_else(|| {
                Err(ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    "the client's handler for this request failed",
                ))
            }),
            None => self
                .dialect
                .default_answer(request)
                .unwrap_or_else(|| Err(ErrorObject::method_not_found(&request.method))),
        };
        Response {
            id: Some(request.id.clone()),
            payload,
        }
    }

    fn notify(&self, notification: &Notification) {
        match &self.notification {
            Some(handler) => {
                sys::guard(
                    &format!("the notification handler for `{}`", notification.method),
                    || handler(notification),
                );
            }
            None => log::debug!(
                "toolwire: notification `{}` from the peer (no handler)",
                notification.method
            ),
        }
    }
}

//! Many calls waited on in the order they complete, at O(1) per completion: every member's
//! events go to the set's one mailbox, tagged with the member's key, instead of one channel
//! per call and a `select!` over thousands of them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::config::SharedProgress;
use super::handle::{run_progress_callback, Timing};
use super::slot::{Mailbox, Waited};
use super::{CallEvent, CallOptions, Client, Inner, Owner, Sink};
use crate::error::Result;
use crate::wire::RequestId;

/// A set of calls in flight, waited on in completion order.
///
/// Start calls into it with [`CallSet::start`] (on one client or several), each with a tag of
/// yours; `next` (the set is an [`Iterator`]) returns the next call to finish, with its tag, whichever it is.
/// Waiting costs O(1) per completion whatever the set's size: one mailbox takes every
/// member's events, in the order they happen. Progress callbacks run on the thread that waits, as for a single call.
///
/// Deadlines are kept by the timer thread, as for handles nobody blocks on. As a backstop, a
/// waiter never blocks past the latest deadline in the set plus the client's timer grace: if
/// it gets there (the timer thread stalled), it releases every member whose deadline passed
/// itself, exactly once, as a blocked caller does.
///
/// Dropping the set cancels the members still in flight (their peers are told).
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use toolwire::jsonrpc::{CallSet, Message, Response};
/// use toolwire::transport::MemoryTransport;
/// use toolwire::{CallOptions, Client};
///
/// let (transport, peer) = MemoryTransport::pair();
/// let client = Client::new(transport)?;
/// let mut set = CallSet::new();
/// for n in 0..3 {
///     set.start(&client, n, "echo", json!({"n": n}), CallOptions::new())?;
/// }
/// // The peer answers in reverse order.
/// let mut requests = Vec::new();
/// for _ in 0..3 {
///     let Some(Message::Request(request)) = peer.recv_message(Duration::from_secs(5)) else {
///         panic!("expected a request");
///     };
///     requests.push(request);
/// }
/// for request in requests.into_iter().rev() {
///     peer.send(&Message::Response(Response::ok(request.id, request.params.unwrap())));
/// }
/// let order: Vec<i32> = set.by_ref().map(|(tag, outcome)| {
///     assert_eq!(outcome.unwrap()["n"], json!(tag));
///     tag
/// }).collect();
/// assert_eq!(order, vec![2, 1, 0]);
/// client.close()?;
/// # Ok::<(), toolwire::Error>(())
/// ```
pub struct CallSet<T> {
    mailbox: Arc<Mailbox>,
    members: HashMap<u64, Member<T>>,
    next_key: u64,
    /// The latest deadline any member could reach (its hard limit when progress resets it).
    latest: Option<Instant>,
}

struct Member<T> {
    tag: T,
    // Keeps the connection open while the member is in flight; declared before `inner` so it
    // drops first.
    _owner: Arc<Owner>,
    inner: Arc<Inner>,
    id: RequestId,
    method: Arc<str>,
    timing: Timing,
    on_progress: Option<SharedProgress>,
}

impl<T> std::fmt::Debug for CallSet<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallSet")
            .field("in_flight", &self.members.len())
            .finish()
    }
}

impl<T> Default for CallSet<T> {
    fn default() -> Self {
        CallSet::new()
    }
}

impl<T> CallSet<T> {
    /// An empty set.
    pub fn new() -> CallSet<T> {
        CallSet {
            mailbox: Arc::new(Mailbox::new()),
            members: HashMap::new(),
            next_key: 0,
            latest: None,
        }
    }

    /// How many calls of the set are still in flight.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True when no call of the set is in flight.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Sends a request on `client` as a member of the set, tagged with `tag`.
    ///
    /// # Errors
    ///
    /// As [`Client::start`]; the call is then not a member.
    pub fn start(
        &mut self,
        client: &Client,
        tag: T,
        method: &str,
        params: Value,
        options: CallOptions,
    ) -> Result<()> {
        let (inner, owner) = client.parts();
        let key = self.next_key;
        self.next_key += 1;
        let on_progress = options.on_progress.clone();
        let sink = Sink::Set {
            mailbox: Arc::clone(&self.mailbox),
            key,
        };
        let started = inner.begin(method, params, options, sink, false)?;
        // A send that failed completed the call already (or released it): not a member; an
        // event it may have left for its key is ignored.
        started.outcome?;
        let reach = started
            .timing
            .hard_deadline
            .unwrap_or(started.timing.deadline);
        self.latest = Some(self.latest.map_or(reach, |latest| latest.max(reach)));
        self.members.insert(
            key,
            Member {
                tag,
                _owner: Arc::clone(owner),
                inner: Arc::clone(inner),
                id: started.id,
                method: started.method,
                timing: started.timing,
                on_progress,
            },
        );
        Ok(())
    }

    /// Waits at most `limit` for the next member to complete; `None` when the set is empty
    /// or nothing completed in time (tell them apart with [`CallSet::is_empty`]).
    pub fn next_timeout(&mut self, limit: Duration) -> Option<(T, Result<Value>)> {
        self.wait_until(Some(Instant::now() + limit))
    }

    /// The next completed member, if one is there, without blocking.
    pub fn try_next(&mut self) -> Option<(T, Result<Value>)> {
        loop {
            if self.members.is_empty() {
                return None;
            }
            let (key, event) = self.mailbox.try_take()?;
            if let Some(done) = self.take_event(key, event) {
                return Some(done);
            }
        }
    }

    /// Cancels every member still in flight, in the order they were started (their peers
    /// are told); their outcomes ([`crate::Error::Cancelled`]) are then waiting in the set.
    pub fn cancel_all(&mut self) {
        let mut keys: Vec<u64> = self.members.keys().copied().collect();
        keys.sort_unstable();
        for key in keys {
            let member = &self.members[&key];
            member.inner.cancel(&member.id, "cancelled by the caller");
        }
    }

    fn wait_until(&mut self, limit: Option<Instant>) -> Option<(T, Result<Value>)> {
        loop {
            if self.members.is_empty() {
                return None;
            }
            let backstop = self.backstop();
            let until = match (limit, backstop) {
                (Some(limit), Some(backstop)) => Some(limit.min(backstop)),
                (limit, backstop) => limit.or(backstop),
            };
            match self.mailbox.wait_until(until) {
                Waited::Event((key, event)) => {
                    if let Some(done) = self.take_event(key, event) {
                        return Some(done);
                    }
                }
                Waited::TimedOut => {
                    let now = Instant::now();
                    if backstop.is_some_and(|backstop| now >= backstop) {
                        self.expire_overdue(now);
                    }
                    if limit.is_some_and(|limit| now >= limit) {
                        return None;
                    }
                }
                // The mailbox is the set's own: it never goes away.
                Waited::Gone => return None,
            }
        }
    }

    /// The latest deadline in the set plus the timer grace of its clients.
    fn backstop(&self) -> Option<Instant> {
        let grace = self
            .members
            .values()
            .next()
            .map_or(Duration::ZERO, |member| member.inner.config.timer_grace);
        self.latest.map(|latest| latest + grace)
    }

    /// The timer thread did not release members whose deadlines passed: release them here
    /// (remove-wins makes it exactly once); their outcomes arrive in the mailbox.
    fn expire_overdue(&mut self, now: Instant) {
        for member in self.members.values() {
            if member.timing.deadline <= now {
                member.inner.expire_one(&member.id);
            }
        }
        // Members whose deadline progress moved past `latest` keep the set waiting for them.
        self.latest = self
            .members
            .values()
            .map(|member| member.timing.deadline.max(now))
            .max()
            .filter(|_| !self.members.is_empty());
    }

    fn take_event(&mut self, key: u64, event: CallEvent) -> Option<(T, Result<Value>)> {
        match event {
            CallEvent::Progress(progress) => {
                if let Some(member) = self.members.get_mut(&key) {
                    member.timing.on_progress();
                    run_progress_callback(member.on_progress.as_ref(), &progress, &member.method);
                }
                None
            }
            CallEvent::Done(outcome) => {
                let member = self.members.remove(&key)?;
                if self.members.is_empty() {
                    self.latest = None;
                }
                Some((member.tag, outcome))
            }
        }
    }
}

impl<T> Iterator for CallSet<T> {
    type Item = (T, Result<Value>);

    /// Blocks until the next member completes and returns its tag and outcome; `None` when
    /// the set is empty. The members come in completion order.
    fn next(&mut self) -> Option<Self::Item> {
        self.wait_until(None)
    }
}

impl<T> Drop for CallSet<T> {
    fn drop(&mut self) {
        for member in self.members.values() {
            if member
                .inner
                .cancel(&member.id, "the caller stopped waiting")
            {
                log::debug!(
                    "toolwire: `{}` (id {}) dropped with its call set; cancelled",
                    member.method,
                    member.id
                );
            }
        }
    }
}

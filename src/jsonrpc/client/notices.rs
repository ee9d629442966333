//! The cancellation notices owed for calls that timed out, sent after their callers are
//! woken instead of before.
//!
//! Building and queueing a `notifications/cancelled` costs about a microsecond; done before
//! each wake-up, 10,000 calls timing out together woke their callers milliseconds later than
//! they need be. So the timer thread, when it completes a call with its timeout
//! (remove-wins), only records the id here, and the notices go out afterwards, all together,
//! from the timer thread (a flush scheduled on the wheel runs after every expiry already
//! due). A caller whose own backstop completes its call (the timer late or stalled) records
//! the id the same way and sends the notice itself at once. What stays as it was:
//! - exactly once: only whoever removed the pending entry records its id, and an answered,
//!   cancelled or closed call has no entry left to remove;
//! - order: every frame the client sends first sends the notices owed (a caller that sends
//!   again after its timeout sends after its notice), and closing sends them before the
//!   transport closes (a caller that closes right after its timeout does not beat its
//!   notice). One lock held from taking the ids to their last send keeps a second sender from
//!   passing a flush in progress.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Weak;
use std::time::Instant;

use parking_lot::Mutex;

use super::{bump, Inner, Pending};
use crate::timer::Expire;
use crate::transport::Outgoing;
use crate::wire::RequestId;

/// The wheel token that flushes the owed notices (never a request id: ids count up from 1
/// and fit an `i64`).
pub(super) const FLUSH_TOKEN: u64 = u64::MAX;

/// Why a notice owed here gave its request up.
const REASON: &str = "timed out";

#[derive(Default)]
pub(super) struct OwedNotices {
    ids: Mutex<Vec<RequestId>>,
    /// Whether a notice is owed or being sent: read without a lock on every send.
    any: AtomicBool,
    /// Held from taking the ids to the last of their sends.
    sending: Mutex<()>,
}

impl Inner {
    /// Whether giving this call up tells the peer with a notice; false when the transport
    /// signals it itself (it has just been told, e.g. an HTTP response stream closed).
    fn owes_notice(&self, id: &RequestId, pending: &Pending) -> bool {
        pending.notify_cancel && !self.transport.request_abandoned(id)
    }

    /// Records the notices owed for calls that timed out (the caller completes them after);
    /// with `schedule`, makes sure a flush is on its way (without, the caller flushes).
    pub(super) fn owe_notices<'a>(
        &self,
        timed_out: impl Iterator<Item = (&'a RequestId, &'a Pending)>,
        schedule: bool,
    ) {
        if !self.config.cancel_on_timeout {
            return;
        }
        let mut owed = timed_out
            .filter(|(id, pending)| self.owes_notice(id, pending))
            .map(|(id, _)| id.clone())
            .peekable();
        if owed.peek().is_none() {
            return;
        }
        let first = {
            let mut ids = self.owed.ids.lock();
            let first = ids.is_empty();
            ids.extend(owed);
            self.owed.any.store(true, Ordering::Release);
            first
        };
        // A flush on the wheel runs once the timer thread has done every expiry already due:
        // the batch that just woke its callers, and every batch after it.
        if first && schedule {
            let target: Weak<dyn Expire> = self.self_ref.clone();
            self.timer
                .schedule_expiry(Instant::now(), target, FLUSH_TOKEN);
        }
    }

    /// Sends every notice owed, in the order the calls timed out, and returns once none is
    /// owed or being sent. Never blocks on the transport: a full queue loses the notice (as it
    /// did when each was sent from the timer thread). Nothing is sent once the client is
    /// closed.
    pub(super) fn flush_notices(&self) {
        // `any` stays set until a flush has sent everything it took, so a sender that finds it
        // clear has nothing to wait for.
        if !self.owed.any.load(Ordering::Acquire) {
            return;
        }
        let _sending = self.owed.sending.lock();
        loop {
            let ids = {
                let mut ids = self.owed.ids.lock();
                if ids.is_empty() {
                    self.owed.any.store(false, Ordering::Release);
                    return;
                }
                std::mem::take(&mut *ids)
            };
            if self.closed.lock().is_some() {
                continue;
            }
            for id in &ids {
                let Some(notice) = self.config.dialect.cancel_notice(id, REASON) else {
                    break;
                };
                bump(&self.counters.sent);
                if let Err(error) = self.transport.send(Outgoing::message(notice), None) {
                    self.counters.sent.fetch_sub(1, Ordering::Relaxed);
                    log::debug!("toolwire: could not send the cancellation of id {id}: {error}");
                }
            }
        }
    }
}

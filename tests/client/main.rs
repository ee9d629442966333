//! The JSON-RPC client over the in-memory transport (`support::client`): calls, handles,
//! batches, progress, timeouts, cancellation, the send queue, stats and panics in callbacks.

#[path = "../support/mod.rs"]
mod support;

mod batch;
mod busy;
mod call_set;
mod concurrency;
mod handles;
mod inbound;
mod lifecycle;
mod malformed;
mod panic_guards;
mod params;
mod peer_close;
mod progress_callback;
mod progress_ignored;
mod progress_reset;
mod race;
mod send_queue;
mod slot_receiver;
mod stats;
mod timeout;
mod timeout_notices;
mod timer_backstop;

//! The MCP server (`toolwire::server`, `support::server`): stdio and Streamable HTTP, eras,
//! sessions, limits, slow clients, tasks, subscriptions, and the interop peers.

#[path = "../support/mod.rs"]
mod support;

mod answers;
mod batches;
mod cancel_ask;
mod eras;
mod http_auth;
mod http_auth_rounds;
mod http_disconnect;
mod http_introspect;
mod http_limits;
mod http_param_headers;
mod http_rebinding;
mod http_sessions;
mod http_slowloris;
mod http_tls;
mod interop_inspector;
mod interop_oidc;
mod interop_python;
mod interop_toolwire;
mod load_balancers;
mod metrics;
mod peer_address;
mod pool_flood;
mod registry;
mod scaleout;
mod shared_state;
mod skills_tree;
mod slots;
mod stdout_direct;
mod subscriptions;
mod tasks;
mod tasks_across;
mod timeouts;

//! The Streamable HTTP server's settings: where it listens, who may reach it, and every bound a
//! client could otherwise stretch.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::server::auth::Authorization;

/// The longest [`HttpServerConfig::instance_id`], in characters.
pub const MAX_INSTANCE_ID: usize = 32;

/// Settings for an [`super::HttpServer`]. Every bound is finite; `Default` spells out each
/// value, and each knob has a setter that says its default.
#[derive(Debug, Clone)]
pub struct HttpServerConfig {
    pub(crate) addr: SocketAddr,
    pub(crate) path: String,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) max_connections: usize,
    pub(crate) max_connections_per_address: usize,
    pub(crate) per_address_exempt: Vec<IpAddr>,
    pub(crate) max_head_bytes: usize,
    pub(crate) max_headers: usize,
    pub(crate) max_body_bytes: usize,
    pub(crate) head_timeout: Duration,
    pub(crate) body_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) sessions: bool,
    pub(crate) max_sessions: usize,
    pub(crate) session_idle: Duration,
    pub(crate) replay_events: usize,
    pub(crate) replay_bytes: usize,
    pub(crate) keepalive: Duration,
    pub(crate) retry: Duration,
    pub(crate) poll: Duration,
    pub(crate) json_first: bool,
    pub(crate) join_grace: Duration,
    pub(crate) authorization: Option<Authorization>,
    #[cfg(feature = "rustls")]
    pub(crate) tls: Option<super::ServerTls>,
    pub(crate) trusted_proxies: Vec<IpAddr>,
    pub(crate) loopback_plain_tokens: bool,
    // Running several instances (issue 25): session routing and the load balancer's checks.
    pub(crate) instance_id: Option<String>,
    pub(crate) health_paths: Option<(String, String)>,
}

impl Default for HttpServerConfig {
    fn default() -> Self {
        HttpServerConfig {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            path: "/mcp".into(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_connections: 64,
            max_connections_per_address: 16,
            per_address_exempt: vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ],
            max_head_bytes: 16 * 1024,
            max_headers: 64,
            max_body_bytes: 4 * 1024 * 1024,
            head_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(10),
            sessions: true,
            max_sessions: 256,
            session_idle: Duration::from_secs(30 * 60),
            replay_events: 256,
            replay_bytes: 1024 * 1024,
            keepalive: Duration::from_secs(15),
            retry: Duration::from_millis(1000),
            poll: Duration::from_millis(25),
            json_first: true,
            join_grace: Duration::from_secs(2),
            authorization: None,
            #[cfg(feature = "rustls")]
            tls: None,
            trusted_proxies: Vec::new(),
            loopback_plain_tokens: true,
            instance_id: None,
            health_paths: Some(("/healthz".into(), "/readyz".into())),
        }
    }
}

impl HttpServerConfig {
    /// The defaults: 127.0.0.1 on a port the system picks, the endpoint `/mcp`.
    pub fn new() -> HttpServerConfig {
        HttpServerConfig::default()
    }

    /// The address to listen on. Defaults to 127.0.0.1 with a port the system picks
    /// ([`super::HttpServer::local_addr`] says which). Listening beyond the loopback
    /// interface exposes the server to the network: the Host and Origin checks then need
    /// [`HttpServerConfig::allowed_hosts`].
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// The port on 127.0.0.1. Defaults to 0 (the system picks).
    pub fn port(mut self, port: u16) -> Self {
        self.addr.set_port(port);
        self
    }

    /// The endpoint's path. Defaults to `/mcp`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Host names (without port) a request's `Host` and `Origin` may name, besides
    /// `localhost`, `127.0.0.1` and `[::1]`, which are always allowed. Anything else is
    /// refused (421 for a Host, 403 for an Origin), the DNS-rebinding protection the
    /// protocol requires. Defaults to none.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Exact origins (`https://app.example`) a browser may call from, besides the loopback
    /// hosts and [`HttpServerConfig::allowed_hosts`]. Defaults to none.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// The most connections open at once (1 to 65,536), each on a thread of its own. When
    /// all are taken, the connection that has waited longest for a request head (from the
    /// address holding the most) is closed to make room, so idle sockets cannot lock clients
    /// out; when every one is serving a request (its head complete), one more is answered
    /// 503 at once and closed. Defaults to 64.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// The most connections open at once from one address (at least 1), so one peer cannot
    /// take every slot: past it that address's idlest connection (no complete request head)
    /// is closed to make room, or, when all of its connections are serving, the new one is
    /// answered 503 and closed. Addresses of [`HttpServerConfig::per_address_exempt`] have no
    /// such cap. Defaults to 16.
    pub fn max_connections_per_address(mut self, connections: usize) -> Self {
        self.max_connections_per_address = connections;
        self
    }

    /// The addresses [`HttpServerConfig::max_connections_per_address`] does not apply to (an
    /// IPv4 address also covers its IPv6-mapped form): a load balancer or reverse proxy whose
    /// connections all come from one address, say. Replaces the list. Defaults to the
    /// loopback addresses `127.0.0.1` and `::1`: every client of a server that listens on
    /// loopback (the default) comes from there, so a cap per address would only be a lower
    /// `max_connections`, and local tests and benchmarks open many connections at once; idle
    /// connections still make room for working ones. Pass an empty list to cap loopback too.
    pub fn per_address_exempt<I>(mut self, addresses: I) -> Self
    where
        I: IntoIterator<Item = IpAddr>,
    {
        self.per_address_exempt = addresses.into_iter().collect();
        self
    }

    /// The longest request head (request line and headers), in bytes: 431 past it. Defaults
    /// to 16 KiB.
    pub fn max_head_bytes(mut self, bytes: usize) -> Self {
        self.max_head_bytes = bytes;
        self
    }

    /// The most headers in a request: 431 past it. Defaults to 64.
    pub fn max_headers(mut self, headers: usize) -> Self {
        self.max_headers = headers;
        self
    }

    /// The largest request body, in bytes, by `Content-Length` or chunked: 413 past it (told
    /// before reading a declared length). Defaults to 4 MiB.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long a request's head may take to arrive from its first byte, and how long a new
    /// connection may wait before its first byte: a client that trickles its head
    /// (slowloris) gets 408 and its connection is closed. Defaults to 10 s.
    pub fn head_timeout(mut self, timeout: Duration) -> Self {
        self.head_timeout = timeout;
        self
    }

    /// How long a request's body may take to arrive after its head: 408 past it. No worker is
    /// taken before the whole body is in. Defaults to 30 s.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How long a kept-alive connection may sit between requests before it is closed.
    /// Defaults to 30 s.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How long one write to a client may block (a client that stops reading its stream loses
    /// it). Defaults to 10 s.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// Whether the handshake era's sessions (`Mcp-Session-Id`) are served. Off, only the
    /// 2026-07-28 stateless protocol is. Defaults to true.
    pub fn sessions(mut self, sessions: bool) -> Self {
        self.sessions = sessions;
        self
    }

    /// The most sessions open at once; one more `initialize` is answered 503 (after the idle
    /// ones are swept). Defaults to 256.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How long a session may go without a request before it is closed. Defaults to 30
    /// minutes.
    pub fn session_idle(mut self, idle: Duration) -> Self {
        self.session_idle = idle;
        self
    }

    /// How many events of a session's streams are kept for `Last-Event-ID` resumption, and
    /// their bytes at most; the oldest go first. Defaults to 256 events, 1 MiB.
    pub fn replay_buffer(mut self, events: usize, bytes: usize) -> Self {
        self.replay_events = events;
        self.replay_bytes = bytes;
        self
    }

    /// How often an idle event stream gets a comment line. Defaults to 15 s.
    pub fn keepalive(mut self, every: Duration) -> Self {
        self.keepalive = every;
        self
    }

    /// The reconnection delay a resumable stream announces (`retry:`). Defaults to 1 s.
    pub fn retry(mut self, retry: Duration) -> Self {
        self.retry = retry;
        self
    }

    /// How often a connection waiting for its answer looks whether the client hung up (on
    /// the 2026-07-28 protocol closing the stream cancels the request). Defaults to 25 ms.
    pub fn disconnect_poll(mut self, every: Duration) -> Self {
        self.poll = every;
        self
    }

    /// Whether an answer that comes before any notification is sent as `application/json`
    /// (else every request's answer is an event stream). Defaults to true.
    pub fn json_first(mut self, json: bool) -> Self {
        self.json_first = json;
        self
    }

    /// How long [`super::HttpServer::close`] waits for connection threads. Defaults to 2 s.
    pub fn join_grace(mut self, grace: Duration) -> Self {
        self.join_grace = grace;
        self
    }

    /// Puts authorization in front of the endpoint: every request needs a bearer token that
    /// [`Authorization`] accepts, checked before any handler runs (401 without one or with a
    /// bad one, 403 without a needed scope), and the protected resource metadata is served at
    /// [`Authorization::metadata_path`]. Defaults to none: whoever reaches the port is served,
    /// which is for loopback only.
    pub fn authorization(mut self, authorization: Authorization) -> Self {
        self.authorization = Some(authorization);
        self
    }

    /// Serves HTTPS: every connection is TLS with this identity (feature `rustls`). The
    /// handshake must end within [`HttpServerConfig::head_timeout`] of the connection's
    /// start, or the connection is closed (a client that stalls in it holds no thread
    /// longer); the other deadlines, the connection caps and the idle connections giving
    /// their slots up apply as over plain HTTP. A client that speaks plain HTTP to the port
    /// is answered 400 in plain HTTP, saying to use `https://`, and closed; one refused for
    /// the connection caps is closed without the 503 (it could not read it). Defaults to
    /// none: plain HTTP.
    #[cfg(feature = "rustls")]
    pub fn tls(mut self, tls: super::ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// True when [`HttpServerConfig::tls`] was given.
    pub fn has_tls(&self) -> bool {
        #[cfg(feature = "rustls")]
        return self.tls.is_some();
        #[cfg(not(feature = "rustls"))]
        false
    }

    /// The reverse proxies (their exact addresses; an IPv4 address also covers its
    /// IPv6-mapped form) this server sits behind, which terminate TLS for it. From these
    /// peers only: `X-Forwarded-Host` is the host checked against
    /// [`HttpServerConfig::allowed_hosts`] instead of `Host`; `X-Forwarded-Proto` says
    /// whether the client reached the proxy over TLS (`https`; anything else is plain, and a
    /// bearer token then follows the rule of [`HttpServerConfig::loopback_plain_tokens`]
    /// for the forwarded client's address; no header is taken as `https`); the last address
    /// of `X-Forwarded-For` (the one the proxy itself saw) is the client's address handlers
    /// see ([`crate::server::RequestContext::peer_address`], port 0), which keys the
    /// gateway's budgets of callers without a token; and their connections are exempt from
    /// [`HttpServerConfig::max_connections_per_address`]. From any other peer these headers
    /// are ignored. The resource URI of [`HttpServerConfig::authorization`] is never taken
    /// from a header: it is the configured one, which tokens' audiences are checked
    /// against. Defaults to none.
    pub fn trusted_proxies<I>(mut self, proxies: I) -> Self
    where
        I: IntoIterator<Item = IpAddr>,
    {
        self.trusted_proxies = proxies.into_iter().collect();
        self
    }

    /// Whether a bearer token that comes over plain HTTP is taken from a loopback peer (the
    /// same machine). With [`HttpServerConfig::authorization`], a token in clear from any
    /// other peer is refused (401 `invalid_request`, before it is checked; the token is never
    /// logged): it crossed a network anyone on it could read. Tokens over
    /// [`HttpServerConfig::tls`], and from a [`HttpServerConfig::trusted_proxies`] peer that
    /// says the client came over TLS, are taken from any address. Defaults to true; false
    /// takes no token in clear from anywhere (a test plays a remote client that way).
    pub fn loopback_plain_tokens(mut self, allowed: bool) -> Self {
        self.loopback_plain_tokens = allowed;
        self
    }

    /// The instance's name, when several serve behind one load balancer: every handshake-era
    /// session id this instance mints is `NAME.` followed by 32 hex digits, so a balancer
    /// that cannot learn sessions (nginx without `sticky`) routes a session back to its
    /// instance with a `map` on the id's prefix. 1 to [`MAX_INSTANCE_ID`] characters of
    /// `A-Z a-z 0-9 _ -`. An instance that never opened a session answers its id 404, and
    /// the client starts a new one. Defaults to none: ids are the 32 hex digits alone.
    pub fn instance_id(mut self, name: impl Into<String>) -> Self {
        self.instance_id = Some(name.into());
        self
    }

    /// The paths of a load balancer's checks, answered on the endpoint's listener before the
    /// endpoint's Host, Origin and authorization checks (they reveal nothing: a status word
    /// and, when not ready, the name of the check that failed): `alive` is 200 while the
    /// process serves, `ready` is 200 when every [`crate::server::Server::add_readiness_check`]
    /// passes and 503 otherwise, and while [`super::HttpServer::drain`] runs. GET and HEAD
    /// only. `None` serves neither (a 404 as any other path). Defaults to `/healthz` and
    /// `/readyz`.
    pub fn health_paths(mut self, paths: Option<(&str, &str)>) -> Self {
        self.health_paths = paths.map(|(alive, ready)| (alive.to_owned(), ready.to_owned()));
        self
    }

    /// True when [`HttpServerConfig::authorization`] was given.
    pub fn has_authorization(&self) -> bool {
        self.authorization.is_some()
    }

    /// Checks every setting against its bounds, as [`super::HttpServer::bind`] does first (a
    /// command line checks them before it starts anything else).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming the first setting out of its bounds.
    pub fn check(&self) -> Result<()> {
        let bad = |text: String| Err(Error::Config(text));
        if let Some(authorization) = &self.authorization {
            authorization.check()?;
        }
        if !(1..=65_536).contains(&self.max_connections) {
            return bad(format!(
                "max_connections must be 1 to 65536, not {}",
                self.max_connections
            ));
        }
        if self.max_connections_per_address == 0 {
            return bad("max_connections_per_address must be at least 1".into());
        }
        if self.max_head_bytes < 256 || self.max_headers == 0 || self.max_body_bytes == 0 {
            return bad(
                "max_head_bytes must be at least 256, max_headers and max_body_bytes positive"
                    .into(),
            );
        }
        if !self.path.starts_with('/') {
            return bad(format!("the path must start with '/', not {:?}", self.path));
        }
        let hour = Duration::from_secs(3600);
        for (name, value) in [
            ("head_timeout", self.head_timeout),
            ("body_timeout", self.body_timeout),
            ("idle_timeout", self.idle_timeout),
            ("write_timeout", self.write_timeout),
            ("keepalive", self.keepalive),
            ("disconnect_poll", self.poll),
        ] {
            if value < Duration::from_millis(1) || value > hour {
                return bad(format!("{name} must be 1 ms to 1 hour, not {value:?}"));
            }
        }
        if self.max_sessions == 0 || self.replay_events == 0 || self.replay_bytes == 0 {
            return bad("max_sessions and the replay buffer must be positive".into());
        }
        self.check_instances()
    }

    /// The settings for running several instances.
    fn check_instances(&self) -> Result<()> {
        let bad = |text: String| Err(Error::Config(text));
        if let Some(name) = &self.instance_id {
            let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if name.is_empty() || name.len() > MAX_INSTANCE_ID || !name.chars().all(allowed) {
                return bad(format!(
                    "the instance id must be 1 to {MAX_INSTANCE_ID} characters of A-Z a-z 0-9 _ -, \
                     not {name:?}"
                ));
            }
        }
        if let Some((alive, ready)) = &self.health_paths {
            let metadata = self.authorization.as_ref().map(|a| a.metadata_path());
            for path in [alive, ready] {
                if !path.starts_with('/') || *path == self.path || Some(path) == metadata.as_ref() {
                    return bad(format!(
                        "a health path must start with '/' and be neither the endpoint nor the \
                         metadata path, not {path:?}"
                    ));
                }
            }
            if alive == ready {
                return bad("the alive and ready paths must differ".into());
            }
        }
        Ok(())
    }
}

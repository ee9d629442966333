//! DNS-rebinding protection: a request's `Host` (and `Origin`, when a browser sends one) must
//! name this server, so a page on another site whose name was re-pointed at 127.0.0.1 cannot
//! reach it. And what a trusted proxy's `X-Forwarded-*` headers say of the client, believed
//! from a trusted proxy only.

use std::net::{IpAddr, SocketAddr};

use super::config::HttpServerConfig;
use super::request::Head;

/// The host names every server accepts.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The host part of `host[:port]` (an IPv6 literal keeps its brackets), lower-cased; `None`
/// for a malformed one.
pub(crate) fn host_name(authority: &str) -> Option<String> {
    let authority = authority.trim();
    if authority.is_empty() || authority.contains(['/', '@', ' ']) {
        return None;
    }
    let host = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let after = &rest[end + 1..];
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        &authority[..end + 2]
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if is_port(port) => host,
            Some(_) => return None,
            None => authority,
        }
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn is_port(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

fn host_allowed(host: &str, config: &HttpServerConfig) -> bool {
    LOOPBACK.contains(&host)
        || config
            .allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
}

/// Checks `Host` and `Origin`: `Err((status, reason))` when the request must be refused.
pub(crate) fn check(
    host: Option<&str>,
    origin: Option<&str>,
    config: &HttpServerConfig,
) -> Result<(), (u16, String)> {
    let Some(host) = host else {
        return Err((400, "the Host header is required".into()));
    };
    match host_name(host) {
        Some(name) if host_allowed(&name, config) => {}
        _ => {
            return Err((
                421,
                format!("the Host {host:?} is not one this server answers to"),
            ))
        }
    }
    let Some(origin) = origin else {
        return Ok(());
    };
    if config
        .allowed_origins
        .iter()
        .any(|allowed| allowed == origin)
    {
        return Ok(());
    }
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    match authority.and_then(host_name) {
        Some(name) if host_allowed(&name, config) => Ok(()),
        _ => Err((403, format!("the Origin {origin:?} is not allowed"))),
    }
}

/// Where a request comes from, as far as it is believed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Via<'a> {
    /// The host the client asked for: `Host`, or a trusted proxy's `X-Forwarded-Host`.
    pub(crate) host: Option<&'a str>,
    /// The client's request crossed the network encrypted: this connection is TLS, or a
    /// trusted proxy says the client reached it over TLS.
    pub(crate) tls: bool,
    /// The client: the peer, or the last address of a trusted proxy's `X-Forwarded-For`.
    pub(crate) client: SocketAddr,
}

/// The first item of a comma-separated header, trimmed.
fn first_item(value: &str) -> &str {
    value.split(',').next().unwrap_or("").trim()
}

/// What `head` says of its client: from a peer of `config`'s trusted proxies, its
/// `X-Forwarded-Host`, `-Proto` and `-For`; from any other, only the connection itself.
pub(crate) fn via<'a>(
    head: &'a Head,
    peer: SocketAddr,
    tls: bool,
    config: &HttpServerConfig,
) -> Via<'a> {
    let host = head.header("host");
    let trusted = config
        .trusted_proxies
        .iter()
        .any(|proxy| proxy.to_canonical() == peer.ip().to_canonical());
    if !trusted {
        return Via {
            host,
            tls,
            client: peer,
        };
    }
    let forwarded_host = head
        .header("x-forwarded-host")
        .map(first_item)
        .filter(|host| !host.is_empty());
    // No `X-Forwarded-Proto`: the proxy terminated TLS, as it is trusted to.
    let tls = head
        .header("x-forwarded-proto")
        .is_none_or(|proto| first_item(proto).eq_ignore_ascii_case("https"));
    // The last address is the one the proxy saw; the ones before it, any client could write.
    let client = head
        .header("x-forwarded-for")
        .and_then(|list| list.rsplit(',').next())
        .and_then(|last| {
            let last = last.trim();
            last.parse::<IpAddr>()
                .map(|ip| SocketAddr::new(ip, 0))
                .or_else(|_| last.parse::<SocketAddr>())
                .ok()
        })
        .unwrap_or(peer);
    Via {
        host: forwarded_host.or(host),
        tls,
        client,
    }
}

/// True when a bearer token may come from `via` (see
/// [`HttpServerConfig::loopback_plain_tokens`]).
pub(crate) fn token_may_come(via: &Via<'_>, config: &HttpServerConfig) -> bool {
    via.tls || (config.loopback_plain_tokens && via.client.ip().to_canonical().is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_lose_their_port_and_keep_ipv6_brackets() {
        assert_eq!(host_name("localhost:3000").as_deref(), Some("localhost"));
        assert_eq!(host_name("[::1]:80").as_deref(), Some("[::1]"));
        assert_eq!(host_name("LocalHost").as_deref(), Some("localhost"));
        for bad in ["", "a:b", "[::1", "[::1]x", "a/b", "u@h", "h:123456"] {
            assert_eq!(host_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_loopback_and_configured_names_pass() {
        let config = HttpServerConfig::default();
        assert!(check(Some("127.0.0.1:8080"), None, &config).is_ok());
        assert!(check(Some("localhost"), Some("http://localhost:5173"), &config).is_ok());
        assert_eq!(
            check(Some("evil.example.com"), None, &config)
                .unwrap_err()
                .0,
            421
        );
        assert_eq!(
            check(
                Some("localhost:1"),
                Some("http://evil.example.com"),
                &config
            )
            .unwrap_err()
            .0,
            403
        );
        assert_eq!(
            check(Some("localhost"), Some("null"), &config)
                .unwrap_err()
                .0,
            403
        );
        assert_eq!(check(None, None, &config).unwrap_err().0, 400);
        let config = HttpServerConfig::default()
            .allowed_hosts(["mcp.internal"])
            .allowed_origins(["https://app.example"]);
        assert!(check(
            Some("MCP.internal:443"),
            Some("https://app.example"),
            &config
        )
        .is_ok());
    }
}

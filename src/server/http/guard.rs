//! DNS-rebinding protection: a request's `Host` (and `Origin`, when a browser sends one) must
//! name this server, so a page on another site whose name was re-pointed at 127.0.0.1 cannot
//! reach it.

use super::config::HttpServerConfig;

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

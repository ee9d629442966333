//! Where the flow may fetch from, given what the network told it (the MCP security best
//! practices' "Server-Side Request Forgery" section): a 401's `resource_metadata` is only
//! fetched from the MCP server's own origin; the authorization server the resource metadata
//! names may be anywhere, except on a loopback or private address when the MCP server is not
//! on one itself. Otherwise any server could make the client send requests into the user's
//! own machine or network (another local service's `/admin` page, a cloud metadata address).
//!
//! Hosts are judged as the URL writes them: `localhost` (and `*.localhost`), IPv4 in every
//! spelling the system's resolver takes (`127.1`, `0x7f.0.0.1`, `2130706433`), IPv6 literals
//! (with IPv4 inside them). A name is not resolved for this check.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::util::split_url;

/// Scheme, host and port as RFC 6454 compares them: scheme and host without case, the default
/// port filled in, user information dropped.
fn origin_key(url: &str) -> Option<(String, String, u16)> {
    let parts = split_url(url)?;
    let (scheme, authority) = parts.origin.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = split_host_port(host_port)?;
    let port = match port {
        Some(port) => port.parse().ok()?,
        None if scheme == "https" => 443,
        None => 80,
    };
    Some((scheme, host.to_ascii_lowercase(), port))
}

/// `host[:port]` or `[v6][:port]`; the host without brackets.
fn split_host_port(host_port: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = host_port.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        return Some((host, port));
    }
    Some(match host_port.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (host_port, None),
    })
}

/// Whether two URLs have the same origin.
pub(crate) fn same_origin(a: &str, b: &str) -> bool {
    matches!((origin_key(a), origin_key(b)), (Some(a), Some(b)) if a == b)
}

/// Whether a URL's host is loopback or private: `localhost`, a loopback, private, link-local,
/// shared (100.64/10), unspecified or unique-local address. A URL that does not read counts as
/// local (it is refused where local ones are).
pub(crate) fn is_local(url: &str) -> bool {
    let Some((_, host, _)) = origin_key(url) else {
        return true;
    };
    let host = host.trim_end_matches('.');
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    if let Ok(v6) = host.parse::<Ipv6Addr>() {
        return local_v6(v6);
    }
    match parse_ipv4(host) {
        Some(v4) => local_v4(v4),
        None => false,
    }
}

fn local_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
}

fn local_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return local_v4(v4);
    }
    let first = ip.segments()[0];
    // An IPv4-compatible address (`::a.b.c.d`, deprecated) carries IPv4 too.
    let compatible = ip.segments()[..6].iter().all(|segment| *segment == 0);
    ip.is_loopback()
        || ip.is_unspecified()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (compatible && local_v4(Ipv4Addr::from_bits(ip.to_bits() as u32)))
}

/// IPv4 as `inet_aton` reads it (what the system resolver does with a name made of numbers):
/// one to four parts, each decimal, octal (a leading `0`) or hexadecimal (`0x`), the last one
/// filling the bytes left.
fn parse_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut values = Vec::with_capacity(parts.len());
    for part in &parts {
        let value = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            u32::from_str_radix(hex, 16).ok()?
        } else if part.len() > 1 && part.starts_with('0') {
            u32::from_str_radix(&part[1..], 8).ok()?
        } else {
            part.parse::<u32>().ok()?
        };
        values.push(value);
    }
    let (last, leading) = values.split_last()?;
    let mut bits: u32 = 0;
    for (index, value) in leading.iter().enumerate() {
        if *value > 255 {
            return None;
        }
        bits |= value << (24 - 8 * index);
    }
    let room = 32 - 8 * leading.len() as u32;
    if room < 32 && *last >= 1 << room {
        return None;
    }
    Some(Ipv4Addr::from_bits(bits | last))
}

/// Whether the flow may fetch `url`, an authorization server or one of its endpoints that
/// the network named, for the MCP server at `mcp_url`: never a loopback or private address
/// unless the MCP server is on one too.
pub(crate) fn reachable_from(url: &str, mcp_url: &str) -> bool {
    !is_local(url) || is_local(mcp_url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_as_rfc_6454_says() {
        assert!(same_origin(
            "http://localhost:3000/mcp",
            "HTTP://LOCALHOST:3000/x"
        ));
        assert!(same_origin("https://h/mcp", "https://h:443/.well-known/x"));
        assert!(same_origin("https://u:p@h/mcp", "https://h/x"));
        assert!(same_origin("http://[::1]:8/a", "http://[::1]:8/b"));
        assert!(!same_origin(
            "http://localhost:3000/mcp",
            "http://localhost:3001/admin"
        ));
        assert!(!same_origin("http://h/mcp", "https://h/mcp"));
        assert!(!same_origin("https://h/mcp", "https://h.evil/mcp"));
        assert!(!same_origin("https://h/mcp", "not a url"));
    }

    #[test]
    fn local_hosts_in_every_spelling() {
        for url in [
            "http://localhost:1/x",
            "http://LOCALHOST./x",
            "http://app.localhost/x",
            "http://127.0.0.1/x",
            "http://127.1/x",
            "http://0x7f.0.0.1/x",
            "http://0177.0.0.1/x",
            "http://2130706433/x",
            "http://0/x",
            "http://10.1.2.3/x",
            "http://172.16.0.1/x",
            "http://192.168.1.1/x",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/x",
            "http://[::1]/x",
            "http://[::]/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://[::ffff:a9fe:a9fe]/x",
            "http://[fd00::1]/x",
            "http://[fe80::1]/x",
            "http://user:pw@127.0.0.1:8/x",
            "nonsense",
        ] {
            assert!(is_local(url), "{url}");
        }
        for url in [
            "https://as.example.com/x",
            "https://8.8.8.8/x",
            "https://172.32.0.1/x",
            "https://[2001:db8::1]/x",
            "https://localhost.example/x",
            "https://127.0.0.1.nip.example/x",
            "https://0x7g.0.0.1/x",
        ] {
            assert!(!is_local(url), "{url}");
        }
    }

    #[test]
    fn local_servers_only_for_a_local_mcp_server() {
        assert!(reachable_from(
            "http://localhost:2/as",
            "http://localhost:1/mcp"
        ));
        assert!(reachable_from(
            "https://as.example.com",
            "http://localhost:1/mcp"
        ));
        assert!(reachable_from(
            "https://as.example.com",
            "https://mcp.example.com/mcp"
        ));
        assert!(!reachable_from(
            "http://127.0.0.1:2/as",
            "https://mcp.example.com/mcp"
        ));
        assert!(!reachable_from(
            "https://10.0.0.5/as",
            "https://mcp.example.com/mcp"
        ));
        assert!(reachable_from(
            "https://10.0.0.5/as",
            "https://10.0.0.4/mcp"
        ));
    }
}

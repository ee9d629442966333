//! Discovery: the protected resource's metadata (RFC 9728), then its authorization server's
//! (RFC 8414, OpenID Connect Discovery), each fetched where the specification says, read as
//! untrusted JSON, and checked before anything of it is used.

use serde_json::Value;

use super::http::FlowHttp;
use super::origin::{reachable_from, same_origin};
use super::util::{check_endpoint, split_url};
use crate::error::{AuthErrorKind, Error, Result};
use crate::mask::mask_url;

/// Most entries kept of any list in a metadata document.
const MAX_LIST: usize = 256;

/// A protected resource's metadata (RFC 9728 §2), as far as MCP authorization reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// The resource identifier, exactly as written (sent as RFC 8707's `resource`).
    pub resource: String,
    /// The authorization servers' issuer identifiers, exactly as written.
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`, when present.
    pub scopes_supported: Option<Vec<String>>,
}

/// An authorization server's metadata (RFC 8414 §2), as far as MCP authorization reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerMetadata {
    /// The issuer identifier, exactly as written.
    pub issuer: String,
    /// Where users authorize.
    pub authorization_endpoint: Option<String>,
    /// Where tokens are had.
    pub token_endpoint: String,
    /// Dynamic Client Registration (RFC 7591), when offered.
    pub registration_endpoint: Option<String>,
    /// `scopes_supported`, when present.
    pub scopes_supported: Option<Vec<String>>,
    /// `response_types_supported`, when present.
    pub response_types_supported: Option<Vec<String>>,
    /// `grant_types_supported`, when present.
    pub grant_types_supported: Option<Vec<String>>,
    /// `code_challenge_methods_supported`, when present.
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_methods_supported`, when present.
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// `authorization_response_iss_parameter_supported` is literally `true` (RFC 9207).
    pub iss_parameter_supported: bool,
    /// `client_id_metadata_document_supported` is literally `true`.
    pub client_id_metadata_document_supported: bool,
    /// `dpop_signing_alg_values_supported`, when present (RFC 9449 §5.1).
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// Whether a list field contains `value` (false when absent).
    pub(crate) fn lists(list: &Option<Vec<String>>, value: &str) -> bool {
        list.as_ref()
            .is_some_and(|list| list.iter().any(|item| item == value))
    }

    /// The metadata the 2025-03-26 revision assumes when an MCP origin publishes none: the
    /// default endpoints under the origin, counted as supporting PKCE with S256.
    pub(crate) fn defaults_for(origin: &str) -> ServerMetadata {
        ServerMetadata {
            issuer: origin.to_owned(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            response_types_supported: Some(vec!["code".into()]),
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            ..ServerMetadata::default()
        }
    }
}

fn string_list(
    value: Option<&Value>,
    field: &str,
) -> std::result::Result<Option<Vec<String>>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .take(MAX_LIST)
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("`{field}` holds something that is not a string"))
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("`{field}` is not an array")),
    }
}

fn string_field(
    object: &serde_json::Map<String, Value>,
    field: &str,
) -> std::result::Result<Option<String>, String> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(format!("`{field}` is not a string")),
    }
}

fn object_of(bytes: &[u8]) -> std::result::Result<serde_json::Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err("the document is not a JSON object".into()),
        Err(error) => Err(format!("the document is not JSON: {error}")),
    }
}

/// Reads a protected resource metadata document.
///
/// # Errors
///
/// A message saying what is wrong: not a JSON object, no `resource`, no authorization server.
pub fn parse_resource_metadata(bytes: &[u8]) -> std::result::Result<ResourceMetadata, String> {
    let object = object_of(bytes)?;
    let resource = string_field(&object, "resource")?.ok_or("it has no `resource`")?;
    let authorization_servers =
        string_list(object.get("authorization_servers"), "authorization_servers")?
            .unwrap_or_default();
    if authorization_servers.is_empty() {
        return Err("it names no authorization server (`authorization_servers`)".into());
    }
    Ok(ResourceMetadata {
        resource,
        authorization_servers,
        scopes_supported: string_list(object.get("scopes_supported"), "scopes_supported")?,
    })
}

/// Reads an authorization server metadata document (OAuth or OpenID).
///
/// # Errors
///
/// A message saying what is wrong: not a JSON object, no `issuer`, no `token_endpoint`, a
/// field of the wrong type.
pub fn parse_server_metadata(bytes: &[u8]) -> std::result::Result<ServerMetadata, String> {
    let object = object_of(bytes)?;
    let flag = |field: &str| object.get(field) == Some(&Value::Bool(true));
    Ok(ServerMetadata {
        issuer: string_field(&object, "issuer")?.ok_or("it has no `issuer`")?,
        authorization_endpoint: string_field(&object, "authorization_endpoint")?,
        token_endpoint: string_field(&object, "token_endpoint")?
            .ok_or("it has no `token_endpoint`")?,
        registration_endpoint: string_field(&object, "registration_endpoint")?,
        scopes_supported: string_list(object.get("scopes_supported"), "scopes_supported")?,
        response_types_supported: string_list(
            object.get("response_types_supported"),
            "response_types_supported",
        )?,
        grant_types_supported: string_list(
            object.get("grant_types_supported"),
            "grant_types_supported",
        )?,
        code_challenge_methods_supported: string_list(
            object.get("code_challenge_methods_supported"),
            "code_challenge_methods_supported",
        )?,
        token_endpoint_auth_methods_supported: string_list(
            object.get("token_endpoint_auth_methods_supported"),
            "token_endpoint_auth_methods_supported",
        )?,
        iss_parameter_supported: flag("authorization_response_iss_parameter_supported"),
        client_id_metadata_document_supported: flag("client_id_metadata_document_supported"),
        dpop_signing_alg_values_supported: string_list(
            object.get("dpop_signing_alg_values_supported"),
            "dpop_signing_alg_values_supported",
        )?,
    })
}

/// Where to look for the resource's metadata, in order: the challenge's `resource_metadata`
/// alone when it gave one on the MCP server's own origin; otherwise the path-based well-known
/// URL, then the root one. A `resource_metadata` on another origin is never fetched (see
/// [`super::origin`]): the server's own well-known URLs are looked at instead.
pub(crate) fn resource_metadata_urls(mcp_url: &str, from_challenge: Option<&str>) -> Vec<String> {
    match from_challenge {
        Some(url) if same_origin(url, mcp_url) => return vec![url.to_owned()],
        Some(url) => log::warn!(
            "toolwire: {} named its resource metadata at {}, on another origin: not fetched; \
             looking on the server's own origin instead",
            mask_url(mcp_url),
            mask_url(url)
        ),
        None => {}
    }
    let Some(parts) = split_url(mcp_url) else {
        return Vec::new();
    };
    let root = format!("{}/.well-known/oauth-protected-resource", parts.origin);
    let path = parts.path.trim_end_matches('/');
    if path.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{path}"), root]
    }
}

/// Where to look for an issuer's metadata, in order (RFC 8414 §3.1 path insertion, then the
/// OpenID forms). An issuer with a path is never looked up at the root.
pub(crate) fn server_metadata_urls(issuer: &str) -> Vec<String> {
    let Some(parts) = split_url(issuer) else {
        return Vec::new();
    };
    let origin = parts.origin;
    let path = parts.path.strip_suffix('/').unwrap_or(parts.path);
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Whether the metadata's `resource` may be this MCP URL's (RFC 9728 §3.3): the same origin
/// (scheme and host without case) and a path that is the MCP path or a prefix of it by whole
/// segments. Servers publish the bare origin or a slash variant; anything else, another host
/// above all, is refused.
pub fn resource_matches(resource: &str, mcp_url: &str) -> bool {
    let (Some(resource), Some(mcp)) = (split_url(resource), split_url(mcp_url)) else {
        return false;
    };
    if !resource.origin.eq_ignore_ascii_case(mcp.origin) || resource.query.is_some() {
        return false;
    }
    let prefix = resource.path.trim_end_matches('/');
    let path = mcp.path.trim_end_matches('/');
    prefix.is_empty()
        || path == prefix
        || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

/// Fetches the resource's metadata: `Ok(None)` when none is published (every candidate
/// answered 4xx), which is the 2025-03-26 case.
///
/// # Errors
///
/// [`Error::Auth`] ([`AuthErrorKind::Discovery`]) for a 5xx, a network failure, or a document
/// that does not read; [`AuthErrorKind::ResourceMismatch`] for a `resource` that is not this
/// server's.
pub(crate) fn discover_resource(
    http: &FlowHttp,
    mcp_url: &str,
    from_challenge: Option<&str>,
) -> Result<Option<(String, ResourceMetadata)>> {
    for url in resource_metadata_urls(mcp_url, from_challenge) {
        check_endpoint(&url, "protected resource metadata URL")?;
        let answer = http.get(&url, &[], AuthErrorKind::Discovery)?;
        if (400..500).contains(&answer.status) {
            log::debug!(
                "toolwire: no resource metadata at {} (HTTP {})",
                mask_url(&url),
                answer.status
            );
            continue;
        }
        if !answer.success() {
            return Err(Error::auth_error(
                AuthErrorKind::Discovery,
                format!(
                    "the resource metadata at {} answered HTTP {}",
                    mask_url(&url),
                    answer.status
                ),
            ));
        }
        let metadata = parse_resource_metadata(&answer.body).map_err(|reason| {
            Error::auth_error(
                AuthErrorKind::Discovery,
                format!(
                    "the resource metadata at {} does not read: {reason}",
                    mask_url(&url)
                ),
            )
        })?;
        if !resource_matches(&metadata.resource, mcp_url) {
            return Err(Error::auth_error(
                AuthErrorKind::ResourceMismatch,
                format!(
                    "the resource metadata at {} is for `{}`, not for {}: refusing to authorize",
                    mask_url(&url),
                    super::util::shown(&metadata.resource, 200),
                    mask_url(mcp_url)
                ),
            ));
        }
        return Ok(Some((url, metadata)));
    }
    Ok(None)
}

/// Fetches and checks an issuer's metadata: the document's `issuer` must be the very string
/// the resource named, PKCE with S256 and the response type `code` must be offered when
/// `needs_code` (the authorization code grant).
///
/// # Errors
///
/// [`Error::Auth`]: [`AuthErrorKind::Discovery`] when no candidate has a document,
/// [`AuthErrorKind::IssuerMismatch`], [`AuthErrorKind::Unsupported`].
pub(crate) fn discover_server(
    http: &FlowHttp,
    issuer: &str,
    mcp_url: &str,
    needs_code: bool,
) -> Result<ServerMetadata> {
    check_endpoint(issuer, "authorization server")?;
    check_reachable(issuer, mcp_url, "authorization server")?;
    let candidates = server_metadata_urls(issuer);
    for url in &candidates {
        let answer = http.get(url, &[], AuthErrorKind::Discovery)?;
        if (400..500).contains(&answer.status) {
            continue;
        }
        if !answer.success() {
            return Err(Error::auth_error(
                AuthErrorKind::Discovery,
                format!(
                    "the authorization server metadata at {} answered HTTP {}",
                    mask_url(url),
                    answer.status
                ),
            ));
        }
        let metadata = parse_server_metadata(&answer.body).map_err(|reason| {
            Error::auth_error(
                AuthErrorKind::Discovery,
                format!(
                    "the authorization server metadata at {} does not read: {reason}",
                    mask_url(url)
                ),
            )
        })?;
        if metadata.issuer != issuer {
            return Err(Error::auth_error(
                AuthErrorKind::IssuerMismatch,
                format!(
                    "the metadata at {} names the issuer `{}`, not `{}` (RFC 8414 §3.3): none of its endpoints is used",
                    mask_url(url),
                    super::util::shown(&metadata.issuer, 200),
                    mask_url(issuer)
                ),
            ));
        }
        check_server(&metadata, needs_code)?;
        for (endpoint, what) in [
            (Some(&metadata.token_endpoint), "token endpoint"),
            (
                metadata.authorization_endpoint.as_ref(),
                "authorization endpoint",
            ),
            (
                metadata.registration_endpoint.as_ref(),
                "registration endpoint",
            ),
        ] {
            if let Some(endpoint) = endpoint {
                check_reachable(endpoint, mcp_url, what)?;
            }
        }
        return Ok(metadata);
    }
    Err(Error::auth_error(
        AuthErrorKind::Discovery,
        format!(
            "no authorization server metadata for `{}` (tried {})",
            mask_url(issuer),
            candidates
                .iter()
                .map(|url| mask_url(url))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// Refuses a URL the network named on a loopback or private address when the MCP server is
/// not on one (see [`super::origin`]).
fn check_reachable(url: &str, mcp_url: &str, what: &str) -> Result<()> {
    if reachable_from(url, mcp_url) {
        return Ok(());
    }
    Err(Error::auth_error(
        AuthErrorKind::Discovery,
        format!(
            "the {what} `{}` is on a loopback or private address and the MCP server {} is not: \
             it is not contacted (a server may not point the client into its own network)",
            mask_url(url),
            mask_url(mcp_url)
        ),
    ))
}

/// Fetches an authorization server's metadata from a configured URL (https, or loopback):
/// its issuer is taken as it is, and the usual checks apply.
///
/// # Errors
///
/// As [`discover_server`].
pub(crate) fn fetch_server_metadata(
    http: &FlowHttp,
    url: &str,
    needs_code: bool,
) -> Result<ServerMetadata> {
    check_endpoint(url, "authorization server metadata URL")?;
    let answer = http.get(url, &[], AuthErrorKind::Discovery)?;
    if !answer.success() {
        return Err(Error::auth_error(
            AuthErrorKind::Discovery,
            format!(
                "the authorization server metadata at {} answered HTTP {}",
                mask_url(url),
                answer.status
            ),
        ));
    }
    let metadata = parse_server_metadata(&answer.body).map_err(|reason| {
        Error::auth_error(
            AuthErrorKind::Discovery,
            format!(
                "the authorization server metadata at {} does not read: {reason}",
                mask_url(url)
            ),
        )
    })?;
    check_endpoint(&metadata.issuer, "authorization server")?;
    check_server(&metadata, needs_code)?;
    Ok(metadata)
}

/// The checks every metadata document passes before use.
pub(crate) fn check_server(metadata: &ServerMetadata, needs_code: bool) -> Result<()> {
    check_endpoint(&metadata.token_endpoint, "token endpoint")?;
    if let Some(registration) = &metadata.registration_endpoint {
        check_endpoint(registration, "registration endpoint")?;
    }
    if !needs_code {
        return Ok(());
    }
    let Some(authorize) = &metadata.authorization_endpoint else {
        return Err(Error::auth_error(
            AuthErrorKind::Unsupported,
            format!(
                "the authorization server `{}` has no authorization endpoint",
                mask_url(&metadata.issuer)
            ),
        ));
    };
    check_endpoint(authorize, "authorization endpoint")?;
    if !ServerMetadata::lists(&metadata.code_challenge_methods_supported, "S256") {
        return Err(Error::auth_error(
            AuthErrorKind::Unsupported,
            format!(
                "the authorization server `{}` does not offer PKCE with S256 (code_challenge_methods_supported), which MCP requires",
                mask_url(&metadata.issuer)
            ),
        ));
    }
    if metadata.response_types_supported.is_some()
        && !ServerMetadata::lists(&metadata.response_types_supported, "code")
    {
        return Err(Error::auth_error(
            AuthErrorKind::Unsupported,
            format!(
                "the authorization server `{}` does not offer the response type `code`",
                mask_url(&metadata.issuer)
            ),
        ));
    }
    Ok(())
}

/// The 2025-03-26 way, for a server that publishes no resource metadata: the MCP origin is
/// the authorization server; its metadata at the root, or else the default endpoints.
pub(crate) fn legacy_server(
    http: &FlowHttp,
    mcp_url: &str,
    needs_code: bool,
) -> Result<ServerMetadata> {
    let Some(parts) = split_url(mcp_url) else {
        return Err(Error::auth_error(
            AuthErrorKind::Discovery,
            "the server URL is not an http(s) URL",
        ));
    };
    let url = format!("{}/.well-known/oauth-authorization-server", parts.origin);
    let answer = http.get(
        &url,
        &[("MCP-Protocol-Version", "2025-03-26")],
        AuthErrorKind::Discovery,
    )?;
    let metadata = if answer.success() {
        parse_server_metadata(&answer.body).map_err(|reason| {
            Error::auth_error(
                AuthErrorKind::Discovery,
                format!(
                    "the authorization server metadata at {} does not read: {reason}",
                    mask_url(&url)
                ),
            )
        })?
    } else if (400..500).contains(&answer.status) {
        ServerMetadata::defaults_for(parts.origin)
    } else {
        return Err(Error::auth_error(
            AuthErrorKind::Discovery,
            format!(
                "the authorization server metadata at {} answered HTTP {}",
                mask_url(&url),
                answer.status
            ),
        ));
    };
    check_server(&metadata, needs_code)?;
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_metadata_candidates() {
        assert_eq!(
            resource_metadata_urls("http://h:1/mcp/", None),
            [
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_metadata_urls("http://h:1", None),
            ["http://h:1/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            resource_metadata_urls("http://h/mcp", Some("http://h/x.json")),
            ["http://h/x.json"]
        );
    }

    #[test]
    fn server_metadata_candidates_never_fall_back_to_root_for_a_path() {
        assert_eq!(
            server_metadata_urls("http://h:1"),
            [
                "http://h:1/.well-known/oauth-authorization-server",
                "http://h:1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            server_metadata_urls("http://h:1/tenant1/"),
            [
                "http://h:1/.well-known/oauth-authorization-server/tenant1",
                "http://h:1/.well-known/openid-configuration/tenant1",
                "http://h:1/tenant1/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn resources_match_by_origin_and_whole_segments() {
        assert!(resource_matches("http://h:1", "http://h:1/mcp"));
        assert!(resource_matches("http://h:1/", "http://h:1/mcp"));
        assert!(resource_matches("http://h:1/mcp", "http://h:1/mcp"));
        assert!(resource_matches("HTTP://H:1/mcp/", "http://h:1/mcp"));
        assert!(!resource_matches("http://h:1/mc", "http://h:1/mcp"));
        assert!(!resource_matches(
            "https://evil.example.com/mcp",
            "http://h:1/mcp"
        ));
        assert!(!resource_matches("http://h:2/mcp", "http://h:1/mcp"));
        assert!(!resource_matches("http://h:1/mcp/deeper", "http://h:1/mcp"));
    }

    #[test]
    fn documents_are_checked() {
        assert!(parse_resource_metadata(br#"{"resource":"http://h"}"#).is_err());
        assert!(
            parse_resource_metadata(br#"{"resource":"http://h","authorization_servers":[1]}"#)
                .is_err()
        );
        let ok = parse_resource_metadata(
            br#"{"resource":"http://h","authorization_servers":["http://a"]}"#,
        )
        .unwrap();
        assert_eq!(ok.authorization_servers, ["http://a"]);
        assert!(parse_server_metadata(br#"{"issuer":"http://a"}"#).is_err());
        let meta = parse_server_metadata(
            br#"{"issuer":"http://a","token_endpoint":"http://a/t","authorization_response_iss_parameter_supported":"true"}"#,
        )
        .unwrap();
        assert!(!meta.iss_parameter_supported, "only a literal true counts");
    }
}

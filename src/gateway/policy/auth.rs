//! The policy's `"auth"` section: the authorization in front of the gateway over HTTP, the
//! same settings as `toolwire serve`'s `--auth-*` flags (which override it), read as
//! strictly as the rest of the policy.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{duration, object, unknown};
use crate::error::{Error, Result};

/// The most issuers or scopes the section may name.
const MAX_NAMES: usize = 64;

/// The policy's `"auth"` section ([`super::Policy::auth`]): who is trusted to issue tokens for
/// which resource, how tokens are checked, and the scopes every request needs. The secret of
/// the introspection client is never in the policy: it comes from `--auth-client-secret` or
/// the `TOOLWIRE_AUTH_CLIENT_SECRET` environment variable.
///
/// ```json
/// {"auth": {
///   "resource": "https://mcp.example/mcp",
///   "issuer": "https://login.example",
///   "scopes": ["mcp:tools"],
///   "introspection": {"client_id": "gateway"},
///   "leeway": "30s"
/// }}
/// ```
///
/// | key | meaning | default |
/// |---|---|---|
/// | `resource` | the resource URI clients reach the gateway at (tokens' audience; the metadata's path) | required |
/// | `issuer` | a URL or an array of URLs: the authorization servers trusted; JWT access tokens checked against their keys | none |
/// | `tokens` | a static tokens file (`{"tokens": [{"sha256": …, "subject": …, "scopes": […]}]}`), instead of `issuer` | none |
/// | `introspection` | `true`, or `{"endpoint": URL, "client_id": ID}` (each optional): the issuer's tokens are opaque, checked at its introspection endpoint (the metadata's, unless given) as client ID | off (JWTs) |
/// | `scopes` | scopes every request needs (403 `insufficient_scope` without them) | none |
/// | `leeway` | how far `exp`/`nbf` may be off (`0s` to `5m`) | `60s` |
/// | `introspection_max_age` | how long a good introspection answer is believed (`0s` to `24h`) | `60s` |
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuthSection {
    resource: Option<String>,
    issuers: Vec<String>,
    tokens: Option<PathBuf>,
    introspection: Option<Introspection>,
    scopes: Vec<String>,
    leeway: Option<Duration>,
    introspection_max_age: Option<Duration>,
}

/// The section's `introspection`.
#[derive(Debug, Clone, Default, PartialEq)]
struct Introspection {
    endpoint: Option<String>,
    client_id: Option<String>,
}

impl AuthSection {
    /// `resource`.
    pub fn resource(&self) -> Option<&str> {
        self.resource.as_deref()
    }

    /// `issuer`, as a list.
    pub fn issuers(&self) -> &[String] {
        &self.issuers
    }

    /// `tokens`.
    pub fn tokens(&self) -> Option<&std::path::Path> {
        self.tokens.as_deref()
    }

    /// Whether `introspection` is on.
    pub fn introspection(&self) -> bool {
        self.introspection.is_some()
    }

    /// `introspection.endpoint`.
    pub fn introspection_endpoint(&self) -> Option<&str> {
        self.introspection.as_ref()?.endpoint.as_deref()
    }

    /// `introspection.client_id`.
    pub fn introspection_client_id(&self) -> Option<&str> {
        self.introspection.as_ref()?.client_id.as_deref()
    }

    /// `scopes`.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// `leeway`.
    pub fn leeway(&self) -> Option<Duration> {
        self.leeway
    }

    /// `introspection_max_age`.
    pub fn introspection_max_age(&self) -> Option<Duration> {
        self.introspection_max_age
    }
}

/// Reads the section at `at`.
pub(super) fn section(value: &Value, at: &str) -> Result<AuthSection> {
    let mut auth = AuthSection::default();
    for (key, value) in object(value, at)? {
        let here = format!("{at}/{key}");
        match key.as_str() {
            "resource" => auth.resource = Some(url(value, &here)?),
            "issuer" => {
                auth.issuers = match value {
                    Value::Array(_) => strings(value, &here)?
                        .iter()
                        .map(|issuer| url(&Value::String(issuer.clone()), &here))
                        .collect::<Result<_>>()?,
                    _ => vec![url(value, &here)?],
                }
            }
            "tokens" => auth.tokens = Some(PathBuf::from(text(value, &here)?)),
            "introspection" => auth.introspection = introspection(value, &here)?,
            "scopes" => auth.scopes = strings(value, &here)?,
            "leeway" => auth.leeway = Some(time(value, &here, Duration::from_secs(300))?),
            "introspection_max_age" => {
                auth.introspection_max_age = Some(time(value, &here, Duration::from_secs(86400))?)
            }
            _ => return Err(unknown(
                key,
                at,
                "resource, issuer, tokens, introspection, scopes, leeway, introspection_max_age",
            )),
        }
    }
    let bad = |text: &str| Err(Error::Config(format!("the policy's {at} {text}")));
    if auth.resource.is_none() {
        return bad("needs `resource`, the URI clients reach the gateway at");
    }
    match (auth.issuers.is_empty(), auth.tokens.is_some()) {
        (true, false) => return bad("needs `issuer` (JWTs or introspection) or `tokens`"),
        (false, true) => return bad("has both `issuer` and `tokens`: keep one"),
        _ => {}
    }
    if auth.tokens.is_some() && auth.introspection.is_some() {
        return bad("has `introspection` with `tokens`: introspection asks an `issuer`");
    }
    Ok(auth)
}

fn introspection(value: &Value, at: &str) -> Result<Option<Introspection>> {
    match value {
        Value::Bool(false) => Ok(None),
        Value::Bool(true) => Ok(Some(Introspection::default())),
        Value::Object(fields) => introspection_fields(fields, at).map(Some),
        _ => Err(Error::Config(format!(
            "the policy's {at} must be true, false or an object"
        ))),
    }
}

fn introspection_fields(fields: &Map<String, Value>, at: &str) -> Result<Introspection> {
    let mut introspection = Introspection::default();
    for (key, value) in fields {
        let here = format!("{at}/{key}");
        match key.as_str() {
            "endpoint" => introspection.endpoint = Some(url(value, &here)?),
            "client_id" => introspection.client_id = Some(text(value, &here)?),
            _ => return Err(unknown(key, at, "endpoint, client_id")),
        }
    }
    Ok(introspection)
}

fn text(value: &Value, at: &str) -> Result<String> {
    match value.as_str() {
        Some(text) if !text.is_empty() && text.len() <= 2048 => Ok(text.to_owned()),
        _ => Err(Error::Config(format!(
            "the policy's {at} must be a string of 1 to 2048 bytes"
        ))),
    }
}

fn url(value: &Value, at: &str) -> Result<String> {
    let text = text(value, at)?;
    if !(text.starts_with("https://") || text.starts_with("http://")) {
        return Err(Error::Config(format!(
            "the policy's {at} must be an http(s) URL, not {text:?}"
        )));
    }
    Ok(text)
}

fn strings(value: &Value, at: &str) -> Result<Vec<String>> {
    let items = value
        .as_array()
        .filter(|items| items.len() <= MAX_NAMES)
        .ok_or_else(|| {
            Error::Config(format!(
                "the policy's {at} must be an array of at most {MAX_NAMES} strings"
            ))
        })?;
    items.iter().map(|item| text(item, at)).collect()
}

fn time(value: &Value, at: &str, most: Duration) -> Result<Duration> {
    match value.as_str().and_then(duration) {
        Some(time) if time <= most => Ok(time),
        _ => Err(Error::Config(format!(
            "the policy's {at} must be a duration such as \"30s\" of at most {}s, not {value}",
            most.as_secs()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use crate::gateway::Policy;

    #[test]
    fn the_auth_section_is_read_strictly() {
        let policy = Policy::parse(
            r#"{"auth": {"resource": "https://mcp.example/mcp", "issuer": ["https://a.example", "https://b.example"],
                "scopes": ["mcp"], "introspection": {"client_id": "gw"}, "leeway": "0s",
                "introspection_max_age": "2m"}}"#,
        )
        .unwrap();
        let auth = policy.auth().unwrap();
        assert_eq!(auth.resource(), Some("https://mcp.example/mcp"));
        assert_eq!(auth.issuers().len(), 2);
        assert!(auth.introspection());
        assert_eq!(auth.introspection_client_id(), Some("gw"));
        assert_eq!(auth.introspection_endpoint(), None);
        assert_eq!(auth.scopes(), ["mcp"]);
        assert_eq!(auth.leeway(), Some(std::time::Duration::ZERO));
        assert!(Policy::parse("{}").unwrap().auth().is_none());
        let tokens =
            Policy::parse(r#"{"auth": {"resource": "https://m.example", "tokens": "t.json"}}"#)
                .unwrap();
        assert_eq!(
            tokens.auth().unwrap().tokens(),
            Some(std::path::Path::new("t.json"))
        );
        for (bad, says) in [
            (
                r#"{"auth": {"resource": "https://m.example", "issuer": "https://a.example", "isuer": 1}}"#,
                "unknown key \"isuer\" at /auth",
            ),
            (
                r#"{"auth": {"issuer": "https://a.example"}}"#,
                "needs `resource`",
            ),
            (
                r#"{"auth": {"resource": "https://m.example"}}"#,
                "needs `issuer`",
            ),
            (
                r#"{"auth": {"resource": "https://m.example", "issuer": "https://a.example", "tokens": "t"}}"#,
                "both",
            ),
            (
                r#"{"auth": {"resource": "https://m.example", "tokens": "t", "introspection": true}}"#,
                "introspection",
            ),
            (
                r#"{"auth": {"resource": "ftp://m.example", "tokens": "t"}}"#,
                "/auth/resource",
            ),
            (
                r#"{"auth": {"resource": "https://m.example", "issuer": "https://a.example", "introspection": {"secret": "x"}}}"#,
                "unknown key \"secret\" at /auth/introspection",
            ),
            (
                r#"{"auth": {"resource": "https://m.example", "issuer": "https://a.example", "leeway": "6m"}}"#,
                "/auth/leeway",
            ),
            (
                r#"{"auth": {"resource": "https://m.example", "issuer": "https://a.example", "scopes": "mcp"}}"#,
                "/auth/scopes",
            ),
            (r#"{"auth": []}"#, "/auth"),
        ] {
            let error = Policy::parse(bad).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}

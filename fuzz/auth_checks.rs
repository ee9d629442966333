//! The properties of the authorization parsers' fuzz targets (`www_authenticate`,
//! `auth_documents`, `auth_redirect`, `auth_origin`, `resource_token`, `resource_documents`),
//! beside `checks.rs` and used the same way: each
//! target calls one function here, and `tests/auth/fuzz_inputs.rs` runs them over the committed
//! seeds and kept crash inputs in the normal test suite. A function panics when a property
//! does not hold.
#![allow(dead_code)]

use serde_json::Value;
use toolwire::auth::{
    parse_challenges, parse_redirect, parse_registration, parse_resource_metadata,
    parse_server_metadata, parse_token_response, resource_matches, Challenge,
};

// ---- www_authenticate ----

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// A challenge written back in RFC 9110's syntax: every value quoted, `"` and `\` escaped.
fn serialize(challenge: &Challenge) -> String {
    let mut text = challenge.scheme.clone();
    if let Some(token68) = &challenge.token68 {
        text.push(' ');
        text.push_str(token68);
        return text;
    }
    let params: Vec<String> = challenge
        .params
        .iter()
        .map(|(name, value)| {
            let escaped: String = value
                .chars()
                .flat_map(|c| match c {
                    '"' | '\\' => vec!['\\', c],
                    c => vec![c],
                })
                .collect();
            format!("{name}=\"{escaped}\"")
        })
        .collect();
    if !params.is_empty() {
        text.push(' ');
        text.push_str(&params.join(", "));
    }
    text
}

/// `WWW-Authenticate` fields (the input split on `\n` into several, as a response may
/// carry): never panics, bounded, deterministic; every scheme and parameter name is a
/// token, names are lower case; a challenge list written back and parsed again is the same
/// list.
pub fn www_authenticate(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let fields: Vec<&str> = text.split('\n').collect();
    let parsed = parse_challenges(&fields);
    assert_eq!(parsed, parse_challenges(&fields), "deterministic");
    assert!(parsed.len() <= toolwire::auth::MAX_CHALLENGES);
    for challenge in &parsed {
        assert!(
            !challenge.scheme.is_empty() && challenge.scheme.chars().all(is_tchar),
            "{challenge:?}"
        );
        assert!(challenge.params.len() <= toolwire::auth::MAX_PARAMS);
        assert!(challenge.token68.is_none() || challenge.params.is_empty());
        for (name, _) in &challenge.params {
            assert!(!name.is_empty() && name.chars().all(is_tchar), "{name:?}");
            assert_eq!(name, &name.to_ascii_lowercase());
        }
        let _ = challenge.scopes();
        let _ = challenge.param("resource_metadata");
    }
    // Written back one per field (values quoted), the list reads the same. A token68 that
    // ends in `=` is ambiguous only with a following parameter, never alone in its field.
    let written: Vec<String> = parsed.iter().map(serialize).collect();
    let again = parse_challenges(&written);
    let comparable = parsed.len() == again.len()
        || written.iter().map(String::len).sum::<usize>() > toolwire::auth::MAX_CHALLENGE_BYTES;
    assert!(comparable, "{written:?}: {parsed:?} then {again:?}");
    if written.iter().map(String::len).sum::<usize>() <= toolwire::auth::MAX_CHALLENGE_BYTES {
        assert_eq!(parsed, again, "written back: {written:?}");
    }
}

// ---- auth_documents ----

fn strings(value: Option<&Value>) -> Option<Option<Vec<String>>> {
    match value {
        None | Some(Value::Null) => Some(None),
        Some(Value::Array(items)) => items
            .iter()
            .take(256)
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(Some),
        Some(_) => None,
    }
}

fn string(object: &serde_json::Map<String, Value>, name: &str) -> Option<Option<String>> {
    match object.get(name) {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(text)) => Some(Some(text.clone())),
        Some(_) => None,
    }
}

/// The metadata, registration and token documents, picked by the first byte (`% 4`): never
/// panic, and accept exactly what a model over `serde_json` says they should, with the
/// fields it reads; `resource_matches` never panics and holds for a URL and itself.
pub fn auth_documents(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let object = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    };
    match selector % 4 {
        0 => {
            let parsed = parse_resource_metadata(body);
            let model = object.as_ref().and_then(|object| {
                let resource = string(object, "resource")??;
                let servers = strings(object.get("authorization_servers"))?.unwrap_or_default();
                let scopes = strings(object.get("scopes_supported"))?;
                (!servers.is_empty()).then_some((resource, servers, scopes))
            });
            match (&parsed, &model) {
                (Ok(found), Some((resource, servers, scopes))) => {
                    assert_eq!(&found.resource, resource);
                    assert_eq!(&found.authorization_servers, servers);
                    assert_eq!(&found.scopes_supported, scopes);
                    if resource.starts_with("http") && !resource.contains(['?', '#']) {
                        let _ = resource_matches(resource, resource);
                    }
                }
                (Err(_), None) => {}
                other => panic!("resource metadata: {other:?}"),
            }
            for server in parsed.iter().flat_map(|found| &found.authorization_servers) {
                let _ = resource_matches(server, &parsed.as_ref().unwrap().resource);
            }
        }
        1 => {
            let parsed = parse_server_metadata(body);
            let model = object.as_ref().and_then(|object| {
                let issuer = string(object, "issuer")??;
                let token = string(object, "token_endpoint")??;
                string(object, "authorization_endpoint")?;
                string(object, "registration_endpoint")?;
                for list in [
                    "scopes_supported",
                    "response_types_supported",
                    "grant_types_supported",
                    "code_challenge_methods_supported",
                    "token_endpoint_auth_methods_supported",
                    "dpop_signing_alg_values_supported",
                ] {
                    strings(object.get(list))?;
                }
                let flag = |name: &str| object.get(name) == Some(&Value::Bool(true));
                Some((
                    issuer,
                    token,
                    flag("authorization_response_iss_parameter_supported"),
                ))
            });
            match (&parsed, &model) {
                (Ok(found), Some((issuer, token, iss))) => {
                    assert_eq!((&found.issuer, &found.token_endpoint), (issuer, token));
                    assert_eq!(found.iss_parameter_supported, *iss);
                }
                (Err(_), None) => {}
                other => panic!("server metadata: {other:?}"),
            }
        }
        2 => {
            let parsed = parse_registration(body);
            let model = object
                .as_ref()
                .and_then(|object| {
                    object
                        .get("client_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .filter(|id| !id.is_empty());
            match (&parsed, &model) {
                (Ok(found), Some(id)) => {
                    assert_eq!(&found.client_id, id);
                    assert!(found.client_secret.as_deref() != Some(""));
                    // The secret never shows: the same `Debug` whatever it is.
                    let mut other = found.clone();
                    other.client_secret = other.client_secret.map(|_| "another".to_owned());
                    assert_eq!(format!("{found:?}"), format!("{other:?}"));
                }
                (Err(_), None) => {}
                other => panic!("registration: {other:?}"),
            }
        }
        _ => {
            let parsed = parse_token_response(body);
            let model = object.as_ref().and_then(|object| {
                let token = object
                    .get("access_token")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())?;
                object.get("token_type").and_then(Value::as_str)?;
                Some(token.to_owned())
            });
            match (&parsed, &model) {
                (Ok(found), Some(token)) => {
                    assert_eq!(&found.access_token, token);
                    // Nor the tokens: the same `Debug` whatever they are.
                    let mut other = found.clone();
                    other.access_token = "another".into();
                    other.refresh_token = other.refresh_token.map(|_| "another".to_owned());
                    assert_eq!(format!("{found:?}"), format!("{other:?}"));
                }
                (Err(_), None) => {}
                other => panic!("token response: {}", other.0.is_ok()),
            }
        }
    }
}

// ---- auth_redirect ----

/// `application/x-www-form-urlencoded` decoding, written out here independently: `+` is a
/// space, `%XX` a byte, anything else itself; the bytes read as UTF-8, lossily.
fn form_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|byte| (*byte as char).to_digit(16));
        match bytes[index] {
            b'+' => out.push(b' '),
            b'%' => match (hex(index + 1), hex(index + 2)) {
                (Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    index += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The redirect's query: never panics; `code`, `state`, `iss`, `error` and
/// `error_description` are the first of their name, decoded as the model decodes them, and
/// `repeated` says whether any came twice; the `Debug` never shows the code.
pub fn auth_redirect(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if text.len() > 16 * 1024 {
        let _ = parse_redirect(&text);
        return;
    }
    let redirect = parse_redirect(&text);
    let query = text
        .split_once('?')
        .map(|(_, rest)| rest.split('#').next().unwrap_or(""))
        .unwrap_or("");
    let mut seen: Vec<(String, String)> = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        seen.push((form_decode(name), form_decode(value)));
    }
    let names = ["code", "state", "iss", "error", "error_description"];
    let first = |name: &str| {
        seen.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    assert_eq!(redirect.code, first("code"));
    assert_eq!(redirect.state, first("state"));
    assert_eq!(redirect.iss, first("iss"));
    assert_eq!(redirect.error, first("error"));
    assert_eq!(redirect.error_description, first("error_description"));
    let repeated = names
        .iter()
        .any(|name| seen.iter().filter(|(key, _)| key == name).count() > 1);
    assert_eq!(redirect.repeated, repeated);
    // The code and state never show: the same `Debug` whatever they are.
    let mut other = redirect.clone();
    other.code = other.code.map(|_| "another".to_owned());
    other.state = other.state.map(|_| "another".to_owned());
    assert_eq!(format!("{redirect:?}"), format!("{other:?}"));
}

// ---- auth_origin ----

/// The model of a loopback or private IPv4 address, from the standard library's predicates.
fn local_v4_model(ip: std::net::Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
}

/// The rule for URLs a server names (`toolwire::fuzzing::auth_origin`), on the input split at
/// its first `\n` into a URL and the MCP server's URL: never panics; deterministic; the same
/// origin is symmetric and implies the same locality; reachable exactly when the URL is not
/// local or the MCP server is; and the first four bytes as an IPv4 address are local exactly
/// as the standard library's predicates say, in dotted, hexadecimal, decimal and IPv6-mapped
/// spellings alike, whatever the case of the scheme.
pub fn auth_origin(data: &[u8]) {
    use toolwire::fuzzing::auth_origin as rule;
    let text = String::from_utf8_lossy(data);
    let (url, mcp) = text
        .split_once('\n')
        .unwrap_or((&text, "http://localhost/mcp"));
    let judged = rule(url, mcp);
    assert_eq!(judged, rule(url, mcp), "deterministic");
    let back = rule(mcp, url);
    assert_eq!(judged.same_origin, back.same_origin, "symmetric");
    assert_eq!(judged.url_local, back.mcp_local);
    if judged.same_origin {
        assert_eq!(judged.url_local, judged.mcp_local, "{url:?} {mcp:?}");
    }
    assert_eq!(judged.reachable, !judged.url_local || judged.mcp_local);
    if let [a, b, c, d, ..] = *data {
        let ip = std::net::Ipv4Addr::new(a, b, c, d);
        let local = local_v4_model(ip);
        let bits = u32::from(ip);
        for spelling in [
            format!("http://{ip}/x"),
            format!("HTTPS://{ip}:8443"),
            format!("http://0x{bits:x}/x"),
            format!("http://{bits}/x"),
            format!("http://[::ffff:{ip}]/x"),
            format!("http://user@{a}.{b}.{}/x", u32::from(c) << 8 | u32::from(d)),
        ] {
            assert_eq!(
                rule(&spelling, "https://mcp.example.com/mcp").url_local,
                local,
                "{spelling}"
            );
        }
    }
}

// ---- resource_token ----

/// The resource, issuer and scope the `resource_token` target checks tokens against.
pub const RESOURCE: &str = "https://mcp.example/mcp";
pub const ISSUER: &str = "https://issuer.example";

/// The HTTP server's authorization (`toolwire::fuzzing::resource_token`): the input's first
/// line is the `Authorization` header (empty: none), the rest the issuer's JWKS document.
/// Checked: nothing panics; the answer is 200 (with a non-empty subject, holding the scope),
/// 401 or 403, the same twice; a refusal's challenge is a `Bearer` challenge of printable
/// ASCII naming the metadata URL and the scope, and neither it nor the body ever holds the
/// token; `alg` other than ES256 and RS256 is never served.
pub fn resource_token(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (header, jwks) = text.split_once('\n').unwrap_or((&text, ""));
    let out =
        toolwire::fuzzing::resource_token(header, jwks.as_bytes(), RESOURCE, ISSUER, &["mcp"]);
    let again =
        toolwire::fuzzing::resource_token(header, jwks.as_bytes(), RESOURCE, ISSUER, &["mcp"]);
    assert_eq!(out, again, "the same request, another answer");
    let token = header
        .trim()
        .split_once(' ')
        .map_or("", |(_, token)| token.trim());
    match out.status {
        200 => {
            let (subject, scopes) = out.caller.as_ref().expect("a served request has a caller");
            assert!(!subject.is_empty(), "an empty subject was served");
            assert!(
                scopes.iter().any(|scope| scope == "mcp"),
                "served without the scope"
            );
            assert!(
                out.keys.is_some_and(|keys| keys > 0),
                "served without a key"
            );
            let head = token.split('.').next().unwrap_or("");
            let alg = base64_json(head)
                .and_then(|h| h.get("alg").and_then(Value::as_str).map(str::to_owned));
            assert!(
                matches!(alg.as_deref(), Some("ES256" | "RS256")),
                "served a token with alg {alg:?}"
            );
        }
        401 | 403 => {
            // One of the four fixed challenges, so nothing of the request (the token least
            // of all) is ever echoed.
            assert!(out.caller.is_none());
            let tail = "scope=\"mcp\", resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\"";
            let expected = match out.status {
                403 => vec![format!(
                    "Bearer error=\"insufficient_scope\", error_description=\"the access token lacks a scope this server needs\", {tail}"
                )],
                _ => vec![
                    format!("Bearer {tail}"),
                    format!("Bearer error=\"invalid_request\", {tail}"),
                    format!(
                        "Bearer error=\"invalid_token\", error_description=\"the access token is not valid for this server\", {tail}"
                    ),
                ],
            };
            assert!(expected.contains(&out.challenge), "{:?}", out.challenge);
            let body: Value = serde_json::from_str(&out.body).expect("an OAuth error body");
            assert!(body.as_object().is_some_and(|fields| fields
                .keys()
                .all(|key| key == "error" || key == "error_description")));
        }
        status => panic!("status {status}"),
    }
}

/// A base64url JSON object, when it is one.
fn base64_json(part: &str) -> Option<Value> {
    let mut bytes = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in part.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits) as u8);
        }
    }
    serde_json::from_slice(&bytes).ok()
}

// ---- resource_documents ----

/// The moment the `resource_documents` target reads introspection answers at.
pub const NOW: u64 = 1_000_000;

/// The documents the HTTP server reads from an authorization server, picked by the first
/// byte (`% 3`): its metadata (`0`), its JWKS (`1`), a token introspection answer (`2`).
/// Checked: nothing panics; the same input gives the same answer twice; each is taken exactly
/// when a model over `serde_json` says it should be: metadata that is an object naming exactly
/// the issuer; a key set with a `keys` array of at most 32 entries (and never more usable keys
/// than entries); an introspection answer that is `active: true`, names the resource in `aud`,
/// the issuer in `iss` when it has one, no `cnf`, a bearer `token_type` when it has one, an
/// `exp` and `nbf` that hold at NOW, and a subject (`sub`, else `client_id`), whose caller is
/// exactly those fields.
pub fn resource_documents(data: &[u8]) {
    let Some((&pick, document)) = data.split_first() else {
        return;
    };
    let model: Option<Value> = serde_json::from_slice(document).ok();
    let field = |name: &str| model.as_ref().and_then(|value| value.get(name));
    let text = |name: &str| field(name).and_then(Value::as_str);
    match pick % 3 {
        0 => {
            let out = toolwire::fuzzing::resource_server_metadata(document, ISSUER);
            assert_eq!(
                out,
                toolwire::fuzzing::resource_server_metadata(document, ISSUER)
            );
            let expected =
                model.as_ref().is_some_and(Value::is_object) && text("issuer") == Some(ISSUER);
            assert_eq!(out.is_ok(), expected, "{out:?}");
            if let Ok(taken) = out {
                assert_eq!(Some(&taken), model.as_ref());
            }
        }
        1 => {
            let out = toolwire::fuzzing::resource_jwks(document, 32);
            assert_eq!(out, toolwire::fuzzing::resource_jwks(document, 32));
            let entries = field("keys").and_then(Value::as_array).map(Vec::len);
            assert_eq!(out.is_ok(), entries.is_some_and(|n| n <= 32), "{out:?}");
            if let Ok(keys) = out {
                assert!(keys <= entries.unwrap_or(0));
            }
        }
        _ => {
            let out = toolwire::fuzzing::introspection_answer(document, RESOURCE, ISSUER, NOW);
            assert_eq!(
                out,
                toolwire::fuzzing::introspection_answer(document, RESOURCE, ISSUER, NOW)
            );
            let time = |name: &str| -> Result<Option<u64>, ()> {
                match field(name) {
                    None | Some(Value::Null) => Ok(None),
                    Some(value) => value
                        .as_f64()
                        .filter(|t| t.is_finite() && *t >= 0.0)
                        .map(|t| Some(t as u64))
                        .ok_or(()),
                }
            };
            let audience = match field("aud") {
                Some(Value::String(aud)) => aud == RESOURCE,
                Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(RESOURCE)),
                _ => false,
            };
            let subject = text("sub")
                .or_else(|| text("client_id"))
                .filter(|s| !s.is_empty());
            let (exp, nbf) = (time("exp"), time("nbf"));
            let expected = field("active") == Some(&Value::Bool(true))
                && field("token_type").is_none_or(|kind| {
                    kind.as_str()
                        .is_some_and(|kind| kind.eq_ignore_ascii_case("bearer"))
                })
                && field("cnf").is_none()
                && field("iss").is_none_or(|iss| iss.as_str() == Some(ISSUER))
                && audience
                && exp.is_ok_and(|exp| exp.is_none_or(|exp| exp > NOW))
                && nbf.is_ok_and(|nbf| nbf.is_none_or(|nbf| nbf <= NOW))
                && subject.is_some();
            assert_eq!(out.is_ok(), expected, "{out:?}");
            if let Ok(caller) = out {
                assert_eq!(Some(caller.subject.as_str()), subject);
                assert_eq!(caller.client_id.as_deref(), text("client_id"));
                let scopes: Vec<&str> = text("scope")
                    .map(|scope| scope.split(' ').filter(|s| !s.is_empty()).collect())
                    .unwrap_or_default();
                assert_eq!(caller.scopes, scopes);
                assert_eq!(Ok(caller.exp), exp);
            }
        }
    }
}

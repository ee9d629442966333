//! An in-process MCP server that needs OAuth, and its authorization server, on one
//! `127.0.0.1` port (std `TcpListener`, through `http_fake`): protected resource metadata,
//! authorization server metadata, dynamic registration, an authorization endpoint that
//! consents at once (302 to the redirect URI), a token endpoint that checks PKCE, the code,
//! the redirect URI and the resource, refresh tokens, and an MCP endpoint that checks tokens
//! and scopes. Every knob is a field of [`Options`]; everything it saw is in [`World`].
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::http_fake::{initialize_result, result, text_result, FakeServer, Reply, Req};

/// What the redirect's `iss` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Iss {
    Correct,
    Wrong,
    Omit,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// Where the resource metadata lives: `Some(path)`, or none (the 2025-03-26 case).
    pub prm_path: Option<&'static str>,
    /// The challenge names the metadata URL.
    pub prm_in_challenge: bool,
    /// The metadata's `resource` (default: the MCP URL).
    pub resource: Option<String>,
    /// The metadata's `scopes_supported`.
    pub prm_scopes: Option<Vec<&'static str>>,
    /// The 401's `scope`.
    pub challenge_scope: Option<&'static str>,
    /// The issuer's path (`""` or e.g. `/tenant1`).
    pub issuer_path: &'static str,
    /// The issuer the metadata names (default: the right one).
    pub metadata_issuer: Option<String>,
    pub pkce_methods: Option<Vec<&'static str>>,
    pub iss_supported: bool,
    pub iss: Iss,
    /// Offer registration; `false` leaves `registration_endpoint` out.
    pub registration: bool,
    /// Registration answers 400 `invalid_client_metadata`.
    pub registration_refused: bool,
    /// What registration hands out (a secret makes the client confidential).
    pub registered_secret: Option<&'static str>,
    pub auth_methods: Vec<&'static str>,
    pub as_scopes: Option<Vec<&'static str>>,
    pub grant_types: Vec<&'static str>,
    pub expires_in: Option<u64>,
    pub issue_refresh: bool,
    pub refresh_fails: bool,
    /// `tools/call` needs this scope (403 `insufficient_scope` otherwise).
    pub tool_scope: Option<&'static str>,
    /// `tools/call` answers 403 `insufficient_scope` whatever the token holds.
    pub always_forbidden: bool,
    /// Tokens start with this.
    pub token_prefix: &'static str,
    /// An `id_token` naming this user comes with the tokens.
    pub user: Option<&'static str>,
    /// Serve the 2026-07-28 era (`server/discover`) instead of `initialize`.
    pub modern: bool,
    /// Bind tokens to DPoP proofs (ES256).
    pub dpop: bool,
    /// Both servers ask for a DPoP nonce first.
    pub dpop_nonce: bool,
    /// With `dpop`: the resource server still challenges `Bearer` alone (it takes no
    /// DPoP-bound token), while the authorization server offers DPoP.
    pub bearer_only: bool,
    /// Grant at most these scopes, whatever is asked.
    pub grant_only: Option<Vec<&'static str>>,
    /// Answer 401 to every token, even one just issued.
    pub refuse_tokens: bool,
    /// The token response's `token_type` (default: `Bearer`, or `DPoP` for a bound token).
    pub token_type: Option<&'static str>,
    /// The challenge's `resource_metadata` names this URL instead of the metadata's own.
    pub challenge_metadata: Option<String>,
    /// The resource metadata names this authorization server instead of its own.
    pub authorization_server: Option<String>,
    /// `tools/list` names the quoting tools (`quote`, `quote_text`) beside `echo`, so a
    /// gateway in front serves them.
    pub list_quoting_tools: bool,
    /// Offer token introspection (RFC 7662) at `/introspect` to this client id and secret
    /// (HTTP Basic); its answers name `options.resource` (else the MCP URL) as audience.
    pub introspection: Option<(&'static str, &'static str)>,
    /// `/introspect` answers 500.
    pub introspection_down: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            prm_path: Some("/.well-known/oauth-protected-resource/mcp"),
            prm_in_challenge: true,
            resource: None,
            prm_scopes: None,
            challenge_scope: None,
            issuer_path: "",
            metadata_issuer: None,
            pkce_methods: Some(vec!["S256"]),
            iss_supported: true,
            iss: Iss::Correct,
            registration: true,
            registration_refused: false,
            registered_secret: None,
            auth_methods: vec!["none"],
            as_scopes: None,
            grant_types: vec!["authorization_code", "refresh_token"],
            expires_in: Some(3600),
            issue_refresh: false,
            refresh_fails: false,
            tool_scope: None,
            always_forbidden: false,
            token_prefix: "tok-",
            user: None,
            modern: false,
            dpop: false,
            dpop_nonce: false,
            bearer_only: false,
            grant_only: None,
            refuse_tokens: false,
            token_type: None,
            challenge_metadata: None,
            authorization_server: None,
            list_quoting_tools: false,
            introspection: None,
            introspection_down: false,
        }
    }
}

/// One issued code.
#[derive(Clone, Debug)]
struct Code {
    challenge: String,
    redirect_uri: String,
    client_id: String,
    scopes: Vec<String>,
    resource: String,
}

/// Everything the fake saw and issued.
#[derive(Default, Debug)]
pub struct World {
    pub authorizations: Vec<HashMap<String, String>>,
    pub token_requests: Vec<(HashMap<String, String>, Option<String>)>,
    pub registrations: Vec<Value>,
    /// Every path requested, in order ("GET /.well-known/…", "POST /mcp tools/list").
    pub paths: Vec<String>,
    /// token → scopes
    pub tokens: HashMap<String, Vec<String>>,
    pub refresh_tokens: HashMap<String, Vec<String>>,
    codes: HashMap<String, Code>,
    pub mcp_with_token: usize,
    pub issued: usize,
    /// Problems the fake noticed in what the client sent (PKCE, resource, …).
    pub problems: Vec<String>,
    /// Every DPoP proof seen: where, its header and its claims.
    pub proofs: Vec<(String, Value, Value)>,
    /// Token exchanges at the identity provider.
    pub exchanges: Vec<HashMap<String, String>>,
    /// Introspection requests, each with its form and `Authorization` header.
    pub introspections: Vec<(HashMap<String, String>, Option<String>)>,
}

pub struct FakeAuth {
    pub server: FakeServer,
    /// The MCP endpoint.
    pub url: String,
    /// The origin.
    pub base: String,
    pub world: Arc<Mutex<World>>,
    pub options: Arc<Mutex<Options>>,
}

fn form(body: &str) -> HashMap<String, String> {
    form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect()
}

fn query(path: &str) -> HashMap<String, String> {
    path.split_once('?')
        .map(|(_, query)| form(query))
        .unwrap_or_default()
}

impl FakeAuth {
    pub fn start(options: Options) -> FakeAuth {
        let base = Arc::new(Mutex::new(String::new()));
        let world = Arc::new(Mutex::new(World::default()));
        let options = Arc::new(Mutex::new(options));
        let server = {
            let base = Arc::clone(&base);
            let world = Arc::clone(&world);
            let options = Arc::clone(&options);
            FakeServer::start(move |req, reply| {
                let base = base.lock().unwrap().clone();
                let options = options.lock().unwrap().clone();
                handle(req, reply, &base, &options, &world);
            })
        };
        let origin = server.url.trim_end_matches("/mcp").to_owned();
        *base.lock().unwrap() = origin.clone();
        FakeAuth {
            url: server.url.clone(),
            base: origin,
            server,
            world,
            options,
        }
    }

    pub fn issuer(&self) -> String {
        format!("{}{}", self.base, self.options.lock().unwrap().issuer_path)
    }

    pub fn authorizations(&self) -> usize {
        self.world.lock().unwrap().authorizations.len()
    }

    pub fn token_requests(&self) -> usize {
        self.world.lock().unwrap().token_requests.len()
    }

    pub fn registrations(&self) -> usize {
        self.world.lock().unwrap().registrations.len()
    }

    pub fn paths(&self) -> Vec<String> {
        self.world.lock().unwrap().paths.clone()
    }

    pub fn problems(&self) -> Vec<String> {
        self.world.lock().unwrap().problems.clone()
    }

    /// Forgets every access token it issued: the next request with one gets 401.
    pub fn revoke_all(&self) {
        self.world.lock().unwrap().tokens.clear();
    }

    pub fn set(&self, edit: impl FnOnce(&mut Options)) {
        edit(&mut self.options.lock().unwrap());
    }
}

fn challenge(base: &str, options: &Options, error: Option<&str>, scope: Option<&str>) -> String {
    let mut parts = Vec::new();
    if let Some(error) = error {
        parts.push(format!("error=\"{error}\""));
    }
    if let Some(scope) = scope {
        parts.push(format!("scope=\"{scope}\""));
    }
    if let Some(url) = &options.challenge_metadata {
        parts.push(format!("resource_metadata=\"{url}\""));
    } else if let (true, Some(path)) = (options.prm_in_challenge, options.prm_path) {
        parts.push(format!("resource_metadata=\"{base}{path}\""));
    }
    // A resource server that takes DPoP-bound tokens says so with its scheme (RFC 9449 §7.1).
    let scheme = if options.dpop && !options.bearer_only {
        "DPoP"
    } else {
        "Bearer"
    };
    format!("{scheme} {}", parts.join(", "))
}

fn handle(req: &Req, reply: &mut Reply<'_>, base: &str, options: &Options, world: &Mutex<World>) {
    let path = req.path.split('?').next().unwrap_or("").to_owned();
    world.lock().unwrap().paths.push(format!(
        "{} {path}{}",
        req.method,
        if path == "/mcp" && req.method == "POST" {
            format!(" {}", req.rpc())
        } else {
            String::new()
        }
    ));
    let issuer = options
        .metadata_issuer
        .clone()
        .unwrap_or_else(|| format!("{base}{}", options.issuer_path));
    let real_issuer = format!("{base}{}", options.issuer_path);
    let mcp_url = format!("{base}/mcp");
    if Some(path.as_str()) == options.prm_path && req.method == "GET" {
        let mut document = json!({
            "resource": options.resource.clone().unwrap_or(mcp_url),
            "authorization_servers": [options.authorization_server.clone().unwrap_or(real_issuer)],
        });
        if let Some(scopes) = &options.prm_scopes {
            document["scopes_supported"] = json!(scopes);
        }
        return reply.json(200, &document, &[]);
    }
    let metadata_path = format!(
        "/.well-known/oauth-authorization-server{}",
        options.issuer_path
    );
    let legacy_root =
        options.prm_path.is_none() && path == "/.well-known/oauth-authorization-server";
    if (path == metadata_path || legacy_root) && req.method == "GET" {
        let mut document = json!({
            "issuer": if legacy_root { base.to_owned() } else { issuer },
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "response_types_supported": ["code"],
            "grant_types_supported": options.grant_types,
            "token_endpoint_auth_methods_supported": options.auth_methods,
            "authorization_response_iss_parameter_supported": options.iss_supported,
        });
        if options.registration {
            document["registration_endpoint"] = json!(format!("{base}/register"));
        }
        if let Some(methods) = &options.pkce_methods {
            document["code_challenge_methods_supported"] = json!(methods);
        }
        if let Some(scopes) = &options.as_scopes {
            document["scopes_supported"] = json!(scopes);
        }
        if options.dpop {
            document["dpop_signing_alg_values_supported"] = json!(["ES256"]);
        }
        if options.introspection.is_some() {
            document["introspection_endpoint"] = json!(format!("{base}/introspect"));
        }
        return reply.json(200, &document, &[]);
    }
    match (req.method.as_str(), path.as_str()) {
        ("POST", "/register") => {
            let body = req.json();
            world.lock().unwrap().registrations.push(body.clone());
            if options.registration_refused || !options.registration {
                return reply.json(
                    400,
                    &json!({"error": "invalid_client_metadata", "error_description": "no clients today"}),
                    &[],
                );
            }
            let mut answer = json!({
                "client_id": format!("client-{}", world.lock().unwrap().registrations.len()),
                "redirect_uris": body["redirect_uris"],
            });
            if let Some(secret) = options.registered_secret {
                answer["client_secret"] = json!(secret);
            }
            reply.json(201, &answer, &[])
        }
        ("GET", "/authorize") => authorize(req, reply, options, world, &real_issuer),
        ("POST", "/token") => token(req, reply, options, world, &mcp_url),
        ("POST", "/idp/token") => {
            let body = form(&req.body);
            world.lock().unwrap().exchanges.push(body.clone());
            reply.json(
                200,
                &json!({"access_token": format!("jag-for-{}", body.get("audience").cloned().unwrap_or_default()),
                        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}),
                &[],
            )
        }
        ("POST", "/introspect") => introspect(req, reply, options, world, &real_issuer, &mcp_url),
        ("POST", "/mcp") => mcp(req, reply, base, options, world),
        ("GET" | "DELETE", "/mcp") => reply.send(405, "", &[], ""),
        _ => reply.send(404, "text/plain", &[], "not found"),
    }
}

fn authorize(
    req: &Req,
    reply: &mut Reply<'_>,
    options: &Options,
    world: &Mutex<World>,
    issuer: &str,
) {
    let query = query(&req.path);
    let mut world = world.lock().unwrap();
    world.authorizations.push(query.clone());
    if query.get("code_challenge_method").map(String::as_str) != Some("S256") {
        world.problems.push("authorization without S256".into());
    }
    let code = format!("code-{}", world.authorizations.len());
    world.codes.insert(
        code.clone(),
        Code {
            challenge: query.get("code_challenge").cloned().unwrap_or_default(),
            redirect_uri: query.get("redirect_uri").cloned().unwrap_or_default(),
            client_id: query.get("client_id").cloned().unwrap_or_default(),
            scopes: query
                .get("scope")
                .map(|scope| scope.split(' ').map(str::to_owned).collect())
                .unwrap_or_default(),
            resource: query.get("resource").cloned().unwrap_or_default(),
        },
    );
    let mut location = format!(
        "{}?code={code}&state={}",
        query.get("redirect_uri").cloned().unwrap_or_default(),
        form_urlencoded::byte_serialize(
            query.get("state").map(String::as_bytes).unwrap_or_default()
        )
        .collect::<String>()
    );
    match options.iss {
        Iss::Correct => location.push_str(&format!(
            "&iss={}",
            form_urlencoded::byte_serialize(issuer.as_bytes()).collect::<String>()
        )),
        Iss::Wrong => location.push_str("&iss=https%3A%2F%2Fevil.example.com"),
        Iss::Omit => {}
    }
    reply.send(302, "", &[("Location", &location)], "");
}

/// The header and claims of a compact JWS, unverified.
pub fn jws_parts(jws: &str) -> Option<(Value, Value)> {
    let mut parts = jws.split('.');
    let decode = |part: &str| -> Option<Value> {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()
    };
    Some((decode(parts.next()?)?, decode(parts.next()?)?))
}

pub const AS_NONCE: &str = "as-nonce-1";
pub const RS_NONCE: &str = "rs-nonce-1";

fn issue(world: &mut World, options: &Options, scopes: Vec<String>) -> Value {
    let scopes: Vec<String> = match &options.grant_only {
        Some(only) => scopes
            .into_iter()
            .filter(|scope| only.contains(&scope.as_str()))
            .collect(),
        None => scopes,
    };
    world.issued += 1;
    let token = format!("{}{}", options.token_prefix, world.issued);
    world.tokens.insert(token.clone(), scopes.clone());
    let mut answer =
        json!({"access_token": token, "token_type": "Bearer", "scope": scopes.join(" ")});
    if let Some(seconds) = options.expires_in {
        answer["expires_in"] = json!(seconds);
    }
    if options.issue_refresh {
        let refresh = format!("refresh-{}", world.issued);
        world.refresh_tokens.insert(refresh.clone(), scopes);
        answer["refresh_token"] = json!(refresh);
    }
    if let Some(user) = options.user {
        let payload = URL_SAFE_NO_PAD.encode(json!({"sub": "u1", "email": user}).to_string());
        answer["id_token"] = json!(format!("eyJhbGciOiJub25lIn0.{payload}.sig"));
    }
    answer
}

fn token(req: &Req, reply: &mut Reply<'_>, options: &Options, world: &Mutex<World>, mcp_url: &str) {
    let body = form(&req.body);
    let basic = req.header("authorization").map(str::to_owned);
    let mut world = world.lock().unwrap();
    world.token_requests.push((body.clone(), basic.clone()));
    // As many servers do, the refusal quotes what it was sent: the client must not show it.
    let mut received: Vec<String> = [
        "refresh_token",
        "client_secret",
        "code",
        "code_verifier",
        "assertion",
        "client_assertion",
    ]
    .iter()
    .filter_map(|name| body.get(*name).cloned())
    .collect();
    received.extend(basic.iter().cloned());
    if let Some(pair) = basic
        .as_deref()
        .and_then(|value| value.strip_prefix("Basic "))
        .and_then(|b64| String::from_utf8(STANDARD.decode(b64).ok()?).ok())
    {
        received.push(pair);
    }
    let description = format!("refused by the fake (received {})", received.join(" "));
    let fail = |reply: &mut Reply<'_>, error: &str| {
        reply.json(
            400,
            &json!({"error": error, "error_description": description}),
            &[],
        )
    };
    if body.contains_key("client_secret") && basic.is_some() {
        world
            .problems
            .push("two client authentication methods".into());
    }
    let mut dpop_bound = false;
    if let Some(proof) = req.header("dpop") {
        let Some((header, claims)) = jws_parts(proof) else {
            return fail(reply, "invalid_dpop_proof");
        };
        world.proofs.push(("/token".into(), header, claims.clone()));
        if options.dpop_nonce && claims["nonce"] != AS_NONCE {
            return reply.json(
                400,
                &json!({"error": "use_dpop_nonce"}),
                &[("DPoP-Nonce", AS_NONCE)],
            );
        }
        dpop_bound = options.dpop;
    }
    match body.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some(code) = body.get("code").and_then(|code| world.codes.remove(code)) else {
                return fail(reply, "invalid_grant");
            };
            let verifier = body.get("code_verifier").cloned().unwrap_or_default();
            if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != code.challenge {
                world
                    .problems
                    .push("the verifier does not match the challenge".into());
                return fail(reply, "invalid_grant");
            }
            if body.get("redirect_uri") != Some(&code.redirect_uri) {
                world
                    .problems
                    .push("another redirect_uri at the token endpoint".into());
            }
            let resource = options
                .resource
                .clone()
                .unwrap_or_else(|| mcp_url.to_owned());
            if body.get("resource") != Some(&resource) || code.resource != resource {
                world.problems.push(format!(
                    "resource {:?} / {:?}",
                    body.get("resource"),
                    code.resource
                ));
            }
            let client = body
                .get("client_id")
                .cloned()
                .or_else(|| {
                    basic
                        .as_deref()
                        .and_then(|value| value.strip_prefix("Basic "))
                        .and_then(|b64| {
                            let pair = String::from_utf8(STANDARD.decode(b64).ok()?).ok()?;
                            Some(pair.split(':').next()?.to_owned())
                        })
                })
                .unwrap_or_default();
            if client != code.client_id {
                world
                    .problems
                    .push("another client at the token endpoint".into());
            }
            let mut answer = issue(&mut world, options, code.scopes);
            if dpop_bound {
                answer["token_type"] = json!("DPoP");
            }
            if let Some(token_type) = options.token_type {
                answer["token_type"] = json!(token_type);
            }
            reply.json(200, &answer, &[])
        }
        Some("refresh_token") => {
            let refresh = body.get("refresh_token").cloned().unwrap_or_default();
            if options.refresh_fails {
                world.refresh_tokens.remove(&refresh);
                return fail(reply, "invalid_grant");
            }
            let Some(scopes) = world.refresh_tokens.remove(&refresh) else {
                return fail(reply, "invalid_grant");
            };
            let answer = issue(&mut world, options, scopes);
            reply.json(200, &answer, &[])
        }
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
            if body.get("assertion").is_none_or(String::is_empty) {
                return fail(reply, "invalid_grant");
            }
            if options.refresh_fails {
                // Reused as "the assertion is refused".
                return fail(reply, "invalid_grant");
            }
            let answer = issue(&mut world, options, Vec::new());
            reply.json(200, &answer, &[])
        }
        Some("client_credentials") => {
            if options.refresh_fails {
                // Reused as "the client's credentials are refused".
                return fail(reply, "invalid_client");
            }
            let scopes = body
                .get("scope")
                .map(|scope| scope.split(' ').map(str::to_owned).collect())
                .unwrap_or_default();
            let answer = issue(&mut world, options, scopes);
            reply.json(200, &answer, &[])
        }
        _ => fail(reply, "unsupported_grant_type"),
    }
}

/// RFC 7662: the issued token's scopes, `client_id` `svc`, `sub` `user-N`, for the resource.
fn introspect(
    req: &Req,
    reply: &mut Reply<'_>,
    o: &Options,
    world: &Mutex<World>,
    iss: &str,
    mcp: &str,
) {
    let (body, basic) = (
        form(&req.body),
        req.header("authorization").map(str::to_owned),
    );
    let mut world = world.lock().unwrap();
    world.introspections.push((body.clone(), basic.clone()));
    let Some((id, secret)) = o.introspection.filter(|_| !o.introspection_down) else {
        return reply.json(500, &json!({"error": "server_error"}), &[]);
    };
    if basic
        != Some(format!(
            "Basic {}",
            STANDARD.encode(format!("{id}:{secret}"))
        ))
    {
        return reply.json(401, &json!({"error": "invalid_client"}), &[]);
    }
    let token = body.get("token").cloned().unwrap_or_default();
    let Some(scopes) = world.tokens.get(&token) else {
        return reply.json(200, &json!({"active": false}), &[]);
    };
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + o.expires_in.unwrap_or(3600);
    let answer = json!({"active": true, "scope": scopes.join(" "), "client_id": "svc", "exp": exp,
        "sub": token.replacen(o.token_prefix, "user-", 1), "iss": iss, "token_type": "Bearer",
        "aud": o.resource.clone().unwrap_or_else(|| mcp.to_owned())});
    reply.json(200, &answer, &[])
}

fn mcp(req: &Req, reply: &mut Reply<'_>, base: &str, options: &Options, world: &Mutex<World>) {
    let method = req.rpc();
    if method.starts_with("notifications/") {
        return reply.accepted();
    }
    let authorization = req.header("authorization").unwrap_or("");
    let token = authorization
        .strip_prefix("Bearer ")
        .or_else(|| authorization.strip_prefix("DPoP "))
        .map(str::to_owned);
    if authorization.starts_with("DPoP ") && options.bearer_only {
        world
            .lock()
            .unwrap()
            .problems
            .push("a DPoP token for a Bearer-only resource server".into());
        return reply.json(401, &json!({"error": "invalid_token"}), &[]);
    }
    if authorization.starts_with("DPoP ") {
        let proof = req.header("dpop").unwrap_or("");
        let Some((header, claims)) = jws_parts(proof) else {
            world
                .lock()
                .unwrap()
                .problems
                .push("a DPoP token without a proof".into());
            return reply.json(401, &json!({"error": "invalid_dpop_proof"}), &[]);
        };
        world
            .lock()
            .unwrap()
            .proofs
            .push(("/mcp".into(), header, claims.clone()));
        if options.dpop_nonce && claims["nonce"] != RS_NONCE {
            let header = format!("DPoP error=\"use_dpop_nonce\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
            return reply.json(
                401,
                &json!({"error": "use_dpop_nonce"}),
                &[("WWW-Authenticate", &header), ("DPoP-Nonce", RS_NONCE)],
            );
        }
    }
    let scopes = {
        let mut world = world.lock().unwrap();
        let scopes = token
            .as_ref()
            .and_then(|token| world.tokens.get(token).cloned());
        if scopes.is_some() {
            world.mcp_with_token += 1;
        }
        scopes
    };
    let scopes = scopes.filter(|_| !options.refuse_tokens);
    let Some(scopes) = scopes else {
        let header = challenge(base, options, None, options.challenge_scope);
        return reply.json(
            401,
            &json!({"error": "invalid_token", "error_description": "a token is needed"}),
            &[("WWW-Authenticate", &header)],
        );
    };
    if method == "tools/call" {
        let needed = options.tool_scope;
        let lacking = needed.is_some_and(|scope| !scopes.iter().any(|held| held == scope));
        if options.always_forbidden || lacking {
            let header = challenge(
                base,
                options,
                Some("insufficient_scope"),
                needed.or(Some("mcp:admin")),
            );
            return reply.json(
                403,
                &json!({"error": "insufficient_scope"}),
                &[("WWW-Authenticate", &header)],
            );
        }
    }
    let answer = match method.as_str() {
        "initialize" => initialize_result(req, "2025-11-25"),
        "server/discover" if options.modern => result(
            req,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                   "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-modern", "version": "1"}}}),
        ),
        "tools/list" => {
            let mut tools = vec![json!({"name": "echo", "inputSchema": {"type": "object"}})];
            if options.list_quoting_tools {
                for name in ["quote", "quote_text"] {
                    tools.push(json!({"name": name, "inputSchema": {"type": "object"}}));
                }
            }
            result(
                req,
                json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                       "tools": tools}),
            )
        }
        // A server that quotes the credentials it received, in a JSON-RPC error and in a
        // tool's error text.
        "tools/call" if req.json()["params"]["name"] == "quote" => json!({
            "jsonrpc": "2.0", "id": req.id(),
            "error": {"code": -32000, "message": format!("refused {authorization}"),
                      "data": {"token": token}}
        }),
        "tools/call" if req.json()["params"]["name"] == "quote_text" => result(
            req,
            json!({"content": [{"type": "text", "text": format!("refused {authorization}")}],
                   "isError": true}),
        ),
        "tools/call" => text_result(req, "done"),
        "ping" => result(req, json!({})),
        _ => {
            json!({"jsonrpc": "2.0", "id": req.id(), "error": {"code": -32601, "message": "no such method"}})
        }
    };
    reply.json(200, &answer, &[]);
}

/// A provider for the fake, whose user-agent step follows the redirect at once.
pub fn provider(
    fake: &FakeAuth,
    config: toolwire::auth::OAuthConfig,
) -> Arc<toolwire::auth::OAuth> {
    let config = config.authorizer(Arc::new(toolwire::auth::FetchRedirect::new(
        "http://127.0.0.1:9/callback",
    )));
    Arc::new(toolwire::auth::OAuth::new(fake.url.clone(), config).expect("a provider"))
}

/// An MCP client of the fake through `oauth`.
pub fn connect(
    fake: &FakeAuth,
    oauth: &Arc<toolwire::auth::OAuth>,
) -> toolwire::Result<toolwire::McpClient> {
    let modern = fake.options.lock().unwrap().modern;
    let mode = if modern {
        toolwire::ProtocolMode::Modern
    } else {
        toolwire::ProtocolMode::Legacy
    };
    let http = toolwire::HttpConfig::new(fake.url.clone())
        .auth(Arc::clone(oauth) as Arc<dyn toolwire::transport::HttpAuth>);
    toolwire::McpClient::connect_http(http, toolwire::McpConfig::default().mode(mode))
}

/// Nothing is left waiting on the client.
pub fn assert_idle(client: &toolwire::McpClient) {
    let stats = client.rpc().expect("the session").stats();
    assert_eq!(stats.in_flight, 0, "{stats:?}");
}

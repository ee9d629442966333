//! The authorization `toolwire serve --http` puts in front of the gateway: the `--auth-*`
//! flags over the policy's `"auth"` section (`toolwire::gateway::AuthSection`). A flag
//! replaces the section's setting of the same name; `--auth-issuer` or `--auth-tokens`
//! replace the section's way of checking tokens whole (`issuer`, `tokens` and
//! `introspection`). The introspection client's secret comes from `--auth-client-secret` or
//! `TOOLWIRE_AUTH_CLIENT_SECRET`, never from a file, and is never shown.

use toolwire::gateway::AuthSection;
use toolwire::server::{Authorization, StaticTokens};

use crate::serve::ServeArgs;
use crate::Failure;

/// The environment variable the introspection client's secret may come from.
pub const SECRET_VAR: &str = "TOOLWIRE_AUTH_CLIENT_SECRET";

/// The authorization the flags and the policy's section give, if any; checked.
pub fn authorization(
    args: &ServeArgs,
    section: Option<&AuthSection>,
) -> Result<Option<Authorization>, Failure> {
    let flags_choose = !args.auth_issuer.is_empty() || args.auth_tokens.is_some();
    // The section's way of checking tokens, unless the flags name their own.
    let section_check = section.filter(|_| !flags_choose);
    let issuers: Vec<String> = if flags_choose {
        args.auth_issuer.clone()
    } else {
        section.map(|s| s.issuers().to_vec()).unwrap_or_default()
    };
    let tokens = match &args.auth_tokens {
        Some(file) => Some(file.clone()),
        None => section_check.and_then(|s| s.tokens().map(std::path::Path::to_path_buf)),
    };
    let introspection = args.auth_introspection
        || args.auth_introspection_endpoint.is_some()
        || section_check.is_some_and(AuthSection::introspection);
    if !introspection && (args.auth_client_id.is_some() || args.auth_client_secret.is_some()) {
        return Err(Failure::usage(
            "--auth-client-id and --auth-client-secret are for --auth-introspection",
        ));
    }
    let resource = args
        .auth_resource
        .clone()
        .or_else(|| section.and_then(|s| s.resource().map(str::to_owned)));
    let any = resource.is_some() || !issuers.is_empty() || tokens.is_some() || introspection;
    if !any {
        if args.auth_client_id.is_some() || !args.auth_scope.is_empty() {
            return Err(Failure::usage(
                "--auth-scope and --auth-client-id need authorization: --auth-issuer URL or \
                 --auth-tokens FILE, with --auth-resource URL",
            ));
        }
        return Ok(None);
    }
    let Some(resource) = resource else {
        return Err(Failure::usage(
            "--auth-issuer and --auth-tokens need --auth-resource URL (or the policy's auth.resource)",
        ));
    };
    let mut auth = match (tokens, issuers.split_first()) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(
                "give --auth-issuer or --auth-tokens, not both",
            ))
        }
        (Some(file), None) => {
            if introspection {
                return Err(Failure::usage(
                    "--auth-introspection asks an --auth-issuer, not --auth-tokens",
                ));
            }
            let tokens = StaticTokens::from_file(&file)
                .map_err(|error| Failure::from_error("reading the tokens file", &error))?;
            Authorization::static_tokens(resource, tokens)
        }
        (None, Some((first, more))) if introspection => {
            if !more.is_empty() {
                return Err(Failure::usage(
                    "--auth-introspection asks one authorization server: give one --auth-issuer",
                ));
            }
            introspecting(args, section, resource, first)?
        }
        (None, Some((first, more))) => more.iter().fold(
            Authorization::jwt(resource, first.clone()),
            |auth, issuer| auth.issuer(issuer.clone()),
        ),
        (None, None) => {
            return Err(Failure::usage(
                "--auth-resource needs --auth-issuer URL or --auth-tokens FILE",
            ))
        }
    };
    let scopes: Vec<String> = if args.auth_scope.is_empty() {
        section.map(|s| s.scopes().to_vec()).unwrap_or_default()
    } else {
        args.auth_scope.clone()
    };
    auth = auth.scopes(scopes);
    if let Some(leeway) = section.and_then(AuthSection::leeway) {
        auth = auth.leeway(leeway);
    }
    if let Some(age) = section.and_then(AuthSection::introspection_max_age) {
        auth = auth.introspection_max_age(age);
    }
    auth.check()
        .map_err(|error| Failure::from_error("checking the authorization", &error))?;
    Ok(Some(auth))
}

/// Introspection at `issuer`, with the endpoint and client the flags or the section give.
fn introspecting(
    args: &ServeArgs,
    section: Option<&AuthSection>,
    resource: String,
    issuer: &str,
) -> Result<Authorization, Failure> {
    let mut auth = Authorization::introspection(resource, issuer);
    let endpoint = args
        .auth_introspection_endpoint
        .clone()
        .or_else(|| section.and_then(|s| s.introspection_endpoint().map(str::to_owned)));
    if let Some(endpoint) = endpoint {
        auth = auth.introspection_endpoint(endpoint);
    }
    let client_id = args
        .auth_client_id
        .clone()
        .or_else(|| section.and_then(|s| s.introspection_client_id().map(str::to_owned)));
    let secret = args.auth_client_secret.clone().or_else(|| {
        std::env::var(SECRET_VAR)
            .ok()
            .filter(|secret| !secret.is_empty())
    });
    match (client_id, secret) {
        (Some(id), Some(secret)) => auth = auth.introspection_client(id, secret),
        (None, None) => {}
        _ => {
            return Err(Failure::usage(format!(
                "token introspection authenticates with --auth-client-id and a secret \
                 (--auth-client-secret, or {SECRET_VAR} to keep it out of the process list): \
                 give both"
            )))
        }
    }
    Ok(auth)
}

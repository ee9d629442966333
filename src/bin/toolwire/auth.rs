//! Authorization for HTTP servers: the token file, the provider each connection gets,
//! `login`, `logout`, and what `info` says about it.
//!
//! Connections get a provider that never asks anyone ([`NonInteractive`]): a request waits
//! for no user. When a server needs a user's consent, the command says so; when stdin is a
//! terminal (and `--no-login` is not given) it runs `login` itself and goes on. `login`
//! listens on a loopback port for the redirect and opens the browser (`--no-browser` only
//! prints the address; `--headless` reads the redirect's address back from stdin).
//! `--grant client-credentials` (with `--client-id` and a secret) asks no user at all: any
//! command gets its token by the client credentials grant.
//!
//! Tokens are kept in `toolwire/tokens.json` under the user's config folder (or the file
//! `TOOLWIRE_TOKEN_FILE` names), mode 0600, keyed by resource, issuer and client. No output,
//! error, log line or transcript line of the command holds a token, a code or a secret.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use toolwire::auth::{
    AuthStatus, Authorizer, FileTokenStore, Grant, HeadlessAuthorizer, LoopbackAuthorizer,
    MemoryTokenStore, NonInteractive, OAuth, OAuthConfig, TokenStore,
};
use toolwire::config::{OAuthSettings, ServerEntry};
use toolwire::transport::mask_url;

use crate::cli::{AuthOptions, GrantKind};
use crate::target::Target;
use crate::Failure;

/// The environment variable naming the token file (instead of the default).
pub const TOKEN_FILE_VAR: &str = "TOOLWIRE_TOKEN_FILE";
/// The environment variable holding the client secret (as Claude Code reads it).
pub const SECRET_VAR: &str = "MCP_CLIENT_SECRET";

/// What authorizing one HTTP target needs.
pub struct Plan {
    url: String,
    settings: OAuthSettings,
}

/// The HTTP server a target names, with its config entry's OAuth fields; `None` for a stdio
/// target, and for one that sends its own `Authorization` header.
pub fn plan(target: &Target) -> Option<Plan> {
    let (url, headers, settings) = match target {
        Target::Url(http) => (
            http.url().to_owned(),
            http.header_names().map(str::to_owned).collect::<Vec<_>>(),
            OAuthSettings::default(),
        ),
        Target::Config {
            configs, server, ..
        } => match configs.get(server) {
            Some(ServerEntry::Http { url, headers, .. }) => (
                url.clone(),
                headers.iter().map(|(name, _)| name.clone()).collect(),
                configs.oauth(server).cloned().unwrap_or_default(),
            ),
            _ => return None,
        },
        // WebSocket and socket servers: MCP authorization is defined for HTTP only.
        Target::Command(_) | Target::Plain(..) => return None,
    };
    if headers
        .iter()
        .any(|name| name.eq_ignore_ascii_case("authorization"))
    {
        // The user brings a token: OAuth stays out of its way.
        return None;
    }
    Some(Plan { url, settings })
}

/// The token file (`TOOLWIRE_TOKEN_FILE`, else the user's config folder), or memory when
/// there is no config folder.
pub fn store() -> Arc<dyn TokenStore> {
    let path = std::env::var_os(TOKEN_FILE_VAR)
        .filter(|path| !path.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(FileTokenStore::default_path);
    match path {
        Some(path) => Arc::new(FileTokenStore::new(path)),
        None => {
            log::warn!("no config folder (HOME is not set): tokens are kept in memory only");
            Arc::new(MemoryTokenStore::new())
        }
    }
}

/// The provider for `plan`, asking a user (`interactive`) or never.
pub fn provider(
    plan: &Plan,
    options: &AuthOptions,
    interactive: bool,
) -> Result<Arc<OAuth>, Failure> {
    let settings = &plan.settings;
    let mut config = OAuthConfig::default().store(store());
    if let Some(id) = config_client_id(options, settings) {
        config = config.client_id(id);
    }
    let secret = options
        .client_secret
        .clone()
        .or_else(|| {
            std::env::var(SECRET_VAR)
                .ok()
                .filter(|secret| !secret.is_empty())
        })
        .or_else(|| settings.client_secret.clone());
    if options.grant == Some(GrantKind::ClientCredentials) {
        if config_client_id(options, settings).is_none() || secret.is_none() {
            return Err(Failure::usage(format!(
                "--grant client-credentials needs --client-id and a client secret \
                 (--client-secret, or {SECRET_VAR} to keep it out of the process list)"
            )));
        }
        // No user takes part: nothing is asked, opened or read from the terminal.
        config = config.grant(Grant::ClientCredentials);
    }
    if let Some(secret) = secret {
        config = config.client_secret(secret);
    }
    let scopes: Vec<String> = options
        .scopes
        .iter()
        .flat_map(|scope| scope.split_ascii_whitespace().map(str::to_owned))
        .collect();
    if !scopes.is_empty() {
        config = config.scopes(scopes);
    } else if let Some(scopes) = &settings.scopes {
        config = config.scopes(scopes.clone());
    }
    if let Some(url) = &settings.auth_server_metadata_url {
        config = config.server_metadata_url(url.clone());
    }
    let authorizer: Arc<dyn Authorizer> = if !interactive {
        Arc::new(NonInteractive::new(format!(
            "run `toolwire login --url {}` first",
            mask_url(&plan.url)
        )))
    } else if options.headless {
        Arc::new(HeadlessAuthorizer::new().notice(|text| errln!("{text}")))
    } else {
        Arc::new(
            LoopbackAuthorizer::new()
                .port(settings.callback_port.unwrap_or(0))
                .open_browser(!options.no_browser)
                .notice(|text| errln!("{text}")),
        )
    };
    config = config.authorizer(authorizer);
    OAuth::new(plan.url.clone(), config)
        .map(Arc::new)
        .map_err(|error| Failure::from_error("authorization", &error))
}

/// The client id: `--client-id`, else the config entry's.
fn config_client_id(options: &AuthOptions, settings: &OAuthSettings) -> Option<String> {
    options
        .client_id
        .clone()
        .or_else(|| settings.client_id.clone())
}

/// Whether the command may log in by itself: stdin is a terminal and `--no-login` is not
/// given.
pub fn may_prompt(options: &AuthOptions) -> bool {
    !options.no_login && std::io::stdin().is_terminal()
}

/// `login`: the whole flow, now; prints who is authorized until when.
pub fn login(plan: &Plan, options: &AuthOptions, quiet: bool) -> Result<AuthStatus, Failure> {
    let oauth = provider(plan, options, true)?;
    let status = oauth.login().map_err(|error| {
        Failure::from_error(&format!("logging in to {}", mask_url(&plan.url)), &error)
    })?;
    if !quiet {
        errln!(
            "toolwire: logged in to {}: {}",
            mask_url(&plan.url),
            summary(&status)
        );
    }
    Ok(status)
}

/// `logout`: forgets the server's tokens.
pub fn logout(plan: &Plan, options: &AuthOptions) -> Result<usize, Failure> {
    let oauth = provider(plan, options, false)?;
    oauth
        .logout()
        .map_err(|error| Failure::from_error("logging out", &error))
}

/// When, in words: `2026-12-01 23:36:10 UTC (in 59 min)`.
fn when(at: SystemTime) -> String {
    let seconds = at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = crate::civil::civil_from_days(days as i64);
    let now = SystemTime::now();
    let relative = match at.duration_since(now) {
        Ok(ahead) => format!("in {}", in_words(ahead)),
        Err(behind) => format!("{} ago", in_words(behind.duration())),
    };
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC ({relative})",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A token's time left (or past), rounded down the way people say it: `45 s`, `59 min`,
/// `5 h 3 min`, `12 days`.
fn in_words(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds < 120 {
        format!("{seconds} s")
    } else if seconds < 120 * 60 {
        format!("{} min", seconds / 60)
    } else if seconds < 48 * 3600 {
        match (seconds / 3600, seconds % 3600 / 60) {
            (hours, 0) => format!("{hours} h"),
            (hours, minutes) => format!("{hours} h {minutes} min"),
        }
    } else {
        format!("{} days", seconds / 86_400)
    }
}

/// One line: `authorized as alice (Bearer; scopes a b; expires …)`, never the token.
pub fn summary(status: &AuthStatus) -> String {
    if !status.authorized {
        return "not authorized".into();
    }
    let mut text = String::from("authorized");
    if let Some(subject) = &status.subject {
        text.push_str(&format!(" as {subject}"));
    }
    let mut details = Vec::new();
    if let Some(kind) = &status.token_type {
        details.push(kind.clone());
    }
    if !status.scopes.is_empty() {
        details.push(format!("scopes {}", status.scopes.join(" ")));
    }
    details.push(match status.expires_at {
        Some(at) => format!("expires {}", when(at)),
        None => "no expiry given".into(),
    });
    if status.refreshable {
        details.push("refreshable".into());
    }
    format!("{text} ({})", details.join("; "))
}

/// The status as `info --json` shows it.
pub fn status_json(status: &AuthStatus) -> Value {
    json!({
        "authorized": status.authorized,
        "subject": status.subject,
        "expiresAt": status.expires_at.map(|at| at.duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs())),
        "scopes": status.scopes,
        "tokenType": status.token_type,
        "issuer": status.issuer,
        "clientId": status.client_id,
        "refreshable": status.refreshable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_is_said_in_words() {
        let words = |seconds| in_words(Duration::from_secs(seconds));
        assert_eq!(words(45), "45 s");
        assert_eq!(words(3540), "59 min");
        assert_eq!(words(3599), "59 min");
        assert_eq!(words(7200), "2 h");
        assert_eq!(words(5 * 3600 + 3 * 60 + 59), "5 h 3 min");
        assert_eq!(words(12 * 86_400 + 7), "12 days");
        let shown = when(SystemTime::now() + Duration::from_secs(3600));
        assert!(shown.ends_with(" UTC (in 59 min)"), "{shown}");
    }
}

//! `toolwire login`, `logout` and `info` against an in-process server that needs OAuth: the
//! loopback listener takes the redirect (the test plays the browser), the token file is
//! private, later commands use it without asking, and no token, secret, code or verifier is
//! in any output, log line or transcript line.
#![cfg(feature = "cli")]

use crate::support::auth_fake;
use crate::support::cli;

use std::path::Path;

use auth_fake::{FakeAuth, Options};
use cli::{browse, run, scratch, toolwire, Run};

const TOKEN_PREFIX: &str = "PLANTED-ACCESS-TOKEN-";
const CLIENT_SECRET: &str = "PLANTED-CLIENT-SECRET";

fn with_tokens(mut command: std::process::Command, tokens: &Path) -> std::process::Command {
    command
        .env("TOOLWIRE_TOKEN_FILE", tokens)
        .env_remove("MCP_CLIENT_SECRET");
    command
}

/// Runs `toolwire --url URL login --no-browser`, playing the browser for the address it
/// prints.
fn login(url: &str, tokens: &Path) -> Run {
    browse(with_tokens(
        toolwire(&["--url", url, "login", "--no-browser"]),
        tokens,
    ))
}

fn secrets_of(fake: &FakeAuth) -> Vec<String> {
    let world = fake.world.lock().unwrap();
    let mut secrets: Vec<String> = world.tokens.keys().cloned().collect();
    secrets.extend(world.refresh_tokens.keys().cloned());
    for (form, _) in &world.token_requests {
        for field in ["code", "code_verifier", "refresh_token", "client_secret"] {
            if let Some(value) = form.get(field) {
                secrets.push(value.clone());
            }
        }
    }
    secrets.push(TOKEN_PREFIX.into());
    secrets.push(CLIENT_SECRET.into());
    secrets
}

fn assert_hidden(what: &str, text: &str, secrets: &[String]) {
    for secret in secrets {
        assert!(
            !text.contains(secret.as_str()),
            "{what} shows `{secret}`:\n{text}"
        );
    }
}

#[test]
fn login_then_commands_use_the_kept_token_and_never_show_it() {
    let fake = FakeAuth::start(Options {
        token_prefix: TOKEN_PREFIX,
        registered_secret: Some(CLIENT_SECRET),
        auth_methods: vec!["client_secret_post"],
        issue_refresh: true,
        user: Some("alice@example.com"),
        ..Options::default()
    });
    let dir = scratch("auth");
    let tokens = dir.join("config").join("toolwire").join("tokens.json");
    let logged_in = login(&fake.url, &tokens).expect(0);
    assert!(
        logged_in.stderr.contains("logged in to"),
        "{}",
        logged_in.stderr
    );
    assert!(
        logged_in.stderr.contains("alice@example.com"),
        "{}",
        logged_in.stderr
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the token file is the user's alone");
    }
    assert_eq!(fake.authorizations(), 1);

    let info = run(with_tokens(
        toolwire(&["--url", &fake.url, "info"]),
        &tokens,
    ))
    .expect(0);
    assert!(
        info.stdout
            .contains("authorization: authorized as alice@example.com"),
        "{}",
        info.stdout
    );
    assert!(info.stdout.contains("expires 20"), "{}", info.stdout);
    // The token lasts an hour: its time left is said in words, not `3540.00 s`.
    assert!(info.stdout.contains(" UTC (in 59 min)"), "{}", info.stdout);
    let info_json = run(with_tokens(
        toolwire(&["--url", &fake.url, "info", "--json"]),
        &tokens,
    ))
    .expect(0);
    let document: serde_json::Value = serde_json::from_str(&info_json.stdout).unwrap();
    assert_eq!(document["authorization"]["authorized"], true);
    assert!(document["authorization"]["expiresAt"].as_u64().is_some());

    let transcript = dir.join("transcript.jsonl");
    let transcript_arg = transcript.to_str().unwrap();
    let tools = run(with_tokens(
        toolwire(&[
            "--url",
            &fake.url,
            "tools",
            "--json",
            "--log-level",
            "trace",
            "--transcript",
            transcript_arg,
        ]),
        &tokens,
    ))
    .expect(0);
    // The server forgets its tokens: the command refreshes from the file, quietly.
    fake.revoke_all();
    let call = run(with_tokens(
        toolwire(&[
            "--url",
            &fake.url,
            "call",
            "echo",
            "--json",
            "--log-level",
            "debug",
            "--transcript",
            transcript_arg,
        ]),
        &tokens,
    ))
    .expect(0);
    assert!(call.stdout.contains("done"), "{}", call.stdout);
    assert_eq!(fake.authorizations(), 1, "no user was asked again");

    let secrets = secrets_of(&fake);
    assert!(secrets.len() > 4);
    for (what, run) in [
        ("login", &logged_in),
        ("info", &info),
        ("info --json", &info_json),
        ("tools", &tools),
        ("call", &call),
    ] {
        assert_hidden(&format!("{what} stdout"), &run.stdout, &secrets);
        assert_hidden(&format!("{what} stderr"), &run.stderr, &secrets);
    }
    assert_hidden(
        "the transcript",
        &std::fs::read_to_string(&transcript).unwrap(),
        &secrets,
    );

    let logout = run(with_tokens(
        toolwire(&["--url", &fake.url, "logout"]),
        &tokens,
    ))
    .expect(0);
    assert!(
        logout.stderr.contains("1 token(s) forgotten"),
        "{}",
        logout.stderr
    );
    let after = run(with_tokens(
        toolwire(&["--url", &fake.url, "tools"]),
        &tokens,
    ))
    .expect(4);
    assert!(after.stderr.contains("toolwire login"), "{}", after.stderr);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn without_a_terminal_a_server_that_needs_a_user_is_a_clear_error() {
    let fake = FakeAuth::start(Options::default());
    let dir = scratch("auth-none");
    let tokens = dir.join("tokens.json");
    let run = run(with_tokens(
        toolwire(&["--url", &fake.url, "tools"]),
        &tokens,
    ))
    .expect(4);
    assert!(
        run.stderr.contains("needs a user's authorization"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("toolwire login"), "{}", run.stderr);
    assert_eq!(
        (fake.registrations(), fake.authorizations()),
        (0, 0),
        "nothing registered for nobody"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_config_entry_s_oauth_fields_are_used() {
    let fake = FakeAuth::start(Options {
        registration: false,
        auth_methods: vec!["client_secret_post"],
        ..Options::default()
    });
    let dir = scratch("auth-config");
    let tokens = dir.join("tokens.json");
    let config = dir.join(".cursor").join("mcp.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"remote": {"url": fake.url,
            "auth": {"CLIENT_ID": "from-cursor", "CLIENT_SECRET": "${env:CURSOR_SECRET}", "scopes": ["a", "b"]}}}})
        .to_string(),
    )
    .unwrap();
    let mut command = with_tokens(
        toolwire(&[
            "--config",
            config.to_str().unwrap(),
            "login",
            "--no-browser",
        ]),
        &tokens,
    );
    command.env("CURSOR_SECRET", "cursor-secret-value");
    browse(command).expect(0);
    let world = fake.world.lock().unwrap();
    assert_eq!(world.authorizations[0]["client_id"], "from-cursor");
    assert_eq!(world.authorizations[0]["scope"], "a b");
    assert_eq!(
        world.token_requests[0].0["client_secret"],
        "cursor-secret-value"
    );
    drop(world);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn serve_uses_the_tokens_login_kept_and_says_how_to_log_in_without_them() {
    let fake = FakeAuth::start(Options {
        token_prefix: TOKEN_PREFIX,
        ..Options::default()
    });
    let dir = scratch("auth-serve");
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"remote": {"url": fake.url}}}).to_string(),
    )
    .unwrap();
    let serve = |tokens: &Path| {
        let mut command = with_tokens(
            toolwire(&["serve", "--config", config.to_str().unwrap()]),
            tokens,
        );
        // Stdin ends at once: the gateway starts, reports, and stops.
        command.stdin(std::process::Stdio::null());
        run(command).expect(0)
    };
    let without = serve(&dir.join("no-tokens.json"));
    assert!(
        without.stderr.contains(&format!(
            "server \"remote\" is left out: needs authorization: run `toolwire --config {} \
             --server remote login`",
            config.display()
        )),
        "{}",
        without.stderr
    );
    assert_eq!(fake.authorizations(), 0, "serve never asks anyone");
    let tokens = dir.join("tokens.json");
    login(&fake.url, &tokens).expect(0);
    let with = serve(&tokens);
    assert!(!with.stderr.contains("left out"), "{}", with.stderr);
    assert!(with.stderr.contains("serving 1 tool(s)"), "{}", with.stderr);
    assert_hidden("serve", &with.stderr, &secrets_of(&fake));
    assert_hidden("serve", &without.stderr, &secrets_of(&fake));
}

#[test]
fn grant_client_credentials_logs_in_with_no_user_and_keeps_the_token() {
    let fake = FakeAuth::start(Options {
        token_prefix: TOKEN_PREFIX,
        registration: false,
        auth_methods: vec!["client_secret_basic"],
        grant_types: vec!["client_credentials"],
        challenge_scope: Some("mcp:read"),
        ..Options::default()
    });
    let dir = scratch("auth-grant");
    let tokens = dir.join("tokens.json");
    let args = [
        "--url",
        &fake.url,
        "call",
        "echo",
        "--grant",
        "client-credentials",
        "--client-id",
        "svc",
        "--log-level",
        "debug",
    ];
    // Without a secret: a usage error naming what is missing, and nothing sent.
    let missing = run(with_tokens(toolwire(&args), &tokens)).expect(2);
    assert!(
        missing.stderr.contains("--client-secret") && missing.stderr.contains("MCP_CLIENT_SECRET"),
        "{}",
        missing.stderr
    );
    assert_eq!(fake.token_requests(), 0);
    // The secret from the environment: one token request, no user, no registration.
    let mut command = with_tokens(toolwire(&args), &tokens);
    command.env("MCP_CLIENT_SECRET", CLIENT_SECRET);
    let call = run(command).expect(0);
    assert!(call.stdout.contains("done"), "{}", call.stdout);
    {
        let world = fake.world.lock().unwrap();
        assert_eq!(
            (world.authorizations.len(), world.registrations.len()),
            (0, 0)
        );
        assert_eq!(world.token_requests.len(), 1);
        let (form, basic) = &world.token_requests[0];
        assert_eq!(form["grant_type"], "client_credentials");
        // The resource is the metadata's `resource`.
        assert_eq!(form["resource"], fake.url);
        assert_eq!(form["scope"], "mcp:read");
        assert!(basic
            .as_deref()
            .is_some_and(|value| value.starts_with("Basic ")));
        assert!(world.mcp_with_token > 0, "the call carried the token");
    }
    // The token was kept like any login's: the next command (secret or not) uses it.
    let again = run(with_tokens(
        toolwire(&["--url", &fake.url, "info"]),
        &tokens,
    ))
    .expect(0);
    assert!(
        again.stdout.contains("authorization: authorized"),
        "{}",
        again.stdout
    );
    assert_eq!(fake.token_requests(), 1, "the kept token was used");
    // `login` with the grant gets a new token, again without a browser.
    let mut command = with_tokens(
        toolwire(&[
            "--url",
            &fake.url,
            "login",
            "--grant",
            "client-credentials",
            "--client-id",
            "svc",
        ]),
        &tokens,
    );
    command.env("MCP_CLIENT_SECRET", CLIENT_SECRET);
    let login = run(command).expect(0);
    assert!(login.stderr.contains("logged in to"), "{}", login.stderr);
    assert_eq!((fake.token_requests(), fake.authorizations()), (2, 0));
    let secrets = secrets_of(&fake);
    for (what, run) in [("call", &call), ("info", &again), ("login", &login)] {
        assert_hidden(&format!("{what} stdout"), &run.stdout, &secrets);
        assert_hidden(&format!("{what} stderr"), &run.stderr, &secrets);
    }
    let _ = std::fs::remove_dir_all(dir);
}

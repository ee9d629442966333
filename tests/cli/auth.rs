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

/// The token the CLI logged in for, quoted back by the server (in a JSON-RPC error's message
/// and data, and in an `isError` text), and the refresh token an authorization server quotes
/// in its refusal, show nowhere: not on stderr at any log level, not in `--json` output, not
/// in the transcript (issue #22, item 1: the OAuth token).
#[test]
fn a_server_quoting_the_logged_in_token_and_a_refused_refresh_show_them_nowhere() {
    let fake = FakeAuth::start(Options {
        token_prefix: TOKEN_PREFIX,
        issue_refresh: true,
        list_quoting_tools: true,
        ..Options::default()
    });
    let dir = scratch("auth-quoted");
    let tokens = dir.join("tokens.json");
    login(&fake.url, &tokens).expect(0);
    let transcript = dir.join("transcript.jsonl");
    let transcript_arg = transcript.to_str().unwrap();
    let call = |tool: &str, level: &str| {
        run(with_tokens(
            toolwire(&[
                "--url",
                &fake.url,
                "call",
                tool,
                "--json",
                "--log-level",
                level,
                "--transcript",
                transcript_arg,
            ]),
            &tokens,
        ))
    };
    let mut runs = Vec::new();
    for tool in ["quote", "quote_text"] {
        for level in ["warn", "debug", "trace"] {
            let quoted = call(tool, level);
            assert!([1, 4].contains(&quoted.code), "{}", quoted.stderr);
            assert!(
                quoted.stdout.contains("***") || quoted.stderr.contains("***"),
                "the quoted token is not shown masked:\n{}\n{}",
                quoted.stdout,
                quoted.stderr
            );
            // Each run writes its own transcript: the frame quoting the token is in it, masked.
            let recorded = std::fs::read_to_string(&transcript).unwrap();
            assert!(
                recorded.contains("refused ***"),
                "{tool} at {level}: {recorded}"
            );
            runs.push((
                format!("{tool} at {level}: transcript"),
                recorded_run(recorded),
            ));
            runs.push((format!("{tool} at {level}"), quoted));
        }
    }
    // The access tokens are known now; the server forgets them before the refresh.
    let mut secrets = secrets_of(&fake);
    assert!(
        fake.world.lock().unwrap().tokens.len() == 1,
        "one login, one access token"
    );
    // The authorization server refuses the refresh token, quoting it (and the client's
    // form) in its error: the CLI says to log in again and shows none of it.
    fake.set(|options| options.refresh_fails = true);
    fake.revoke_all();
    let refused = call("echo", "trace");
    assert_ne!(refused.code, 0, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("toolwire login"),
        "{}",
        refused.stderr
    );
    secrets.extend(secrets_of(&fake));
    let refresh_forms = fake
        .world
        .lock()
        .unwrap()
        .token_requests
        .iter()
        .filter(|(form, _)| form.get("grant_type").map(String::as_str) == Some("refresh_token"))
        .count();
    assert_eq!(refresh_forms, 1, "the refresh was tried once");
    runs.push(("the refused refresh".into(), refused));
    for (what, run) in &runs {
        assert_hidden(&format!("{what}: stdout"), &run.stdout, &secrets);
        assert_hidden(&format!("{what}: stderr"), &run.stderr, &secrets);
    }
    assert_hidden(
        "the refused refresh's transcript",
        &std::fs::read_to_string(&transcript).unwrap(),
        &secrets,
    );
}

/// A transcript's text as a [`Run`]'s output, to be checked with the runs.
fn recorded_run(recorded: String) -> Run {
    Run {
        code: 0,
        stdout: recorded,
        stderr: String::new(),
        took: std::time::Duration::ZERO,
    }
}

/// `toolwire serve` in front of a server it reaches with the token `toolwire login` kept:
/// the server quotes that token back (a JSON-RPC error, an `isError` text) and the token
/// shows neither in the front client's answers, nor on serve's stderr at the trace level,
/// nor in its transcript (issue #22, item 1: the gateway's backend authorized from the token
/// store).
#[test]
fn serve_shows_the_token_store_s_token_a_backend_quotes_nowhere() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let fake = FakeAuth::start(Options {
        token_prefix: TOKEN_PREFIX,
        list_quoting_tools: true,
        ..Options::default()
    });
    let dir = scratch("auth-serve-quoted");
    let tokens = dir.join("tokens.json");
    login(&fake.url, &tokens).expect(0);
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"remote": {"url": fake.url}}}).to_string(),
    )
    .unwrap();
    let transcript = dir.join("audit.jsonl");
    let mut command = with_tokens(
        toolwire(&["serve", "--config", config.to_str().unwrap()]),
        &tokens,
    );
    command
        .args(["--log-level", "trace", "--transcript"])
        .arg(&transcript)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cli::KillOnDrop(command.spawn().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let mut received = Vec::new();
    let mut ask = |request: serde_json::Value| -> serde_json::Value {
        writeln!(stdin, "{request}").unwrap();
        let Some(id) = request.get("id").cloned() else {
            return serde_json::Value::Null;
        };
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "serve ended");
            received.push(line.clone());
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message.get("id") == Some(&id) {
                return message;
            }
        }
    };
    ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}}}),
    );
    ask(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = ask(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let names: Vec<String> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    let quote = names
        .iter()
        .find(|name| name.ends_with("quote"))
        .unwrap_or_else(|| panic!("no quote tool served: {names:?}"))
        .clone();
    let quote_text = names
        .iter()
        .find(|name| name.ends_with("quote_text"))
        .unwrap_or_else(|| panic!("no quote_text tool served: {names:?}"))
        .clone();
    // The server's JSON-RPC error goes on as a JSON-RPC error (code, message and data), its
    // isError result as a result: each with the token masked.
    let mut call = |id: u64, name: &str| {
        ask(serde_json::json!({"jsonrpc": "2.0", "id": id,
            "method": "tools/call", "params": {"name": name, "arguments": {}}}))
    };
    let answer = call(3, &quote);
    assert_eq!(answer["error"]["message"], "refused ***", "{answer}");
    let answer = call(4, &quote_text);
    assert_eq!(
        answer["result"]["isError"],
        serde_json::json!(true),
        "{answer}"
    );
    drop(stdin);
    assert_eq!(cli::wait_bounded(&mut child, cli::LIMIT), 0);
    let stderr = stderr.join().unwrap();
    // The server's error text was logged for the operator, and its isError text answered,
    // each with the token masked.
    assert!(stderr.contains("refused ***"), "{stderr}");
    assert!(received.concat().contains("refused ***"), "{received:?}");
    let secrets = secrets_of(&fake);
    assert!(
        fake.world.lock().unwrap().mcp_with_token >= 3,
        "the calls reached the server with the token"
    );
    assert_hidden("the host's answers", &received.concat(), &secrets);
    assert_hidden("serve's stderr", &stderr, &secrets);
    assert_hidden(
        "serve's transcript",
        &std::fs::read_to_string(&transcript).unwrap(),
        &secrets,
    );
}

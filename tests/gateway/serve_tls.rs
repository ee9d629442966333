//! `toolwire serve --http` over TLS (`--tls-cert`, `--tls-key`) with a certificate the test
//! makes: the `toolwire` client reaches it with `--ca-cert` and not without; bad certificate
//! or key files, and a protected network address with neither TLS nor a trusted proxy, are
//! refused (exit 2) before anything is bound or any backend starts.
#![cfg(all(feature = "cli", feature = "rustls"))]

use crate::support::cli;
use crate::support::gateway as support;
use crate::support::tls::self_signed;

use serde_json::json;
use sha2::{Digest, Sha256};

/// A scratch folder with a config whose one backend marks that it started, a tokens file for
/// `team-token`, and the test's certificate and key: `(folder, config, tokens, cert, key)`.
fn setup(name: &str, backend: serde_json::Value) -> [String; 5] {
    let folder = cli::scratch(name);
    let config = folder.join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {"one": backend}}).to_string()).unwrap();
    let hash: String = Sha256::digest(b"team-token")
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let tokens = folder.join("tokens.json");
    let file = json!({"tokens": [{"sha256": hash, "subject": "team", "scopes": []}]});
    std::fs::write(&tokens, file.to_string()).unwrap();
    let (cert_pem, key_pem) = self_signed();
    let cert = folder.join("cert.pem");
    let key = folder.join("key.pem");
    std::fs::write(&cert, cert_pem).unwrap();
    std::fs::write(&key, key_pem).unwrap();
    [folder, config, tokens, cert, key].map(|path| path.to_str().unwrap().to_owned())
}

#[test]
fn serve_over_tls_is_reached_with_ca_cert_and_refused_without() {
    let [_, config, tokens, cert, key] = setup("serve-tls", support::tool_server_entry());
    let mut command = cli::toolwire(&[
        "serve",
        "--config",
        &config,
        "--http",
        "127.0.0.1:0",
        "--auth-tokens",
        &tokens,
        "--auth-resource",
        "https://localhost/mcp",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ]);
    command.stdin(std::process::Stdio::null());
    let (mut child, lines) = cli::spawn_with_stderr_lines(command);
    let seen = cli::read_until(&lines, |line| line.contains("listening on "));
    let url = seen
        .last()
        .unwrap()
        .split("listening on ")
        .nth(1)
        .unwrap()
        .trim();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let url = url.replace("127.0.0.1", "localhost");
    let bearer = "Authorization: Bearer team-token";

    let listed =
        cli::run_args(&["--url", &url, "--ca-cert", &cert, "-H", bearer, "tools"]).expect(0);
    assert!(!listed.stdout.trim().is_empty(), "{listed:?}");
    // Without the certificate the built-in roots do not trust it: a transport failure, and
    // the token is never shown.
    let refused = cli::run_args(&["--url", &url, "-H", bearer, "tools"]).expect(4);
    assert!(!refused.stderr.contains("team-token"), "{}", refused.stderr);
    // A --ca-cert that holds no certificate is a usage error.
    let bad =
        cli::run_args(&["--url", &url, "--ca-cert", &tokens, "-H", bearer, "tools"]).expect(2);
    assert!(bad.stderr.contains("certificate"), "{}", bad.stderr);
    cli::sigint(child.id());
    assert_eq!(cli::wait_bounded(&mut child, crate::support::LONG), 0);
}

#[test]
fn bad_tls_files_and_tokens_in_clear_on_the_network_are_refused_before_anything_starts() {
    let [folder, _, tokens, cert, key] = setup("serve-tls-refused", json!({}));
    let marker = format!("{folder}/started");
    let config = format!("{folder}/marking.json");
    let entry = json!({"command": "sh", "args": ["-c", format!("touch '{marker}'")]});
    std::fs::write(&config, json!({"mcpServers": {"one": entry}}).to_string()).unwrap();
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--config", &config, "--http"];
        args.extend_from_slice(extra);
        cli::run_args(&args).expect(2)
    };
    let auth = [
        "--auth-tokens",
        &tokens,
        "--auth-resource",
        "https://mcp.example/mcp",
    ];

    // A key that is not one, a certificate file that is missing.
    let mut args = vec!["127.0.0.1:0", "--tls-cert", &cert, "--tls-key", &cert];
    let run = serve(&args);
    assert!(
        run.stderr.contains(&cert) && run.stderr.contains("private key"),
        "{}",
        run.stderr
    );
    let missing = format!("{folder}/missing.pem");
    args = vec!["127.0.0.1:0", "--tls-cert", &missing, "--tls-key", &key];
    let run = serve(&args);
    assert!(run.stderr.contains(&missing), "{}", run.stderr);
    // One without the other.
    let run = serve(&["127.0.0.1:0", "--tls-cert", &cert]);
    assert!(run.stderr.contains("--tls-key"), "{}", run.stderr);
    // Protected on the network, but its tokens would cross it in clear.
    let mut args = vec!["0.0.0.0:0"];
    args.extend_from_slice(&auth);
    let run = serve(&args);
    for flag in ["--tls-cert", "--tls-key", "--trusted-proxy"] {
        assert!(run.stderr.contains(flag), "{flag}: {}", run.stderr);
    }
    assert!(
        !std::path::Path::new(&marker).exists(),
        "no backend was started"
    );
}

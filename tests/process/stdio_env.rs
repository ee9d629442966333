//! The child's environment and working directory: only HOME LOGNAME PATH SHELL TERM USER and
//! the configured variables reach it, unless `inherit_env` is set; `cwd` is honoured.

use crate::support as common;

use serde_json::{json, Value};
use toolwire::mcp::McpDialect;
use toolwire::transport::DEFAULT_INHERITED_ENV;
use toolwire::{Client, ClientConfig, StdioConfig};

/// A variable of this process only (the tests of the `process` binary are serialized; no other
/// binary shares our environment).
fn secret_name() -> String {
    format!("TOOLWIRE_TEST_SECRET_{}", std::process::id())
}

fn env_of(client: &Client, name: &str) -> Value {
    client.call("env", json!({"name": name})).expect("env")
}

fn with_client(config: StdioConfig, check: impl FnOnce(&Client)) {
    let (client, _transport) =
        common::shared_stdio_client(config, ClientConfig::default().dialect(McpDialect));
    check(&client);
    common::close_and_check(&client);
    common::assert_no_client_threads();
}

#[test]
fn only_the_default_variables_and_configured_ones_reach_the_child() {
    let _serial = common::serial();
    let secret = secret_name();
    std::env::set_var(&secret, "must-not-leak");
    std::env::set_var("TOOLWIRE_TEST_OVERRIDDEN", "from-parent");
    let config = common::tool_server_config(&[])
        .env("TOOLWIRE_TEST_CONFIGURED", "configured value")
        .env("TOOLWIRE_TEST_OVERRIDDEN", "from-config");
    with_client(config, |client| {
        assert_eq!(env_of(client, &secret), Value::Null, "our variable leaked");
        assert_eq!(
            env_of(client, "TOOLWIRE_TEST_CONFIGURED"),
            json!("configured value")
        );
        assert_eq!(
            env_of(client, "TOOLWIRE_TEST_OVERRIDDEN"),
            json!("from-config")
        );
        // The default list passes through with our values, and only when we have them.
        for name in DEFAULT_INHERITED_ENV {
            let ours = std::env::var(name).ok();
            assert_eq!(env_of(client, name), json!(ours), "{name}");
        }
        // Nor are the variables cargo sets when it runs tests.
        if std::env::var_os("CARGO_PKG_NAME").is_some() {
            assert_eq!(env_of(client, "CARGO_PKG_NAME"), Value::Null);
        }
    });
    std::env::remove_var(&secret);
    std::env::remove_var("TOOLWIRE_TEST_OVERRIDDEN");
}

#[test]
fn inherit_env_passes_our_whole_environment_and_config_still_wins() {
    let _serial = common::serial();
    let secret = secret_name();
    std::env::set_var(&secret, "inherited");
    std::env::set_var("TOOLWIRE_TEST_OVERRIDDEN", "from-parent");
    let mut config = common::tool_server_config(&[]).env("TOOLWIRE_TEST_OVERRIDDEN", "from-config");
    config = config.inherit_env(true);
    with_client(config, |client| {
        assert_eq!(env_of(client, &secret), json!("inherited"));
        assert_eq!(
            env_of(client, "TOOLWIRE_TEST_OVERRIDDEN"),
            json!("from-config")
        );
        if let Ok(package) = std::env::var("CARGO_PKG_NAME") {
            assert_eq!(env_of(client, "CARGO_PKG_NAME"), json!(package));
        }
    });
    std::env::remove_var(&secret);
    std::env::remove_var("TOOLWIRE_TEST_OVERRIDDEN");
}

#[test]
fn the_working_directory_is_ours_by_default_and_the_configured_one_when_set() {
    let _serial = common::serial();
    let ours = std::env::current_dir().unwrap().canonicalize().unwrap();
    with_client(common::tool_server_config(&[]), |client| {
        assert_eq!(
            client.call("cwd", json!({})).unwrap(),
            json!(ours.to_str().unwrap())
        );
    });

    let dir = std::env::temp_dir().join(format!("toolwire-stdio-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    assert_ne!(dir, ours);
    with_client(common::tool_server_config(&[]).cwd(&dir), |client| {
        assert_eq!(
            client.call("cwd", json!({})).unwrap(),
            json!(dir.to_str().unwrap())
        );
    });
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn a_program_that_cannot_start_is_a_spawn_error() {
    let _serial = common::serial();
    let missing = "/nonexistent/toolwire-no-such-program";
    match toolwire::transport::StdioTransport::spawn(StdioConfig::new(missing)) {
        Err(toolwire::Error::Spawn { command, source }) => {
            assert_eq!(command, missing);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        Err(other) => panic!("expected a spawn error, got {other:?}"),
        Ok(_) => panic!("a missing program started"),
    }
    let bad_cwd = common::tool_server_config(&[]).cwd("/nonexistent/toolwire-no-such-dir");
    assert!(matches!(
        toolwire::transport::StdioTransport::spawn(bad_cwd),
        Err(toolwire::Error::Spawn { .. })
    ));
    common::assert_no_client_threads();
}

//! One bad or unsupported entry of a config file need not cost the others: with
//! `LoadOptions::skip_bad_entries` it is left out with its error and every other entry is
//! read as before; without it the first one fails the file. Also the JSON pointer
//! `servers_at` (Claude Code's project entries of `~/.claude.json`) and the hosts' places.

use std::path::Path;

use toolwire::config::{host_configs, ConfigFormat, HostScope, LoadOptions, ServerEntry};
use toolwire::{Error, ServerConfigs};

/// Options that see only the given variables, never the test process's environment.
fn isolated() -> LoadOptions {
    LoadOptions::new()
        .process_env(false)
        .format(ConfigFormat::ClaudeCode)
}

/// Four entries: one good, one with an unset `${VAR}`, one of a type nobody knows, one that is
/// not an object.
const MIXED: &str = r#"{"mcpServers": {
    "good": {"command": "server", "args": ["--stdio"]},
    "unset": {"command": "server", "env": {"TOKEN": "${NOT_SET_ANYWHERE}"}},
    "future": {"type": "carrier-pigeon", "url": "http://127.0.0.1:1/mcp"},
    "broken": 42,
    "remote": {"type": "http", "url": "http://127.0.0.1:1/mcp"}
}}"#;

#[test]
fn without_the_option_the_first_bad_entry_fails_the_file() {
    match ServerConfigs::parse(MIXED, &isolated()) {
        Err(Error::Config(message)) => {
            assert!(
                message.starts_with("config text: server `broken`"),
                "{message}"
            )
        }
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn bad_entries_are_left_out_with_their_errors_and_the_others_stay_usable() {
    let configs = ServerConfigs::parse(MIXED, &isolated().skip_bad_entries(true)).unwrap();
    assert_eq!(configs.names().collect::<Vec<_>>(), ["good", "remote"]);
    let rejected: Vec<(&str, &str)> = configs.rejected().collect();
    assert_eq!(
        rejected.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        ["broken", "future", "unset"]
    );
    let reason = |name: &str| {
        rejected
            .iter()
            .find(|(rejected, _)| *rejected == name)
            .map(|(_, reason)| *reason)
            .unwrap()
    };
    assert!(
        reason("unset").starts_with("config text: server `unset`, field `env.TOKEN`: "),
        "{}",
        reason("unset")
    );
    assert!(
        reason("unset").contains("`${NOT_SET_ANYWHERE}` is not set"),
        "{}",
        reason("unset")
    );
    assert!(
        reason("future").contains("field `type`: \"carrier-pigeon\" is not one of"),
        "{}",
        reason("future")
    );
    assert!(
        reason("broken").contains("the entry must be an object"),
        "{}",
        reason("broken")
    );
    // The good entries are what they would be alone.
    match configs.get("good") {
        Some(ServerEntry::Stdio(stdio)) => assert_eq!(stdio.command_line(), "server --stdio"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        configs.get("remote"),
        Some(ServerEntry::Http { .. })
    ));
    // A rejected entry is not there to connect to, and says why.
    assert!(configs.get("unset").is_none());
    match configs.connector("unset") {
        Err(Error::Config(message)) => assert!(message.contains("NOT_SET_ANYWHERE"), "{message}"),
        Err(other) => panic!("expected a config error, got {other}"),
        Ok(_) => panic!("a rejected entry gave a connector"),
    }
}

#[test]
fn a_broken_document_fails_whatever_the_option() {
    let options = isolated().skip_bad_entries(true);
    for (text, wanted) in [
        ("{not json", "not valid JSON"),
        (
            r#"{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}"#,
            "duplicate key",
        ),
        (r#"{"mcpServers": []}"#, "must be an object of servers"),
    ] {
        match ServerConfigs::parse(text, &options) {
            Err(Error::Config(message)) => assert!(message.contains(wanted), "{message}"),
            other => panic!("{text}: expected a config error, got {other:?}"),
        }
    }
}

#[test]
fn servers_can_be_read_at_a_json_pointer() {
    let text = r#"{"mcpServers": {"everywhere": {"command": "a"}},
                   "projects": {"/work/app": {"mcpServers": {"here": {"command": "b"}}}}}"#;
    let local = ServerConfigs::parse(
        text,
        &isolated().servers_at("/projects/~1work~1app/mcpServers"),
    )
    .unwrap();
    assert_eq!(local.names().collect::<Vec<_>>(), ["here"]);
    let user = ServerConfigs::parse(text, &isolated()).unwrap();
    assert_eq!(user.names().collect::<Vec<_>>(), ["everywhere"]);
    // Nothing at the pointer: no servers, not an error.
    let none = ServerConfigs::parse(
        text,
        &isolated().servers_at("/projects/~1elsewhere/mcpServers"),
    )
    .unwrap();
    assert_eq!(none.names().count(), 0);
}

#[test]
fn the_hosts_places_come_project_first_then_user() {
    let folder = Path::new("/work/app");
    let places = host_configs(folder);
    // The project's files, whatever the environment.
    assert_eq!(places[0].path, folder.join(".mcp.json"));
    assert_eq!(places[0].format, ConfigFormat::ClaudeCode);
    assert_eq!(places[1].path, folder.join(".cursor/mcp.json"));
    assert_eq!(places[1].format, ConfigFormat::Cursor);
    assert_eq!(places[2].path, folder.join(".vscode/mcp.json"));
    assert_eq!(places[2].format, ConfigFormat::VsCode);
    assert!(places[..3]
        .iter()
        .all(|place| place.scope == HostScope::Project));
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let home = Path::new(&home);
    let local = &places[3];
    assert_eq!(local.path, home.join(".claude.json"));
    assert_eq!(local.scope, HostScope::Local);
    assert_eq!(
        local.servers_at.as_deref(),
        Some("/projects/~1work~1app/mcpServers")
    );
    assert_eq!(places[4].scope, HostScope::User);
    assert_eq!(places[4].servers_at, None);
    assert_eq!(places[5].path, home.join(".cursor/mcp.json"));
    #[cfg(target_os = "linux")]
    {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|value| !value.is_empty())
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| home.join(".config"));
        assert_eq!(places[6].path, base.join("Code/User/mcp.json"));
        assert_eq!(places[6].format, ConfigFormat::VsCode);
        assert_eq!(
            places[7].path,
            base.join("Claude/claude_desktop_config.json")
        );
        assert_eq!(places[7].format, ConfigFormat::ClaudeDesktop);
    }
}

//! The config files people have: a bad or unsupported entry is skipped and marked while the
//! others stay usable; without `--config` the hosts' places are searched (the project's files,
//! then Claude Code's, Cursor's, VS Code's and Claude Desktop's user files) and `servers` says
//! which file it read; one environment policy for `-- COMMAND` and config entries.
#![cfg(feature = "cli")]

use crate::support::cli;

use std::path::Path;

use cli::{assert_in_order, run, run_args, scratch, tool_server, toolwire, with_home};
use serde_json::{json, Value};

fn write(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
}

#[test]
fn bad_entries_are_skipped_and_marked_and_the_others_stay_usable() {
    let dir = scratch("skipped");
    let file = dir.join(".mcp.json");
    let server = tool_server();
    write(
        &file,
        &json!({"mcpServers": {
            "good": {"command": server},
            "unset": {"command": server, "env": {"TOKEN": "${TOOLWIRE_TEST_NEVER_SET}"}},
            "future": {"type": "carrier-pigeon", "url": "http://127.0.0.1:1/mcp"},
            "broken": {"command": 42}
        }}),
    );
    let path = file.to_str().unwrap();
    let listed = run_args(&["servers", "--config", path]).expect(0);
    assert_in_order(
        &listed.stdout,
        &[
            "(Claude Code format, 1 server, 3 skipped)",
            "NAME",
            "broken",
            "SKIPPED",
            "field `command`: must be a string",
            "future",
            "SKIPPED",
            "field `type`",
            "good",
            "stdio",
            "unset",
            "SKIPPED",
            "`${TOOLWIRE_TEST_NEVER_SET}` is not set",
        ],
    );
    let listed = run_args(&["servers", "--config", path, "--json"]).expect(0);
    let document: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(document["servers"][0]["name"], "good");
    let skipped: Vec<&str> = document["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, ["broken", "future", "unset"]);

    // The only usable server is chosen without --server, and works.
    let called = run_args(&["call", "echo", "message=still here", "--config", path]).expect(0);
    assert_eq!(called.stdout, "still here\n");
    // A skipped entry named is a usage error with its reason.
    let named = run_args(&["ping", "--config", path, "--server", "unset"]).expect(2);
    assert!(
        named.stderr.contains("cannot be used (it was skipped)")
            && named.stderr.contains("TOOLWIRE_TEST_NEVER_SET"),
        "{}",
        named.stderr
    );
}

#[test]
fn the_hosts_places_are_searched_in_order_and_servers_says_which_file() {
    let root = scratch("hosts");
    let home = root.join("home");
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    let server = tool_server();
    let entry = json!({"command": server});
    // Claude Code's ~/.claude.json: this folder's own entries, and the user's.
    write(
        &home.join(".claude.json"),
        &json!({"numStartups": 3,
                "projects": {project.to_str().unwrap(): {"mcpServers": {"local": entry}}},
                "mcpServers": {"user": entry}}),
    );
    write(
        &home.join(".cursor/mcp.json"),
        &json!({"mcpServers": {"cursor": entry}}),
    );
    write(
        &home.join(".config/Code/User/mcp.json"),
        &json!({"servers": {"vscode": {"type": "stdio", "command": server}}}),
    );
    write(
        &home.join(".config/Claude/claude_desktop_config.json"),
        &json!({"mcpServers": {"desktop": entry}}),
    );
    let in_project = |args: &[&str]| {
        let mut command = toolwire(args);
        command.current_dir(&project);
        with_home(&mut command, &home);
        run(command)
    };

    // No project file: Claude Code's local scope comes first.
    let listed = in_project(&["servers"]).expect(0);
    assert_in_order(
        &listed.stdout,
        &[
            ".claude.json (Claude Code format, 1 server)",
            "read because no --config was given",
            "(Claude Code local scope)",
            "local",
            "stdio",
            "also found: ",
            ".claude.json (Claude Code, user scope) with user",
            "also found: ",
            ".cursor/mcp.json (Cursor, user scope) with cursor",
            "also found: ",
            "Code/User/mcp.json (VS Code, user scope) with vscode",
            "also found: ",
            "claude_desktop_config.json (Claude Desktop, user scope) with desktop",
        ],
    );
    let document: Value =
        serde_json::from_str(&in_project(&["servers", "--json"]).expect(0).stdout).unwrap();
    assert_eq!(document["scope"], "local");
    assert_eq!(document["others"].as_array().unwrap().len(), 4);
    // --server finds a server in any of the places.
    for name in ["local", "user", "cursor", "vscode", "desktop"] {
        let called = in_project(&["call", "echo", &format!("message={name}"), "-s", name]);
        assert_eq!(called.expect(0).stdout, format!("{name}\n"));
    }
    let missing = in_project(&["ping", "-s", "nowhere"]).expect(2);
    assert!(
        missing.stderr.contains("no server named `nowhere`"),
        "{}",
        missing.stderr
    );

    // A project file comes before the user's files; a place whose document is broken is
    // skipped with a warning.
    write(
        &project.join(".cursor/mcp.json"),
        &json!({"mcpServers": {"shared": entry}}),
    );
    std::fs::write(project.join(".mcp.json"), "{ not json").unwrap();
    let listed = in_project(&["servers"]).expect(0);
    assert!(
        listed.stdout.starts_with(&format!(
            "{} (Cursor format, 1 server)",
            project.join(".cursor/mcp.json").display()
        )),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stderr.contains("warning: skipping")
            && listed
                .stderr
                .contains(".mcp.json (Claude Code, project scope)"),
        "{}",
        listed.stderr
    );
    in_project(&["ping"]).expect(0);
}

/// A server that starts only when `TOOLWIRE_CLI_POLICY` reached it.
fn guarded_server() -> Vec<String> {
    let script = format!(
        "test \"$TOOLWIRE_CLI_POLICY\" = yes && exec {}",
        tool_server().display()
    );
    vec!["/bin/sh".into(), "-c".into(), script]
}

#[test]
fn one_environment_policy_for_commands_and_config_entries() {
    let dir = scratch("policy");
    let guarded = guarded_server();
    let file = dir.join("servers.json");
    write(
        &file,
        &json!({"mcpServers": {"s": {"command": guarded[0], "args": guarded[1..]}}}),
    );
    let config = file.to_str().unwrap();
    let ping = |extra: &[&str], command: bool| {
        let mut args = vec!["ping"];
        args.extend_from_slice(extra);
        if command {
            args.push("--");
            args.extend(guarded.iter().map(String::as_str));
        } else {
            args.extend(["--config", config]);
        }
        let mut command = toolwire(&args);
        command.env("TOOLWIRE_CLI_POLICY", "yes");
        run(command)
    };
    for from_command in [true, false] {
        // Our variable does not reach the server by default...
        ping(&[], from_command).expect(4);
        // ...but does with --inherit-env.
        ping(&["--inherit-env"], from_command).expect(0);
    }
    // The default set does reach it: PATH finds `sh`'s commands, HOME is passed.
    let script = format!(
        "test -n \"$HOME\" && test -n \"$PATH\" && exec {}",
        tool_server().display()
    );
    run_args(&["ping", "--", "/bin/sh", "-c", &script]).expect(0);
}

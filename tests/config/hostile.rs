//! Config files a cloned repository can ship, read as data and never trusted further: a FIFO
//! or a device (or a symlink to one) where a config or `envFile` should be, a file past the
//! size bound, an environment name the OS cannot take, a key written twice, and
//! `${workspaceFolder}` for a config named by a relative path.
//!
//! "Promptly" is proven by structure: the load runs on its own thread and the test waits on a
//! channel, with a hang guard far longer than any load takes; no test asserts an upper bound
//! on elapsed time.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use toolwire::config::{ConfigFormat, LoadOptions, ServerEntry};
use toolwire::{Error, ServerConfigs};

/// Only keeps a broken test (a load that blocks) from hanging the suite.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// The default bounds, as documented on `LoadOptions`.
const DEFAULT_MAX_CONFIG_BYTES: usize = 1024 * 1024;
const DEFAULT_MAX_ENV_FILE_BYTES: usize = 256 * 1024;

/// A fresh, empty folder in the temporary directory.
fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolwire-config-{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Options that see only the given variables, never the test process's environment.
fn isolated() -> LoadOptions {
    LoadOptions::new().process_env(false)
}

/// Runs `load` on its own thread and waits for it, failing the test past [`HANG_GUARD`].
fn promptly<T: Send + 'static>(load: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    std::thread::Builder::new()
        .name("config-load".into())
        .spawn(move || {
            let _ = done.send(load());
        })
        .expect("spawn the load thread");
    match finished.recv_timeout(HANG_GUARD) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("the load did not return within {HANG_GUARD:?}: it blocks")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the load thread panicked"),
    }
}

/// Loads `path` on its own thread; the config error's text.
fn load_error(path: &Path, options: LoadOptions) -> String {
    let path = path.to_path_buf();
    match promptly(move || ServerConfigs::load_with(path, options)) {
        Err(Error::Config(message)) => message,
        Err(other) => panic!("expected a config error, got {other:?}"),
        Ok(configs) => panic!("expected an error, got {configs:?}"),
    }
}

fn parse_error(text: &str, options: &LoadOptions) -> String {
    match ServerConfigs::parse(text, options) {
        Err(Error::Config(message)) => message,
        Err(other) => panic!("expected a config error, got {other:?}"),
        Ok(configs) => panic!("expected an error, got {configs:?}"),
    }
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A VS Code workspace in a scratch folder whose one server reads `env_file` (relative to the
/// workspace) through `envFile`; the path of its `.vscode/mcp.json`.
fn vscode_workspace(name: &str, env_file: &str) -> PathBuf {
    let root = scratch(name);
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    let config = root.join(".vscode/mcp.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"servers": {{"s": {{"type": "stdio", "command": "x",
                 "envFile": "${{workspaceFolder}}/{env_file}"}}}}}}"#
        ),
    )
    .unwrap();
    config
}

// ---- config files are data, not devices ----

#[cfg(unix)]
#[test]
fn a_fifo_named_as_the_config_file_is_refused_promptly() {
    let dir = scratch("fifo-config");
    let fifo = dir.join(".mcp.json");
    mkfifo(&fifo);
    // Nobody ever writes to the FIFO: a reader that opened it for reading would wait forever.
    let message = load_error(&fifo, isolated());
    assert!(message.contains(&fifo.display().to_string()), "{message}");
    assert!(
        message.contains("is a FIFO, not a regular file"),
        "{message}"
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_named_as_the_env_file_is_refused_promptly() {
    let config = vscode_workspace("fifo-env", ".env");
    let fifo = config.parent().unwrap().parent().unwrap().join(".env");
    mkfifo(&fifo);
    let message = load_error(&config, isolated());
    assert!(message.contains("server `s`, field `envFile`"), "{message}");
    assert!(message.contains(&fifo.display().to_string()), "{message}");
    assert!(
        message.contains("is a FIFO, not a regular file"),
        "{message}"
    );
}

#[cfg(unix)]
#[test]
fn dev_zero_as_the_config_file_is_refused_not_read() {
    let message = load_error(Path::new("/dev/zero"), isolated());
    assert!(
        message.contains("/dev/zero is a character device, not a regular file"),
        "{message}"
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_to_dev_zero_shipped_as_the_config_file_is_refused() {
    let dir = scratch("zero-link-config");
    std::fs::create_dir_all(dir.join(".vscode")).unwrap();
    let link = dir.join(".vscode/mcp.json");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let message = load_error(&link, isolated());
    assert!(message.contains(&link.display().to_string()), "{message}");
    assert!(
        message.contains("is a character device, not a regular file"),
        "{message}"
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_to_dev_zero_shipped_as_the_env_file_is_refused() {
    let config = vscode_workspace("zero-link-env", ".env");
    let link = config.parent().unwrap().parent().unwrap().join(".env");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let message = load_error(&config, isolated());
    assert!(message.contains("server `s`, field `envFile`"), "{message}");
    assert!(
        message.contains("is a character device, not a regular file"),
        "{message}"
    );
}

#[test]
fn a_directory_named_as_the_config_file_is_refused() {
    let dir = scratch("dir-config");
    let message = load_error(&dir, isolated());
    assert!(
        message.contains("is a directory, not a regular file"),
        "{message}"
    );
}

#[test]
fn a_config_file_past_the_default_bound_is_refused() {
    let dir = scratch("big-config");
    let path = dir.join(".mcp.json");
    // Valid JSON padded with whitespace: only its size is wrong.
    let mut text = String::from(r#"{"mcpServers": {"s": {"command": "x"}}}"#);
    text.push_str(&" ".repeat(DEFAULT_MAX_CONFIG_BYTES + 1 - text.len()));
    std::fs::write(&path, &text).unwrap();
    let message = load_error(&path, isolated());
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains(&format!(
            "more than the limit of {DEFAULT_MAX_CONFIG_BYTES} bytes"
        )),
        "{message}"
    );

    // At the bound exactly it is read.
    text.pop();
    std::fs::write(&path, &text).unwrap();
    let configs = ServerConfigs::load_with(&path, isolated()).unwrap();
    assert_eq!(configs.names().collect::<Vec<_>>(), ["s"]);
}

#[test]
fn an_env_file_past_the_default_bound_is_refused() {
    let config = vscode_workspace("big-env", ".env");
    let env = config.parent().unwrap().parent().unwrap().join(".env");
    let mut text = String::from("A=1\n");
    text.push_str(&"#".repeat(DEFAULT_MAX_ENV_FILE_BYTES + 1 - text.len()));
    std::fs::write(&env, &text).unwrap();
    let message = load_error(&config, isolated());
    assert!(message.contains("server `s`, field `envFile`"), "{message}");
    assert!(
        message.contains(&format!(
            "more than the limit of {DEFAULT_MAX_ENV_FILE_BYTES} bytes"
        )),
        "{message}"
    );

    text.pop();
    std::fs::write(&env, &text).unwrap();
    let configs = ServerConfigs::load_with(&config, isolated()).unwrap();
    let Some(ServerEntry::Stdio(stdio)) = configs.get("s") else {
        panic!("{configs:?}");
    };
    assert_eq!(
        stdio.get_envs().get(&OsString::from("A")),
        Some(&OsString::from("1"))
    );
}

#[test]
fn the_bounds_are_settings() {
    let config = vscode_workspace("bounds", ".env");
    let env = config.parent().unwrap().parent().unwrap().join(".env");
    std::fs::write(&env, "A=123456\n").unwrap();
    let size = std::fs::metadata(&config).unwrap().len() as usize;
    assert!(ServerConfigs::load_with(&config, isolated().max_env_file_bytes(9)).is_ok());
    let message = load_error(&config, isolated().max_env_file_bytes(8));
    assert!(
        message.contains(
            "is 9 bytes, more than the limit of 8 bytes (LoadOptions::max_env_file_bytes)"
        ),
        "{message}"
    );
    let message = load_error(&config, isolated().max_config_bytes(size - 1));
    assert!(
        message.contains(&format!(
            "is {size} bytes, more than the limit of {} bytes (LoadOptions::max_config_bytes)",
            size - 1
        )),
        "{message}"
    );
}

// ---- environment names must be valid ----

#[test]
fn an_env_name_that_is_empty_or_holds_equals_or_nul_names_server_and_variable() {
    let options = isolated().format(ConfigFormat::ClaudeCode);
    let cases = [
        (r#""": "v""#, "field `env`", "a variable name is empty"),
        (r#""A=B": "v""#, "field `env`", r#""A=B" holds `=`"#),
        (
            r#""A\u0000B": "v""#,
            "field `env`",
            r#""A\0B" holds a NUL byte"#,
        ),
        (
            r#""GOOD": "a\u0000b""#,
            "field `env.GOOD`",
            r#"the value of "GOOD" holds a NUL byte"#,
        ),
    ];
    for (env, field, problem) in cases {
        let text = format!(r#"{{"mcpServers": {{"srv": {{"command": "x", "env": {{{env}}}}}}}}}"#);
        let message = parse_error(&text, &options);
        assert!(
            message.starts_with("config text: server `srv`, "),
            "{env}: {message}"
        );
        assert!(message.contains(field), "{env}: {message}");
        assert!(message.contains(problem), "{env}: {message}");
    }
}

#[test]
fn an_expanded_env_value_holding_nul_is_refused() {
    let options = isolated()
        .format(ConfigFormat::ClaudeCode)
        .var("SECRET", "a\0b");
    let message = parse_error(
        r#"{"mcpServers": {"srv": {"command": "x", "env": {"TOKEN": "${SECRET}"}}}}"#,
        &options,
    );
    assert!(
        message.contains("server `srv`, field `env.TOKEN`"),
        "{message}"
    );
    assert!(message.contains("NUL"), "{message}");
}

#[test]
fn an_env_file_name_that_is_empty_or_holds_nul_names_server_line_and_variable() {
    let cases: [(&[u8], &str, &str); 3] = [
        (b"=value\n", "line 1", "empty"),
        (b"OK=1\nA\0B=v\n", "line 2", "NUL"),
        (b"OK=1\n\nVALUE=a\0b\n", "line 3", "NUL"),
    ];
    for (contents, line, problem) in cases {
        let config = vscode_workspace("env-names", ".env");
        let env = config.parent().unwrap().parent().unwrap().join(".env");
        std::fs::write(&env, contents).unwrap();
        let message = load_error(&config, isolated());
        let shown = String::from_utf8_lossy(contents);
        assert!(
            message.contains("server `s`, field `envFile`"),
            "{shown:?}: {message}"
        );
        assert!(
            message.contains(&format!("{} {line}", env.display())),
            "{shown:?}: {message}"
        );
        assert!(message.contains(problem), "{shown:?}: {message}");
    }
}

// ---- a repeated key is an error, not last-wins ----

#[test]
fn a_server_name_twice_is_an_error_naming_it_and_where() {
    let message = parse_error(
        r#"{"mcpServers": {"a": {"command": "x"}, "a": {"url": "http://y"}}}"#,
        &isolated(),
    );
    assert!(
        message.starts_with(r#"config text: duplicate key "a" in the object at /mcpServers"#),
        "{message}"
    );
    assert!(message.contains("line 1 column"), "{message}");
}

#[test]
fn a_field_twice_in_one_entry_is_an_error_naming_it_and_where() {
    let text = "{\"servers\": {\"s\": {\"type\": \"stdio\",\n  \"command\": \"safe\",\n  \"command\": \"rm\"}}}";
    let message = parse_error(text, &isolated().format(ConfigFormat::VsCode));
    assert!(
        message.contains(r#"duplicate key "command" in the object at /servers/s at line 3"#),
        "{message}"
    );
}

#[test]
fn a_repeated_key_anywhere_in_a_file_names_the_file() {
    let dir = scratch("repeated");
    let path = dir.join("claude_desktop_config.json");
    std::fs::write(
        &path,
        r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "1", "K": "2"}}}}"#,
    )
    .unwrap();
    let message = load_error(&path, isolated());
    assert!(
        message.starts_with(&format!(
            "{}: duplicate key \"K\" in the object at /mcpServers/a/env",
            path.display()
        )),
        "{message}"
    );

    // Outside the server list too: the whole document is read strictly.
    let message = parse_error(
        r#"{"mcpServers": {}, "mcpServers": {"a": {"command": "x"}}}"#,
        &isolated(),
    );
    assert!(
        message.contains(r#"duplicate key "mcpServers" in the object at (root)"#),
        "{message}"
    );
}

#[test]
fn an_integer_outside_64_bits_is_refused_by_name() {
    let message = parse_error(
        r#"{"mcpServers": {"a": {"command": "x", "timeout": 123456789012345678901}}}"#,
        &isolated(),
    );
    assert!(
        message.contains("the integer 123456789012345678901 at /mcpServers/a/timeout"),
        "{message}"
    );
}

// ---- ${workspaceFolder} for a relative config path ----

/// Set in the child run of [`relative_vscode_config_resolves_the_workspace_from_its_real_place`].
const CHILD: &str = "TOOLWIRE_TEST_RELATIVE_CONFIG_CHILD";

#[test]
fn relative_vscode_config_resolves_the_workspace_from_its_real_place() {
    if std::env::var_os(CHILD).is_some() {
        // The child, started in the project's root: the path is relative to it.
        let configs = ServerConfigs::load_with(".vscode/mcp.json", isolated()).unwrap();
        let Some(ServerEntry::Stdio(stdio)) = configs.get("s") else {
            panic!("{configs:?}");
        };
        let root = std::env::current_dir().unwrap().canonicalize().unwrap();
        let env = |key: &str| {
            stdio
                .get_envs()
                .get(&OsString::from(key))
                .map(|value| value.to_string_lossy().into_owned())
        };
        assert_eq!(env("FROM_FILE").as_deref(), Some("yes"), "{stdio:?}");
        assert_eq!(
            env("DATA"),
            Some(format!("{}/data.json", root.display())),
            "{stdio:?}"
        );
        return;
    }
    let root = scratch("relative");
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    std::fs::write(root.join(".env"), "FROM_FILE=yes\n").unwrap();
    std::fs::write(
        root.join(".vscode/mcp.json"),
        r#"{"servers": {"s": {"type": "stdio", "command": "x",
             "envFile": "${workspaceFolder}/.env",
             "env": {"DATA": "${workspaceFolder}/data.json"}}}}"#,
    )
    .unwrap();
    // The working directory changes only in a child process: this binary runs its tests on
    // many threads.
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            crate::support::test_name(
                module_path!(),
                "relative_vscode_config_resolves_the_workspace_from_its_real_place",
            )
            .as_str(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .current_dir(&root)
        .output()
        .expect("run the child");
    assert!(
        output.status.success(),
        "the child failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // The filter matched the test: the child ran it rather than nothing.
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("1 passed"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

//! Where the hosts keep their server lists, so a program can find the servers a user already
//! has without being told the file.
//!
//! [`host_configs`] lists the places in the order a tool should search them: the project's
//! own files in the folder first (what a repository shares), then the user's (what follows
//! the user everywhere):
//!
//! | host | scope | file | servers at |
//! |---|---|---|---|
//! | Claude Code | project | `<folder>/.mcp.json` | `mcpServers` |
//! | Cursor | project | `<folder>/.cursor/mcp.json` | `mcpServers` |
//! | VS Code | project | `<folder>/.vscode/mcp.json` | `servers` |
//! | Claude Code | local (this folder, this user) | `~/.claude.json` | `projects.<folder>.mcpServers` |
//! | Claude Code | user | `~/.claude.json` | `mcpServers` |
//! | Cursor | user | `~/.cursor/mcp.json` | `mcpServers` |
//! | VS Code | user | macOS `~/Library/Application Support/Code/User/mcp.json`, Windows `%APPDATA%\Code\User\mcp.json`, elsewhere `$XDG_CONFIG_HOME/Code/User/mcp.json` (`~/.config`) | `servers` |
//! | Claude Desktop | user | macOS `~/Library/Application Support/Claude/claude_desktop_config.json`, Windows `%APPDATA%\Claude\claude_desktop_config.json`, elsewhere `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` | `mcpServers` |
//!
//! `~` is `HOME` (`USERPROFILE` on Windows). A place whose base is unknown (no `HOME`) is
//! left out. `~/.claude.json` also holds Claude Code's settings and history, so it is read
//! with a larger bound ([`HostConfig::max_bytes`], 16 MiB) than a server list alone needs.

use std::path::{Path, PathBuf};

use super::{ConfigFormat, LoadOptions, ServerConfigs};
use crate::error::Result;

/// Whose servers a [`HostConfig`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostScope {
    /// Shared with the project: a file in the project's folder.
    Project,
    /// This user's servers for one project (Claude Code's "local" scope).
    Local,
    /// This user's servers for every project.
    User,
}

impl std::fmt::Display for HostScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HostScope::Project => "project",
            HostScope::Local => "local",
            HostScope::User => "user",
        })
    }
}

/// One place a host keeps servers: the file, its format, and where in it the servers are.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostConfig {
    /// The host whose file it is, by its format.
    pub format: ConfigFormat,
    /// Whose servers they are.
    pub scope: HostScope,
    /// The file.
    pub path: PathBuf,
    /// Where the object of servers is, when not at the format's key (a JSON pointer).
    pub servers_at: Option<String>,
    /// The largest file read here: 1 MiB for a server list, 16 MiB for `~/.claude.json`.
    pub max_bytes: usize,
}

impl HostConfig {
    fn new(format: ConfigFormat, scope: HostScope, path: PathBuf) -> HostConfig {
        HostConfig {
            format,
            scope,
            path,
            servers_at: None,
            max_bytes: LoadOptions::default().max_config_bytes,
        }
    }

    /// A short name for messages: `~/.claude.json (Claude Code, local scope)`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, {} scope)",
            self.path.display(),
            self.format,
            self.scope
        )
    }

    /// `options` with this place's format, pointer and size bound.
    pub fn load_options(&self, options: LoadOptions) -> LoadOptions {
        let mut options = options.format(self.format).max_config_bytes(self.max_bytes);
        if let Some(pointer) = &self.servers_at {
            options = options.servers_at(pointer.clone());
        }
        options
    }

    /// Reads the file with [`HostConfig::load_options`].
    ///
    /// # Errors
    ///
    /// As [`ServerConfigs::load_with`].
    pub fn load(&self, options: LoadOptions) -> Result<ServerConfigs> {
        ServerConfigs::load_with(&self.path, self.load_options(options))
    }
}

/// The places the hosts keep server lists for a project in `folder` (see the module docs),
/// in search order, whether or not the files exist. `folder` should be absolute: Claude
/// Code keys a project's own servers by its absolute path.
pub fn host_configs(folder: &Path) -> Vec<HostConfig> {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    let home = if cfg!(windows) {
        var("USERPROFILE").or_else(|| var("HOME"))
    } else {
        var("HOME")
    }
    .map(PathBuf::from);
    // Where desktop apps keep their settings on this system.
    let app_data = if cfg!(target_os = "macos") {
        home.as_ref()
            .map(|home| home.join("Library").join("Application Support"))
    } else if cfg!(windows) {
        var("APPDATA").map(PathBuf::from)
    } else {
        var("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|home| home.join(".config")))
    };
    let mut places = vec![
        HostConfig::new(
            ConfigFormat::ClaudeCode,
            HostScope::Project,
            folder.join(".mcp.json"),
        ),
        HostConfig::new(
            ConfigFormat::Cursor,
            HostScope::Project,
            folder.join(".cursor").join("mcp.json"),
        ),
        HostConfig::new(
            ConfigFormat::VsCode,
            HostScope::Project,
            folder.join(".vscode").join("mcp.json"),
        ),
    ];
    if let Some(home) = &home {
        let claude = home.join(".claude.json");
        let mut local = HostConfig::new(ConfigFormat::ClaudeCode, HostScope::Local, claude.clone());
        local.servers_at = Some(format!(
            "/projects/{}/mcpServers",
            pointer_segment(&folder.to_string_lossy())
        ));
        local.max_bytes = CLAUDE_JSON_BYTES;
        places.push(local);
        let mut user = HostConfig::new(ConfigFormat::ClaudeCode, HostScope::User, claude);
        user.max_bytes = CLAUDE_JSON_BYTES;
        places.push(user);
        places.push(HostConfig::new(
            ConfigFormat::Cursor,
            HostScope::User,
            home.join(".cursor").join("mcp.json"),
        ));
    }
    if let Some(app_data) = &app_data {
        places.push(HostConfig::new(
            ConfigFormat::VsCode,
            HostScope::User,
            app_data.join("Code").join("User").join("mcp.json"),
        ));
        places.push(HostConfig::new(
            ConfigFormat::ClaudeDesktop,
            HostScope::User,
            app_data.join("Claude").join("claude_desktop_config.json"),
        ));
    }
    places
}

/// The bound for `~/.claude.json`, which holds far more than servers.
const CLAUDE_JSON_BYTES: usize = 16 * 1024 * 1024;

/// One reference token of a JSON pointer: `~` as `~0`, `/` as `~1`.
fn pointer_segment(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_path_is_one_pointer_segment() {
        assert_eq!(pointer_segment("/home/me/a~b"), "~1home~1me~1a~0b");
        let document = serde_json::json!({"projects": {"/home/me/a~b": {"mcpServers": {}}}});
        let pointer = format!("/projects/{}/mcpServers", pointer_segment("/home/me/a~b"));
        assert!(document.pointer(&pointer).is_some());
    }
}

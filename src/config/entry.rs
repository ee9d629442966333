//! One server entry of a config file: its fields, variable expansion, `envFile`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::file::read_regular;
use super::{ConfigFormat, LoadOptions, ServerEntry};
use crate::error::{Error, Result};
use crate::mask::mask_url;
use crate::transport::StdioConfig;

/// Reads one server entry, naming the server and field in every error.
pub(super) struct EntryReader<'a> {
    pub(super) source: &'a str,
    pub(super) name: &'a str,
    pub(super) format: ConfigFormat,
    pub(super) options: &'a LoadOptions,
}

/// The fields each format defines; others are ignored with a warning.
const KNOWN_FIELDS: &[&str] = &[
    "type", "command", "args", "env", "cwd", "url", "headers", "envFile",
];

impl EntryReader<'_> {
    pub(super) fn error(&self, field: &str, problem: impl fmt::Display) -> Error {
        Error::Config(format!(
            "{}: server `{}`, field `{field}`: {problem}",
            self.source, self.name
        ))
    }

    pub(super) fn read(&self, entry: &Value) -> Result<ServerEntry> {
        let Some(object) = entry.as_object() else {
            let key = match self.format {
                ConfigFormat::VsCode => "servers",
                _ => "mcpServers",
            };
            return Err(self.error(
                &format!("{key}.{}", self.name),
                "the entry must be an object with `command` or `url`",
            ));
        };
        for key in object.keys() {
            let known = (KNOWN_FIELDS.contains(&key.as_str())
                && (key != "envFile" || self.format == ConfigFormat::VsCode))
                || key == super::oauth::field_of(self.format);
            if !known {
                log::warn!(
                    "toolwire: {}: server `{}`: ignoring the field `{key}`, which this reader does not know",
                    self.source,
                    self.name
                );
            }
        }
        let kind = match object.get("type") {
            None if self.format == ConfigFormat::VsCode => {
                return Err(self.error(
                    "type",
                    "missing: VS Code's mcp.json needs \"stdio\" or \"http\"",
                ))
            }
            None => None,
            Some(Value::String(kind)) => Some(kind.as_str()),
            Some(_) => return Err(self.error("type", "must be a string")),
        };
        let has_command = object.contains_key("command");
        let has_url = object.contains_key("url");
        match kind {
            Some("sse") => match self.http(object)? {
                ServerEntry::Http { url, headers } => Ok(ServerEntry::Sse { url, headers }),
                _ => Err(self.error("url", "an sse server needs an http:// or https:// URL")),
            },
            Some("stdio") => self.stdio(object),
            Some("http" | "streamable-http" | "streamableHttp") => self.http(object),
            Some(other) => Err(self.error(
                "type",
                format!("{other:?} is not one of \"stdio\", \"http\", \"sse\""),
            )),
            None if has_command && has_url => Err(self.error(
                "command",
                "both `command` and `url` are set: one entry is either a stdio or an HTTP server",
            )),
            None if has_command => self.stdio(object),
            None if has_url => self.http(object),
            None => Err(self.error(
                "command",
                "missing: an entry needs `command` (stdio) or `url` (HTTP)",
            )),
        }
    }

    fn stdio(&self, object: &Map<String, Value>) -> Result<ServerEntry> {
        if object.contains_key("url") {
            return Err(self.error("url", "a stdio server has no `url`"));
        }
        let command = match object.get("command") {
            Some(Value::String(command)) if command.trim().is_empty() => {
                return Err(self.error("command", "must not be empty"))
            }
            Some(Value::String(command)) => {
                let expanded = self.expand(command, "command")?;
                // Checked again once expanded: `${VAR:-}` or an unset `${env:VAR}` can leave
                // nothing to run.
                if expanded.trim().is_empty() {
                    return Err(self.error(
                        "command",
                        format!("{command:?} expands to an empty command"),
                    ));
                }
                expanded
            }
            Some(_) => return Err(self.error("command", "must be a string")),
            None => return Err(self.error("command", "missing: a stdio server needs one")),
        };
        let mut config = StdioConfig::new(command);
        match object.get("args") {
            None | Some(Value::Null) => {}
            Some(Value::Array(args)) => {
                for (index, arg) in args.iter().enumerate() {
                    let field = format!("args[{index}]");
                    let Some(arg) = arg.as_str() else {
                        return Err(self.error(&field, "must be a string"));
                    };
                    config.args.push(OsString::from(self.expand(arg, &field)?));
                }
            }
            Some(_) => return Err(self.error("args", "must be an array of strings")),
        }
        if let Some(file) = object.get("envFile") {
            if self.format == ConfigFormat::VsCode {
                let Some(file) = file.as_str() else {
                    return Err(self.error("envFile", "must be a string"));
                };
                for (key, value) in self.env_file(&self.expand(file, "envFile")?)? {
                    config.env.insert(key.into(), value.into());
                }
            }
        }
        for (key, value) in self.string_map(object, "env")? {
            if let Some(problem) = name_problem(&key) {
                return Err(self.error("env", problem));
            }
            if let Some(problem) = value_problem(&key, &value) {
                return Err(self.error(&format!("env.{key}"), problem));
            }
            config.env.insert(key.into(), value.into());
        }
        match object.get("cwd") {
            None | Some(Value::Null) => {}
            Some(Value::String(cwd)) => {
                let cwd = PathBuf::from(self.expand(cwd, "cwd")?);
                config.cwd = Some(self.resolve(cwd));
            }
            Some(_) => return Err(self.error("cwd", "must be a string")),
        }
        if object.contains_key("headers") {
            return Err(self.error("headers", "a stdio server has no `headers`"));
        }
        Ok(ServerEntry::Stdio(config))
    }

    fn http(&self, object: &Map<String, Value>) -> Result<ServerEntry> {
        if object.contains_key("command") {
            return Err(self.error("command", "an HTTP server has no `command`"));
        }
        let url = match object.get("url") {
            Some(Value::String(url)) => self.expand(url, "url")?,
            Some(_) => return Err(self.error("url", "must be a string")),
            None => return Err(self.error("url", "missing: an HTTP server needs one")),
        };
        let lower = url.to_ascii_lowercase();
        let headers = self.string_map(object, "headers")?;
        // A WebSocket URL, a TCP address or a Unix socket: plain JSON-RPC transports.
        if lower.starts_with("ws://") || lower.starts_with("wss://") {
            return Ok(ServerEntry::WebSocket { url, headers });
        }
        if let Some(address) = lower.strip_prefix("tcp://").map(|_| &url[6..]) {
            let address = address.trim_end_matches('/');
            return Ok(ServerEntry::Socket(crate::transport::SocketConfig::tcp(
                address,
            )));
        }
        if let Some(path) = url
            .strip_prefix("unix://")
            .or_else(|| url.strip_prefix("unix:"))
        {
            return Ok(ServerEntry::Socket(crate::transport::SocketConfig::unix(
                self.resolve(PathBuf::from(path)),
            )));
        }
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(self.error(
                "url",
                format!(
                    "{:?} is not an http://, https://, ws://, wss://, tcp:// or unix: URL",
                    mask_url(&url)
                ),
            ));
        }
        for field in ["args", "env", "envFile", "cwd"] {
            if object.contains_key(field) {
                log::warn!(
                    "toolwire: {}: server `{}`: `{field}` means nothing for an HTTP server; ignored",
                    self.source,
                    self.name
                );
            }
        }
        Ok(ServerEntry::Http { url, headers })
    }

    /// An object of strings (`env`, `headers`), expanded, in order.
    fn string_map(
        &self,
        object: &Map<String, Value>,
        field: &str,
    ) -> Result<Vec<(String, String)>> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(key, value)| {
                    let path = format!("{field}.{key}");
                    match value {
                        Value::String(text) => Ok((key.clone(), self.expand(text, &path)?)),
                        _ => Err(self.error(&path, "must be a string")),
                    }
                })
                .collect(),
            Some(_) => Err(self.error(field, "must be an object of strings")),
        }
    }

    fn resolve(&self, path: PathBuf) -> PathBuf {
        match (&self.options.workspace_folder, path.is_relative()) {
            (Some(base), true) => base.join(path),
            _ => path,
        }
    }

    /// Reads a dotenv file: `KEY=VALUE` lines, `#` comments, an optional `export `, quotes
    /// around the value removed.
    fn env_file(&self, file: &str) -> Result<Vec<(String, String)>> {
        let path = self.resolve(PathBuf::from(file));
        let text = read_regular(&path, self.options.max_env_file_bytes).map_err(|refusal| {
            self.error("envFile", refusal.describe(&path, "max_env_file_bytes"))
        })?;
        let mut pairs = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((key, value)) = line.split_once('=') else {
                return Err(self.error(
                    "envFile",
                    format!("{} line {}: expected KEY=VALUE", path.display(), number + 1),
                ));
            };
            let value = value.trim();
            let value = ['"', '\'']
                .iter()
                .find_map(|quote| {
                    value
                        .strip_prefix(*quote)
                        .and_then(|rest| rest.strip_suffix(*quote))
                })
                .unwrap_or(value);
            let key = key.trim();
            if let Some(problem) = name_problem(key).or_else(|| value_problem(key, value)) {
                return Err(self.error(
                    "envFile",
                    format!("{} line {}: {problem}", path.display(), number + 1),
                ));
            }
            pairs.push((key.to_owned(), value.to_owned()));
        }
        Ok(pairs)
    }

    /// Expands the format's variables in one value.
    pub(super) fn expand(&self, text: &str, field: &str) -> Result<String> {
        if self.format == ConfigFormat::ClaudeDesktop || !text.contains("${") {
            return Ok(text.to_owned());
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                // No closing brace: not a variable.
                out.push_str(&rest[start..]);
                return Ok(out);
            };
            let body = &after[..end];
            out.push_str(&self.variable(body, field)?);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn variable(&self, body: &str, field: &str) -> Result<String> {
        let options = self.options;
        if self.format == ConfigFormat::ClaudeCode {
            let (name, default) = match body.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (body, None),
            };
            if !is_var_name(name) {
                return Err(self.error(field, format!("`${{{body}}}` is not a variable reference")));
            }
            return match (options.lookup(name), default) {
                (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
                (Some(value), _) => Ok(value),
                (None, Some(default)) => Ok(default.to_owned()),
                (None, None) => Err(self.error(
                    field,
                    format!("`${{{name}}}` is not set and has no default (write `${{{name}:-default}}`)"),
                )),
            };
        }
        // Cursor and VS Code: editor variables.
        if let Some(name) = body.strip_prefix("env:") {
            // An unset variable is empty, as the editors do it.
            return Ok(options.lookup(name).unwrap_or_default());
        }
        if let Some(id) = body.strip_prefix("input:") {
            return options.inputs.get(id).cloned().ok_or_else(|| {
                self.error(
                    field,
                    format!(
                        "`${{input:{id}}}` asks the editor to prompt for a value, which is not \
                         supported here; supply it with LoadOptions::input({id:?}, …)"
                    ),
                )
            });
        }
        match body {
            "workspaceFolder" => options
                .workspace_folder
                .as_ref()
                .map(|folder| folder.display().to_string())
                .ok_or_else(|| self.error(field, "`${workspaceFolder}` is not known here")),
            "userHome" => options
                .lookup("HOME")
                .ok_or_else(|| self.error(field, "`${userHome}`: HOME is not set")),
            "pathSeparator" | "/" => Ok(std::path::MAIN_SEPARATOR.to_string()),
            other => Err(self.error(
                field,
                format!(
                    "`${{{other}}}` is a {} variable that is not supported here",
                    self.format
                ),
            )),
        }
    }
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why `name` cannot name an environment variable: the OS keeps `NAME=value` strings, so an
/// empty name or one holding `=` would reach the child as some other variable, and a NUL
/// cannot be passed at all (the spawn would fail far from the config that caused it).
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("a variable name is empty: no environment can hold it".to_owned())
    } else if name.contains('=') {
        Some(format!(
            "the variable name {name:?} holds `=`, which ends a name in the environment \
             (the server would see another variable)"
        ))
    } else if name.contains('\0') {
        Some(format!(
            "the variable name {name:?} holds a NUL byte, which no environment can carry"
        ))
    } else {
        None
    }
}

/// Why `value` cannot be the value of the variable `name`: it holds a NUL byte.
fn value_problem(name: &str, value: &str) -> Option<String> {
    value
        .contains('\0')
        .then(|| format!("the value of {name:?} holds a NUL byte, which no environment can carry"))
}

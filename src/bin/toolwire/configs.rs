//! Which config file to read: `--config`, or the hosts' places searched in order
//! ([`toolwire::config::host_configs`]: the project's files in the current folder, then the
//! user's files of Claude Code, Cursor, VS Code and Claude Desktop).
//!
//! Every file is read with [`LoadOptions::skip_bad_entries`]: a bad or unsupported entry is
//! left out with its error (`servers` marks it, connecting to it names it) and the others stay
//! usable. A place whose whole document is unusable (not JSON, a key twice) is skipped with a
//! warning while searching, and is an error when named with `--config`.

use std::path::PathBuf;

use toolwire::config::{host_configs, HostConfig, LoadOptions};
use toolwire::ServerConfigs;

use crate::cli::TargetOptions;
use crate::Failure;

/// A config file that was read.
pub struct Loaded {
    /// The file.
    pub path: PathBuf,
    /// Its servers (and the entries left out).
    pub configs: ServerConfigs,
    /// The host's place it was found at, when found by searching (no `--config`).
    pub place: Option<HostConfig>,
    /// The other places searched that hold servers, each with their names (for `servers`).
    pub others: Vec<(HostConfig, Vec<String>)>,
}

impl Loaded {
    /// `FILE`, or `FILE (Host, scope)` for a place found by searching.
    pub fn describe(&self) -> String {
        match &self.place {
            Some(place) => place.describe(),
            None => self.path.display().to_string(),
        }
    }
}

/// The options every read uses: `--input` values and skipping bad entries.
fn load_options(options: &TargetOptions) -> Result<LoadOptions, Failure> {
    let mut load = LoadOptions::new().skip_bad_entries(true);
    for input in &options.inputs {
        // An input is often a password: a malformed one is not echoed.
        let (id, value) = crate::target::split_pair(input, '=').ok_or_else(|| {
            Failure::usage("--input: expected ID=VALUE (an ID, then `=`, then the value)")
        })?;
        load = load.input(id, value);
    }
    Ok(load)
}

/// Reads the config the options name; without `--config`, the first of the hosts' places
/// that holds servers (with `wanted`, the first that holds a server of that name).
pub fn load(options: &TargetOptions, wanted: Option<&str>) -> Result<Loaded, Failure> {
    let load = load_options(options)?;
    if let Some(path) = &options.config {
        let configs = ServerConfigs::load_with(path, load)
            .map_err(|error| Failure::usage(config_error(&path.display().to_string(), &error)))?;
        return Ok(Loaded {
            path: path.clone(),
            configs,
            place: None,
            others: Vec::new(),
        });
    }
    let folder = std::env::current_dir()
        .map_err(|error| Failure::usage(format!("cannot read the current folder: {error}")))?;
    let places = host_configs(&folder);
    let mut found: Vec<(HostConfig, ServerConfigs)> = Vec::new();
    for place in &places {
        if !place.path.is_file() {
            continue;
        }
        match place.load(load.clone()) {
            Ok(configs) => {
                if configs.names().next().is_some() || configs.rejected().next().is_some() {
                    found.push((place.clone(), configs));
                }
            }
            Err(error) => {
                errln!(
                    "toolwire: warning: skipping {}: {}",
                    place.describe(),
                    config_error(&place.path.display().to_string(), &error)
                );
            }
        }
    }
    let holds = |configs: &ServerConfigs, name: &str| {
        configs.get(name).is_some() || configs.rejected().any(|(bad, _)| bad == name)
    };
    let chosen = match wanted {
        Some(name) => found
            .iter()
            .position(|(_, configs)| holds(configs, name))
            .or(if found.is_empty() { None } else { Some(0) }),
        None => (!found.is_empty()).then_some(0),
    };
    let Some(chosen) = chosen else {
        let searched: Vec<String> = places
            .iter()
            .map(|place| format!("  {}", place.describe()))
            .collect();
        return Err(Failure::usage(format!(
            "no server given: use --config FILE --server NAME, --url URL, or -- COMMAND \
             [ARGS...] (no config file with servers in the hosts' places, searched in \
             order:\n{})",
            searched.join("\n")
        )));
    };
    let (place, configs) = found.remove(chosen);
    let others = found
        .into_iter()
        .map(|(place, configs)| {
            let names = configs.names().map(str::to_owned).collect();
            (place, names)
        })
        .collect();
    Ok(Loaded {
        path: place.path.clone(),
        configs,
        place: Some(place),
        others,
    })
}

/// A config error's text without the library's "invalid configuration: " lead (the message
/// already names the file, the server and the field).
pub fn config_error(path: &str, error: &toolwire::Error) -> String {
    match error {
        toolwire::Error::Config(text) => format!("bad config: {text}"),
        other => format!("cannot use the config {path}: {other}"),
    }
}

/// A rejected entry's reason without the lead naming the file and the server, which the
/// `servers` table already shows: `field `command`: must be a string`.
pub fn short_reason<'a>(configs: &ServerConfigs, name: &str, reason: &'a str) -> &'a str {
    let lead = format!("{}: server `{name}`", configs.source());
    reason
        .strip_prefix(lead.as_str())
        .map(|rest| rest.trim_start_matches([',', ':', ' ']))
        .unwrap_or(reason)
}

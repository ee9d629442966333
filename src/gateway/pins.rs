//! Pinned tool definitions: the digest of each backend tool's definition, recorded the first
//! time the gateway serves it, so that a definition changed later (a "rug pull") is held
//! until the operator approves it.
//!
//! # The pin file
//!
//! One JSON document (at most [`MAX_PIN_FILE_BYTES`], read strictly: an unknown key, a key
//! written twice, a value of the wrong type is an error naming its place):
//!
//! ```json
//! {
//!   "version": 1,
//!   "pinned": {
//!     "files": {
//!       "read_file": {
//!         "sha256": "sha256:…",
//!         "fields": {"name": "sha256:…", "description": "sha256:…", "inputSchema": "sha256:…",
//!                    "outputSchema": "sha256:…", "annotations": "sha256:…"}
//!       }
//!     }
//!   },
//!   "pending": {
//!     "files": {
//!       "read_file": {
//!         "sha256": "sha256:…", "fields": {…},
//!         "reason": "changed", "changed": ["description"],
//!         "definition": {"name": "read_file", "description": "…", "inputSchema": {…}}
//!       }
//!     }
//!   }
//! }
//! ```
//!
//! `pinned` holds, per server of the config and per tool (the backend's own name, whatever
//! the namespace), the digest the operator accepts: `sha256` over the canonical JSON (keys
//! sorted, no spaces) of the object of the five fields `name`, `description`, `inputSchema`,
//! `outputSchema` and `annotations` (an absent one is `null`), and each field's own digest,
//! so a change can say which fields differ. `pending` holds what the gateway saw and did not
//! serve: a pinned tool whose definition differs (`"reason": "changed"`, with the fields that
//! differ), or a new tool under `"new_tools": "hold"` (`"reason": "new"`), with the whole
//! definition as the backend listed it, for the operator to read. Approving
//! ([`PinFile::approve`], `toolwire pins approve`) moves a pending entry's digest to
//! `pinned`; the gateway serves it from its next listing of that backend (a restart, or
//! `SIGHUP` to `toolwire serve`, [`super::Gateway::reload_pins`]).
//!
//! The gateway writes the file atomically (a temporary file in the same directory, then a
//! rename), merging with what is on disk: an approval written meanwhile is kept.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::mcp::Tool;

/// The largest pin file read or written, in bytes (4 MiB).
pub const MAX_PIN_FILE_BYTES: usize = 4 * 1024 * 1024;

/// The fields of a tool's definition that are pinned, in the order reports name them.
pub const PINNED_FIELDS: [&str; 5] = [
    "name",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// What the gateway does with a tool no pin names (the policy's `"new_tools"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NewTools {
    /// Serve it and pin its definition (`"serve"`). The default.
    #[default]
    Serve,
    /// Hold it, as a changed one is held, until the operator approves it (`"hold"`).
    Hold,
}

/// Why a tool is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldReason {
    /// Its definition differs from the one pinned.
    Changed,
    /// No pin names it, and the policy holds new tools.
    New,
}

impl HeldReason {
    /// `changed` or `new`, as the pin file and the stats write it.
    pub fn word(self) -> &'static str {
        match self {
            HeldReason::Changed => "changed",
            HeldReason::New => "new",
        }
    }
}

/// The digest of a tool's definition and of each of its pinned fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDigest {
    /// `sha256:` and 64 hex digits, over the canonical JSON of the five fields.
    pub sha256: String,
    /// Each field's own digest, by field name.
    pub fields: BTreeMap<String, String>,
}

impl ToolDigest {
    /// The digest of `tool`'s definition, and the definition as the backend listed it.
    ///
    /// # Errors
    ///
    /// When the definition cannot be built as a JSON value (nested too deep).
    pub fn of(tool: &Tool) -> Result<(ToolDigest, Value)> {
        let definition = tool.raw()?;
        Ok((ToolDigest::of_definition(&definition), definition))
    }

    /// The digest of a tool's definition given as JSON.
    pub fn of_definition(definition: &Value) -> ToolDigest {
        let mut whole = Map::new();
        let mut fields = BTreeMap::new();
        for field in PINNED_FIELDS {
            let value = definition.get(field).cloned().unwrap_or(Value::Null);
            fields.insert(field.to_owned(), digest(&value));
            whole.insert(field.to_owned(), value);
        }
        ToolDigest {
            sha256: digest(&Value::Object(whole)),
            fields,
        }
    }

    /// The fields whose digests differ from `other`'s, in [`PINNED_FIELDS`]'s order.
    pub fn changed_fields(&self, other: &ToolDigest) -> Vec<String> {
        PINNED_FIELDS
            .iter()
            .filter(|field| self.fields.get(**field) != other.fields.get(**field))
            .map(|field| (*field).to_owned())
            .collect()
    }

    fn to_json(&self) -> Value {
        json!({"sha256": self.sha256, "fields": self.fields})
    }
}

/// `sha256:` and the hex SHA-256 of the canonical JSON of `value`.
fn digest(value: &Value) -> String {
    let mut text = String::new();
    canonical(value, &mut text);
    crate::mcp::skill_digest(text.as_bytes())
}

/// Compact JSON with every object's keys in byte order, whatever the map's own order.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A definition the gateway saw and did not serve, waiting for the operator.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingPin {
    /// Its digest.
    pub digest: ToolDigest,
    /// Why it is held.
    pub reason: HeldReason,
    /// The fields that differ from the pinned definition (empty for a new tool).
    pub changed: Vec<String>,
    /// The whole definition as the backend listed it.
    pub definition: Value,
}

/// What [`PinFile::check`] finds of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its definition is the one pinned.
    Pinned,
    /// It differs from the one pinned in these fields.
    Changed(Vec<String>),
    /// No pin names it.
    New,
}

/// A pending definition [`PinFile::approve`] moved to the pinned ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Approved {
    /// The backend's own name of the tool.
    pub tool: String,
    /// What it was held for.
    pub pending: PendingPin,
}

/// The pin file's document. See the [module documentation](self).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PinFile {
    pinned: BTreeMap<String, BTreeMap<String, ToolDigest>>,
    pending: BTreeMap<String, BTreeMap<String, PendingPin>>,
}

impl PinFile {
    /// Reads a pin file; a file that does not exist is an empty one (written at the first
    /// pin).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming the file when it cannot be read, is larger than
    /// [`MAX_PIN_FILE_BYTES`], or is not a valid pin file ([`PinFile::parse`]).
    pub fn load(path: impl AsRef<Path>) -> Result<PinFile> {
        use std::io::Read;
        let path = path.as_ref();
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(PinFile::default())
            }
            Err(error) => {
                return Err(Error::Config(format!(
                    "cannot open the pin file {}: {error}",
                    path.display()
                )))
            }
        };
        let mut text = String::new();
        file.take(MAX_PIN_FILE_BYTES as u64 + 1)
            .read_to_string(&mut text)
            .map_err(|error| {
                Error::Config(format!(
                    "cannot read the pin file {}: {error}",
                    path.display()
                ))
            })?;
        PinFile::parse(&text).map_err(|error| Error::Config(format!("{}: {error}", path.display())))
    }

    /// Reads a pin file's text.
    ///
    /// # Errors
    ///
    /// A message naming the place of the first thing wrong: text over
    /// [`MAX_PIN_FILE_BYTES`], not strict JSON, a `version` other than 1, an unknown key, a
    /// value of the wrong type, a digest that is not `sha256:` and 64 hex digits.
    pub fn parse(text: &str) -> Result<PinFile> {
        let bad = |what: String| Error::Config(format!("the pin file is not valid: {what}"));
        if text.len() > MAX_PIN_FILE_BYTES {
            return Err(bad(format!(
                "it is over the limit of {MAX_PIN_FILE_BYTES} bytes"
            )));
        }
        let value = crate::json::parse(text).map_err(|refusal| bad(refusal.to_string()))?;
        let top = object(&value, "the document").map_err(bad)?;
        let mut file = PinFile::default();
        match top.get("version") {
            Some(version) if version == &json!(1) => {}
            other => return Err(bad(format!("/version must be 1, not {other:?}"))),
        }
        for (key, value) in top {
            match key.as_str() {
                "version" => {}
                "pinned" => {
                    for (server, tool, entry, at) in entries(value, "/pinned").map_err(bad)? {
                        let digest = tool_digest(entry, &at, &["sha256", "fields"]).map_err(bad)?;
                        file.pinned.entry(server).or_default().insert(tool, digest);
                    }
                }
                "pending" => {
                    for (server, tool, entry, at) in entries(value, "/pending").map_err(bad)? {
                        let pending = pending_pin(entry, &at).map_err(bad)?;
                        file.pending
                            .entry(server)
                            .or_default()
                            .insert(tool, pending);
                    }
                }
                other => {
                    return Err(bad(format!(
                        "unknown key {other:?} at / (known: version, pinned, pending)"
                    )))
                }
            }
        }
        Ok(file)
    }

    /// The document as JSON.
    pub fn to_json(&self) -> Value {
        let pinned: Map<String, Value> = self
            .pinned
            .iter()
            .map(|(server, tools)| {
                let tools: Map<String, Value> = tools
                    .iter()
                    .map(|(tool, digest)| (tool.clone(), digest.to_json()))
                    .collect();
                (server.clone(), Value::Object(tools))
            })
            .collect();
        let pending: Map<String, Value> = self
            .pending
            .iter()
            .map(|(server, tools)| {
                let tools: Map<String, Value> = tools
                    .iter()
                    .map(|(tool, pending)| {
                        let mut entry = pending.digest.to_json();
                        entry["reason"] = json!(pending.reason.word());
                        entry["changed"] = json!(pending.changed);
                        entry["definition"] = pending.definition.clone();
                        (tool.clone(), entry)
                    })
                    .collect();
                (server.clone(), Value::Object(tools))
            })
            .collect();
        json!({"version": 1, "pinned": pinned, "pending": pending})
    }

    /// Writes the document to `path` atomically: a temporary file in the same directory,
    /// then a rename over `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the document would be over [`MAX_PIN_FILE_BYTES`]; [`Error::Io`]
    /// when it cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        use std::io::Write;
        let path = path.as_ref();
        let mut text = serde_json::to_string_pretty(&self.to_json())
            .map_err(|error| Error::Config(format!("cannot write the pin file: {error}")))?;
        text.push('\n');
        if text.len() > MAX_PIN_FILE_BYTES {
            return Err(Error::Config(format!(
                "the pin file {} would be {} bytes, over the limit of {MAX_PIN_FILE_BYTES}",
                path.display(),
                text.len()
            )));
        }
        let name = path
            .file_name()
            .map_or_else(|| "pins".into(), |name| name.to_string_lossy().into_owned());
        let temporary = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        let written = std::fs::File::create(&temporary).and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()
        });
        if let Err(error) = written.and_then(|()| std::fs::rename(&temporary, path)) {
            let _ = std::fs::remove_file(&temporary);
            return Err(Error::Io(error));
        }
        Ok(())
    }

    /// How the tool `tool` of `server`, whose definition has `digest`, stands against the
    /// pins.
    pub fn check(&self, server: &str, tool: &str, digest: &ToolDigest) -> Verdict {
        match self.pinned.get(server).and_then(|tools| tools.get(tool)) {
            None => Verdict::New,
            Some(pin) if pin.sha256 == digest.sha256 => Verdict::Pinned,
            Some(pin) => Verdict::Changed(pin.changed_fields(digest)),
        }
    }

    /// The pinned digest of a tool.
    pub fn pinned(&self, server: &str, tool: &str) -> Option<&ToolDigest> {
        self.pinned.get(server)?.get(tool)
    }

    /// The pending definitions of `server`, by tool.
    pub fn pending(&self, server: &str) -> impl Iterator<Item = (&str, &PendingPin)> {
        self.pending
            .get(server)
            .into_iter()
            .flatten()
            .map(|(tool, pending)| (tool.as_str(), pending))
    }

    /// The servers with pending definitions.
    pub fn pending_servers(&self) -> impl Iterator<Item = &str> {
        self.pending.keys().map(String::as_str)
    }

    /// Pins `digest` for a tool (the operator's or the first serving's word).
    pub fn pin(&mut self, server: &str, tool: &str, digest: ToolDigest) {
        if let Some(tools) = self.pending.get_mut(server) {
            if tools
                .get(tool)
                .is_some_and(|pending| pending.digest == digest)
            {
                tools.remove(tool);
            }
            if tools.is_empty() {
                self.pending.remove(server);
            }
        }
        self.pinned
            .entry(server.to_owned())
            .or_default()
            .insert(tool.to_owned(), digest);
    }

    /// Records a definition held for the operator (replacing one held before).
    pub fn hold(&mut self, server: &str, tool: &str, pending: PendingPin) {
        self.pending
            .entry(server.to_owned())
            .or_default()
            .insert(tool.to_owned(), pending);
    }

    /// Forgets the pending definition of a tool (its backend lists the pinned one again).
    pub fn forget_pending(&mut self, server: &str, tool: &str) {
        if let Some(tools) = self.pending.get_mut(server) {
            tools.remove(tool);
            if tools.is_empty() {
                self.pending.remove(server);
            }
        }
    }

    /// Moves the pending definitions of `server` (only `tool`'s, when given) to the pinned
    /// ones; returns what was approved (nothing when nothing was pending).
    pub fn approve(&mut self, server: &str, tool: Option<&str>) -> Vec<Approved> {
        let names: Vec<String> = self
            .pending(server)
            .map(|(name, _)| name.to_owned())
            .filter(|name| tool.is_none_or(|only| only == name))
            .collect();
        let mut approved = Vec::new();
        for name in names {
            let Some(pending) = self
                .pending
                .get_mut(server)
                .and_then(|tools| tools.remove(&name))
            else {
                continue;
            };
            self.pin(server, &name, pending.digest.clone());
            approved.push(Approved {
                tool: name,
                pending,
            });
        }
        approved
    }
}

fn object<'a>(value: &'a Value, at: &str) -> std::result::Result<&'a Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("{at} must be an object"))
}

/// A server's name, a tool's, its entry, and the entry's place (a JSON pointer).
type Entry<'a> = (String, String, &'a Map<String, Value>, String);

/// The `server → tool → entry` objects under `value`, with each entry's place.
fn entries<'a>(value: &'a Value, at: &str) -> std::result::Result<Vec<Entry<'a>>, String> {
    let mut found = Vec::new();
    for (server, tools) in object(value, at)? {
        let server_at = format!("{at}/{}", crate::json::pointer_segment(server));
        for (tool, entry) in object(tools, &server_at)? {
            let entry_at = format!("{server_at}/{}", crate::json::pointer_segment(tool));
            found.push((
                server.clone(),
                tool.clone(),
                object(entry, &entry_at)?,
                entry_at,
            ));
        }
    }
    Ok(found)
}

fn digest_text(value: Option<&Value>, at: &str) -> std::result::Result<String, String> {
    let text = value
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{at} must be a string"))?;
    let hex = text.strip_prefix("sha256:").unwrap_or("");
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(format!(
            "{at} must be \"sha256:\" and 64 lowercase hex digits"
        ));
    }
    Ok(text.to_owned())
}

/// A digest entry: `sha256` and `fields` (each of [`PINNED_FIELDS`]), and no key outside
/// `known`.
fn tool_digest(
    entry: &Map<String, Value>,
    at: &str,
    known: &[&str],
) -> std::result::Result<ToolDigest, String> {
    if let Some(key) = entry.keys().find(|key| !known.contains(&key.as_str())) {
        return Err(format!(
            "unknown key {key:?} at {at} (known: {})",
            known.join(", ")
        ));
    }
    let sha256 = digest_text(entry.get("sha256"), &format!("{at}/sha256"))?;
    let fields_at = format!("{at}/fields");
    let listed = object(entry.get("fields").unwrap_or(&Value::Null), &fields_at)?;
    let mut fields = BTreeMap::new();
    for (field, value) in listed {
        if !PINNED_FIELDS.contains(&field.as_str()) {
            return Err(format!(
                "unknown field {field:?} at {fields_at} (known: {})",
                PINNED_FIELDS.join(", ")
            ));
        }
        fields.insert(
            field.clone(),
            digest_text(Some(value), &format!("{fields_at}/{field}"))?,
        );
    }
    if fields.len() != PINNED_FIELDS.len() {
        return Err(format!(
            "{fields_at} must have every field: {}",
            PINNED_FIELDS.join(", ")
        ));
    }
    Ok(ToolDigest { sha256, fields })
}

fn pending_pin(entry: &Map<String, Value>, at: &str) -> std::result::Result<PendingPin, String> {
    let digest = tool_digest(
        entry,
        at,
        &["sha256", "fields", "reason", "changed", "definition"],
    )?;
    let reason = match entry.get("reason").and_then(Value::as_str) {
        Some("changed") => HeldReason::Changed,
        Some("new") => HeldReason::New,
        _ => return Err(format!("{at}/reason must be \"changed\" or \"new\"")),
    };
    let changed = entry
        .get("changed")
        .and_then(Value::as_array)
        .and_then(|items| {
            items
                .iter()
                .map(|item| {
                    item.as_str()
                        .filter(|field| PINNED_FIELDS.contains(field))
                        .map(str::to_owned)
                })
                .collect::<Option<Vec<String>>>()
        })
        .ok_or_else(|| format!("{at}/changed must be an array of field names"))?;
    let definition = entry
        .get("definition")
        .filter(|definition| definition.is_object())
        .cloned()
        .ok_or_else(|| format!("{at}/definition must be an object"))?;
    Ok(PendingPin {
        digest,
        reason,
        changed,
        definition,
    })
}

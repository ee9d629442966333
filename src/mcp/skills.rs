//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`) on the host's side: the
//! entries of `skills/list` and `skills/get`, and loading a skill's files with every byte
//! verified before it is used.
//!
//! A host fetches nothing when it lists skills: [`McpClient::list_skills`] reads the entries
//! only. [`McpClient::load_skill`] reads the skill's `SKILL.md`, checks its size and
//! `sha256:` digest against the entry, and compares its frontmatter with the entry's field by
//! field; only then is the skill a [`LoadedSkill`], and only a loaded skill reads its other
//! files ([`LoadedSkill::read`]), each one listed in the entry it holds and verified the same
//! way. A skill whose `resources` are `"dynamic"` is declined: there is nothing to verify.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{json, Map, Value};
use sha2::{Digest as _, Sha256};

use super::frontmatter::parse_frontmatter;
use super::{methods, McpClient};
use crate::client::CallOptions;
use crate::error::{Error, Result};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// `sha256:` and the 64 lowercase hex digits of the SHA-256 of `bytes`, as skill entries
/// declare their files.
pub fn skill_digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut text = String::with_capacity(71);
    text.push_str("sha256:");
    for byte in hash.iter() {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

/// One file of a skill as its entry declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// The files of a skill: a complete list, or `"dynamic"` (not declared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// Every file of the skill, once each, `SKILL.md` among them.
    Files(Vec<SkillFile>),
    /// The server does not declare the files; such a skill cannot be verified.
    Dynamic,
}

/// A skill entry of `skills/list` or `skills/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its `SKILL.md` frontmatter, as JSON.
    pub frontmatter: Map<String, Value>,
    /// Its files.
    pub resources: SkillResources,
    /// The entry as the server sent it.
    pub raw: Value,
}

impl SkillEntry {
    /// Reads an entry, refusing one a host must never load: no `uri` ending in `/SKILL.md`,
    /// a frontmatter without a string `name` and `description`, a name that is not the last
    /// segment of the skill's path, or `resources` that are not `"dynamic"` or a list of files
    /// inside the skill, each once, with a well-formed digest and size, `SKILL.md` among them.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] naming what is wrong.
    pub fn from_value(value: Value) -> Result<SkillEntry> {
        let bad = |why: String| Error::Protocol(format!("a skill entry {why}"));
        let uri = value
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("has no `uri`".into()))?
            .to_owned();
        let root = skill_root(&uri).ok_or_else(|| bad(format!("`{uri}` is not a SKILL.md")))?;
        let frontmatter = value
            .get("frontmatter")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| bad(format!("`{uri}` has no `frontmatter` object")))?;
        for field in ["name", "description"] {
            let text = frontmatter.get(field).and_then(Value::as_str);
            if text.is_none_or(str::is_empty) {
                return Err(bad(format!("`{uri}` has no frontmatter `{field}`")));
            }
        }
        let name = frontmatter["name"].as_str().unwrap_or_default();
        if root.rsplit('/').next() != Some(name) {
            return Err(bad(format!(
                "`{uri}` is not named after its path (`{name}`)"
            )));
        }
        let resources = match value.get("resources") {
            Some(Value::String(text)) if text == "dynamic" => SkillResources::Dynamic,
            Some(Value::Array(items)) => {
                SkillResources::Files(files(&uri, root, items).map_err(&bad)?)
            }
            _ => return Err(bad(format!("`{uri}` has no valid `resources`"))),
        };
        Ok(SkillEntry {
            uri,
            frontmatter,
            resources,
            raw: value,
        })
    }

    /// The skill's name (its frontmatter `name`).
    pub fn name(&self) -> &str {
        self.frontmatter["name"].as_str().unwrap_or_default()
    }

    /// The skill's description (its frontmatter `description`).
    pub fn description(&self) -> &str {
        self.frontmatter["description"].as_str().unwrap_or_default()
    }

    /// The skill's root URI: its `uri` without `/SKILL.md`.
    pub fn root(&self) -> &str {
        skill_root(&self.uri).unwrap_or(&self.uri)
    }

    /// The declared file at `uri`, when the entry lists it.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|file| file.uri == uri),
            SkillResources::Dynamic => None,
        }
    }
}

/// `uri` without `/SKILL.md`, when it names one below some path.
fn skill_root(uri: &str) -> Option<&str> {
    let root = uri.strip_suffix("/SKILL.md")?;
    let (_, path) = root.split_once("://")?;
    (!path.is_empty() && !path.split('/').any(str::is_empty)).then_some(root)
}

fn files(uri: &str, root: &str, items: &[Value]) -> std::result::Result<Vec<SkillFile>, String> {
    let mut files: Vec<SkillFile> = Vec::with_capacity(items.len());
    for item in items {
        let file_uri = item.get("uri").and_then(Value::as_str).unwrap_or_default();
        let inside = file_uri
            .strip_prefix(root)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|rest| {
                !rest.is_empty() && rest.split('/').all(|s| !matches!(s, "" | "." | ".."))
            });
        if !inside {
            return Err(format!("`{uri}` lists `{file_uri}`, outside the skill"));
        }
        let digest = item
            .get("digest")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let well_formed = digest.strip_prefix("sha256:").is_some_and(|hex| {
            hex.len() == 64
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if !well_formed {
            return Err(format!(
                "`{uri}` lists `{file_uri}` without a sha256 digest"
            ));
        }
        let size = item
            .get("size")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("`{uri}` lists `{file_uri}` without a size"))?;
        if files.iter().any(|file| file.uri == file_uri) {
            return Err(format!("`{uri}` lists `{file_uri}` twice"));
        }
        files.push(SkillFile {
            uri: file_uri.to_owned(),
            digest: digest.to_owned(),
            size,
        });
    }
    if !files.iter().any(|file| file.uri == uri) {
        return Err(format!("`{uri}` does not list its own SKILL.md"));
    }
    Ok(files)
}

/// A skill whose `SKILL.md` was read and verified against the entry it holds.
#[derive(Debug, Clone)]
pub struct LoadedSkill {
    entry: SkillEntry,
    text: String,
    body_at: usize,
    verified: BTreeMap<String, Vec<u8>>,
}

impl LoadedSkill {
    /// The entry it was loaded from, and the only files it reads.
    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// The whole verified `SKILL.md`.
    pub fn skill_md(&self) -> &str {
        &self.text
    }

    /// The `SKILL.md` after its frontmatter: the instructions.
    pub fn body(&self) -> &str {
        &self.text[self.body_at..]
    }

    /// Reads one of the skill's files through `client` (the server the skill came from) and
    /// returns its bytes once verified; a file read before is returned from memory.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] for a URI the held entry does not list (even if the server has
    /// it), or bytes whose length or digest differ from the entry's; as
    /// [`McpClient::read_resource`] otherwise.
    pub fn read(&mut self, client: &McpClient, uri: &str) -> Result<Vec<u8>> {
        if let Some(bytes) = self.verified.get(uri) {
            return Ok(bytes.clone());
        }
        let file = self.entry.file(uri).ok_or_else(|| {
            Error::Protocol(format!(
                "`{uri}` is not a file of the skill `{}`; not read",
                self.entry.uri
            ))
        })?;
        let bytes = fetch_verified(client, file)?;
        self.verified.insert(uri.to_owned(), bytes.clone());
        Ok(bytes)
    }
}

/// Reads `file` and checks its length and digest against the entry's.
fn fetch_verified(client: &McpClient, file: &SkillFile) -> Result<Vec<u8>> {
    let contents = client.read_resource(&file.uri)?;
    let item = contents
        .iter()
        .find(|item| item.uri == file.uri)
        .or(contents.first())
        .ok_or_else(|| Error::Protocol(format!("`{}` was read with no contents", file.uri)))?;
    let bytes = match (&item.text, &item.blob) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(blob)) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|error| Error::Protocol(format!("`{}`: bad base64: {error}", file.uri)))?,
        (None, None) => unreachable!("ResourceContents has text or blob"),
    };
    verify_file(file, &bytes)?;
    Ok(bytes)
}

/// Checks `bytes` against a declared file: its length, then its digest.
///
/// # Errors
///
/// [`Error::Protocol`] saying which differs.
pub fn verify_file(file: &SkillFile, bytes: &[u8]) -> Result<()> {
    if bytes.len() as u64 != file.size {
        return Err(Error::Protocol(format!(
            "`{}` is {} bytes, the skill declares {}; not used",
            file.uri,
            bytes.len(),
            file.size
        )));
    }
    if skill_digest(bytes) != file.digest {
        return Err(Error::Protocol(format!(
            "`{}` does not match its declared digest; not used",
            file.uri
        )));
    }
    Ok(())
}

/// Compares a `SKILL.md`'s frontmatter with its entry's, field by field.
///
/// # Errors
///
/// [`Error::Protocol`] naming the fields that differ.
pub fn verify_frontmatter(entry: &SkillEntry, file: &Map<String, Value>) -> Result<()> {
    let mut keys: Vec<&String> = entry.frontmatter.keys().chain(file.keys()).collect();
    keys.sort();
    keys.dedup();
    let differ: Vec<&str> = keys
        .into_iter()
        .filter(|key| entry.frontmatter.get(*key) != file.get(*key))
        .map(String::as_str)
        .collect();
    if differ.is_empty() {
        Ok(())
    } else {
        Err(Error::Protocol(format!(
            "the SKILL.md of `{}` differs from its entry in {}; not loaded",
            entry.uri,
            differ.join(", ")
        )))
    }
}

impl McpClient {
    /// Every skill the server lists (`skills/list`, all pages). Reads no file.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the server does not declare the extension or sends a page
    /// that is not one, or an entry [`SkillEntry::from_value`] refuses; as
    /// [`McpClient::list_tools`] otherwise.
    pub fn list_skills(&self) -> Result<Vec<SkillEntry>> {
        self.require_skills()?;
        self.inner
            .list_all(methods::SKILLS_LIST, "skills")?
            .into_iter()
            .map(|raw| {
                let value: Value = serde_json::from_str(raw.get())
                    .map_err(|error| Error::Protocol(format!("a skill entry: {error}")))?;
                SkillEntry::from_value(value)
            })
            .collect()
    }

    /// One skill's entry by the URI of its `SKILL.md` (`skills/get`). Reads no file.
    ///
    /// # Errors
    ///
    /// As [`McpClient::list_skills`]; an unknown URI is [`Error::Rpc`] with -32602.
    pub fn get_skill(&self, uri: &str) -> Result<SkillEntry> {
        self.require_skills()?;
        let result =
            self.inner
                .request(methods::SKILLS_GET, json!({"uri": uri}), CallOptions::new())?;
        let entry = SkillEntry::from_value(result.get("skill").cloned().unwrap_or(Value::Null))?;
        if entry.uri != uri {
            return Err(Error::Protocol(format!(
                "skills/get for `{uri}` answered `{}`",
                entry.uri
            )));
        }
        Ok(entry)
    }

    /// Loads a skill: reads its `SKILL.md` (nothing else), verifies its size and digest
    /// against `entry` and its frontmatter against the entry's, field by field.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] for a `"dynamic"` skill (nothing to verify against), a
    /// verification failure, or a `SKILL.md` that is not UTF-8 or has no frontmatter; as
    /// [`McpClient::read_resource`] otherwise.
    pub fn load_skill(&self, entry: &SkillEntry) -> Result<LoadedSkill> {
        let file = entry.file(&entry.uri).ok_or_else(|| {
            Error::Protocol(format!(
                "`{}` does not declare its files (\"dynamic\"); not loaded",
                entry.uri
            ))
        })?;
        let bytes = fetch_verified(self, file)?;
        let text = String::from_utf8(bytes.clone())
            .map_err(|_| Error::Protocol(format!("`{}` is not UTF-8", entry.uri)))?;
        let (frontmatter, body) = parse_frontmatter(&text)?;
        verify_frontmatter(entry, &frontmatter)?;
        let body_at = text.len() - body.len();
        let mut verified = BTreeMap::new();
        verified.insert(entry.uri.clone(), bytes);
        Ok(LoadedSkill {
            entry: entry.clone(),
            text,
            body_at,
            verified,
        })
    }

    fn require_skills(&self) -> Result<()> {
        let info = self.session_info()?;
        let declared = info
            .capabilities
            .get("extensions")
            .and_then(|extensions| extensions.get(SKILLS_EXTENSION))
            .is_some();
        if declared {
            Ok(())
        } else {
            Err(Error::Protocol(format!(
                "the server does not declare the skills extension ({SKILLS_EXTENSION})"
            )))
        }
    }
}

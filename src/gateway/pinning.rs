//! The gateway's side of the pins: each backend listing is judged against the pin file
//! before its tools are served; a changed (or, under `"new_tools": "hold"`, new) definition
//! is held, recorded in the file's `pending` section, logged at `warn` and reported in
//! `toolwire/stats`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::pins::{HeldReason, NewTools, PendingPin, PinFile, ToolDigest, Verdict};
use super::{Policy, LOG_TARGET};
use crate::error::Result;
use crate::mcp::Tool;

/// A tool held now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) front: String,
    pub(crate) reason: HeldReason,
    pub(crate) changed: Vec<String>,
    sha256: String,
}

/// The pins in force: off without a pin file.
pub(crate) struct Pinning {
    path: Option<PathBuf>,
    new_tools: NewTools,
    file: Mutex<PinFile>,
    /// The tools held now, by server and the backend's own name.
    held: Mutex<BTreeMap<(String, String), Held>>,
}

/// What one listing changes in the file.
enum Write {
    Pin(String, ToolDigest),
    Hold(String, PendingPin),
    Forget(String),
}

impl Pinning {
    /// The policy's pin file, read strictly (a file that does not exist is empty).
    pub(crate) fn open(policy: &Policy) -> Result<Pinning> {
        let path = policy.pin_file().map(PathBuf::from);
        let file = match &path {
            Some(path) => PinFile::load(path)?,
            None => PinFile::default(),
        };
        Ok(Pinning {
            path,
            new_tools: policy.new_tools_choice(),
            file: Mutex::new(file),
            held: Mutex::new(BTreeMap::new()),
        })
    }

    /// Reads the pin file again (on `SIGHUP`); on an error the pins read before stay.
    pub(crate) fn reload(&self) -> Result<bool> {
        let Some(path) = &self.path else {
            return Ok(false);
        };
        let file = PinFile::load(path)?;
        *self.file.lock() = file;
        Ok(true)
    }

    /// The tools of `server`'s listing to serve: those pinned as they are listed, new ones
    /// under `"new_tools": "serve"` (pinned now), and the ones `skip` names (the policy's
    /// refusals, never served anyway). The others are held.
    pub(crate) fn admit(
        &self,
        server: &str,
        tools: &[Tool],
        front: impl Fn(&str) -> String,
        skip: impl Fn(&str) -> bool,
    ) -> Vec<Tool> {
        let Some(path) = &self.path else {
            return tools.to_vec();
        };
        let mut file = self.file.lock();
        let mut writes = Vec::new();
        let mut kept = Vec::new();
        let mut held_now = BTreeMap::new();
        for tool in tools {
            let digest = match ToolDigest::of(tool) {
                Ok(digest) if !skip(&tool.name) => digest,
                // Not served anyway: refused by the policy, or a schema that cannot be read.
                _ => {
                    kept.push(tool.clone());
                    continue;
                }
            };
            let (digest, definition) = digest;
            let name = tool.name.clone();
            let (reason, changed) = match file.check(server, &name, &digest) {
                Verdict::Pinned => {
                    if file.pending(server).any(|(pending, _)| pending == name) {
                        writes.push(Write::Forget(name));
                    }
                    kept.push(tool.clone());
                    continue;
                }
                Verdict::New if self.new_tools == NewTools::Serve => {
                    writes.push(Write::Pin(name, digest));
                    kept.push(tool.clone());
                    continue;
                }
                Verdict::New => (HeldReason::New, Vec::new()),
                Verdict::Changed(fields) => (HeldReason::Changed, fields),
            };
            let already = file
                .pending(server)
                .any(|(pending, entry)| pending == name && entry.digest == digest);
            held_now.insert(
                name.clone(),
                Held {
                    front: front(&name),
                    reason,
                    changed: changed.clone(),
                    sha256: digest.sha256.clone(),
                },
            );
            if !already {
                writes.push(Write::Hold(
                    name,
                    PendingPin {
                        digest,
                        reason,
                        changed,
                        definition,
                    },
                ));
            }
        }
        self.note_held(server, &path.display().to_string(), held_now);
        if !writes.is_empty() {
            self.write(&mut file, server, &writes);
        }
        kept
    }

    /// Replaces the tools of `server` held, logging those held anew and those served again.
    fn note_held(&self, server: &str, path: &str, now: BTreeMap<String, Held>) {
        let mut held = self.held.lock();
        for (tool, entry) in &now {
            let before = held.get(&(server.to_owned(), tool.clone()));
            if before.is_some_and(|before| before.sha256 == entry.sha256) {
                continue;
            }
            let why = match entry.reason {
                HeldReason::Changed => format!(
                    "its definition changed since it was pinned ({} differ{})",
                    entry.changed.join(", "),
                    if entry.changed.len() == 1 { "s" } else { "" }
                ),
                HeldReason::New => "it is new and the policy holds new tools".to_owned(),
            };
            log::warn!(
                target: LOG_TARGET,
                "tool {tool:?} of server {server:?} is held (not served): {why}; approve it \
                 with `toolwire pins approve --pins {path} --server {server} --tool {tool}`, \
                 then send SIGHUP to `toolwire serve` or start it again"
            );
        }
        let before: Vec<String> = held
            .keys()
            .filter(|(owner, tool)| owner == server && !now.contains_key(tool))
            .map(|(_, tool)| tool.clone())
            .collect();
        for tool in before {
            held.remove(&(server.to_owned(), tool.clone()));
            log::warn!(
                target: LOG_TARGET,
                "tool {tool:?} of server {server:?} is no longer held: its definition is the \
                 one pinned (or it is no longer listed)"
            );
        }
        for (tool, entry) in now {
            held.insert((server.to_owned(), tool), entry);
        }
    }

    /// Writes `writes` into the file on disk (merged with what is there: an approval
    /// written meanwhile stays), and takes the result as the pins in force.
    fn write(&self, file: &mut PinFile, server: &str, writes: &[Write]) {
        let Some(path) = &self.path else { return };
        let apply = |doc: &mut PinFile| {
            for write in writes {
                match write {
                    Write::Pin(tool, digest) => {
                        if doc.pinned(server, tool).is_none() {
                            doc.pin(server, tool, digest.clone());
                        }
                    }
                    Write::Hold(tool, pending) => {
                        if doc.pinned(server, tool) != Some(&pending.digest) {
                            doc.hold(server, tool, pending.clone());
                        }
                    }
                    Write::Forget(tool) => doc.forget_pending(server, tool),
                }
            }
        };
        let mut disk = match PinFile::load(path) {
            Ok(disk) => disk,
            Err(error) => {
                log::warn!(
                    target: LOG_TARGET,
                    "the pin file cannot be read again, so it is not written (the pins read \
                     before stay in force): {error}"
                );
                apply(file);
                return;
            }
        };
        apply(&mut disk);
        if let Err(error) = disk.save(path) {
            log::warn!(
                target: LOG_TARGET,
                "the pin file {} cannot be written: {error}",
                path.display()
            );
            apply(file);
            return;
        }
        *file = disk;
    }

    /// The tools held now, as `toolwire/stats` lists them.
    pub(crate) fn held_json(&self) -> Value {
        let held = self.held.lock();
        Value::Array(
            held.iter()
                .map(|((server, tool), entry)| {
                    json!({"server": server, "tool": tool, "name": entry.front,
                           "reason": entry.reason.word(), "changed": entry.changed})
                })
                .collect(),
        )
    }

    /// Why the front name `front` is not served, when it is a tool held now.
    pub(crate) fn held_front(&self, front: &str) -> Option<String> {
        let held = self.held.lock();
        let ((server, tool), entry) = held.iter().find(|(_, entry)| entry.front == front)?;
        Some(match entry.reason {
            HeldReason::Changed => format!(
                "the tool {tool:?} of server {server:?} is held: its definition changed since \
                 it was approved ({}), and the operator has not approved the new one",
                entry.changed.join(", ")
            ),
            HeldReason::New => format!(
                "the tool {tool:?} of server {server:?} is held: it is new, and the operator \
                 has not approved it"
            ),
        })
    }
}

impl super::Gateway {
    /// Reads the policy's pin file again ([`Policy::pins`]; `toolwire serve` does on
    /// `SIGHUP`) and lists every backend's tools again, so a definition approved meanwhile
    /// is served and one no longer pinned is held; the front sessions stay. False when
    /// pinning is off.
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) when the file cannot be read or is not valid:
    /// the pins read before stay in force.
    pub fn reload_pins(&self) -> Result<bool> {
        if !self.core.pins.reload()? {
            return Ok(false);
        }
        let weak = std::sync::Arc::downgrade(&self.core);
        let backends: Vec<std::sync::Arc<super::backend::Backend>> =
            self.core.backends.read().values().cloned().collect();
        for backend in &backends {
            super::lists::relist_soon(&weak, backend, super::catalog::TOOLS);
        }
        Ok(true)
    }
}

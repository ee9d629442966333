//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`) on the server: skills
//! given through the library ([`SkillSet::add_skill`]) or read from a directory tree
//! ([`SkillSet::add_tree`]), served by [`SkillSet::serve`] as
//!
//! - the extension, declared under `capabilities.extensions` (`{"directoryRead": true}` when
//!   [`SkillSet::directory_read`] is on, which it is by default);
//! - `skills/list` (paged) and `skills/get`: each entry its `SKILL.md` URI, its frontmatter as
//!   JSON and every file with its `sha256:` digest and size;
//! - every file a resource, `skill://<skill-path>/<file-path>` (the `SKILL.md` named and
//!   described from its frontmatter, `text/markdown`); text as text, other bytes as base64;
//! - `resources/directory/read` (paged): the direct children of any directory of those URIs,
//!   subdirectories with `mimeType: inode/directory`.
//!
//! Skills are held in memory, read once: a served file is the bytes its digest was made of.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::catalog::{Method, ServerResource};
pub use super::skill_tree::SkillLimits;
use super::skill_tree::{read_tree, valid_segment};
use super::state::{cursor, read_cursor};
use super::types::{content, HandlerError};
use super::Server;
use crate::error::{Error, Result};
use crate::mcp::methods;
use crate::mcp::{parse_frontmatter, skill_digest, SKILLS_EXTENSION, SKILL_MD};

/// The MIME type of a directory in `resources/directory/read`.
const DIRECTORY_MIME: &str = "inode/directory";

/// One skill: its path and its files, read and digested.
struct ServedSkill {
    path: String,
    files: BTreeMap<String, Arc<Vec<u8>>>,
    frontmatter: Map<String, Value>,
    entry: Value,
}

/// Skills to serve; see the module documentation.
pub struct SkillSet {
    limits: SkillLimits,
    directory_read: bool,
    page_size: usize,
    skills: Vec<ServedSkill>,
}

impl Default for SkillSet {
    fn default() -> Self {
        SkillSet::new()
    }
}

impl std::fmt::Debug for SkillSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let paths: Vec<&str> = self
            .skills
            .iter()
            .map(|skill| skill.path.as_str())
            .collect();
        f.debug_struct("SkillSet")
            .field("skills", &paths)
            .field("directory_read", &self.directory_read)
            .finish_non_exhaustive()
    }
}

impl SkillSet {
    /// No skills yet, the default limits.
    pub fn new() -> SkillSet {
        SkillSet {
            limits: SkillLimits::default(),
            directory_read: true,
            page_size: 50,
            skills: Vec::new(),
        }
    }

    /// The bounds skills added after this are held to. Defaults to [`SkillLimits::default`].
    pub fn limits(mut self, limits: SkillLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Whether `resources/directory/read` is served and `directoryRead` declared. Defaults to
    /// true.
    pub fn directory_read(mut self, on: bool) -> Self {
        self.directory_read = on;
        self
    }

    /// The most entries of one `skills/list` or `resources/directory/read` page (at least
    /// 1). Defaults to 50.
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// The paths of the skills added so far, in order.
    pub fn paths(&self) -> Vec<&str> {
        self.skills
            .iter()
            .map(|skill| skill.path.as_str())
            .collect()
    }

    /// Adds a skill at `path` (`pdf-processing`, or `acme/billing/refunds`: its last segment
    /// the skill's name) with its files, each a path below the skill (`SKILL.md`,
    /// `references/FORMS.md`) and its bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a path segment or file path that is empty, `.`, `..`, absolute
    /// or not made of URI-unreserved characters; a missing `SKILL.md`; a frontmatter that is
    /// not the subset [`parse_frontmatter`] reads, or whose `name` is not the path's last
    /// segment and a valid skill name (1-64 of `a-z 0-9 -`, no leading, trailing or doubled
    /// `-`), or whose `description` is not 1-1,024 characters; a path already served; a bound
    /// of [`SkillLimits`] crossed.
    pub fn add_skill(
        &mut self,
        path: &str,
        files: impl IntoIterator<Item = (String, Vec<u8>)>,
    ) -> Result<()> {
        let refuse = |why: String| Error::Config(format!("the skill {path:?}: {why}"));
        let segments: Vec<&str> = path.split('/').collect();
        if !segments.iter().all(|segment| valid_segment(segment)) {
            return Err(refuse("its path is not made of URI segments".into()));
        }
        if segments[0].bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(refuse(
                "its first segment (the URI authority) has capitals".into(),
            ));
        }
        if self.skills.iter().any(|skill| skill.path == path) {
            return Err(refuse("already served".into()));
        }
        if self.skills.len() >= self.limits.max_skills {
            return Err(refuse(format!(
                "over {} skills (SkillLimits::max_skills)",
                self.limits.max_skills
            )));
        }
        let mut held = BTreeMap::new();
        let mut total = 0u64;
        for (file, bytes) in files {
            if !file.split('/').all(valid_segment) {
                return Err(refuse(format!(
                    "{file:?} is not a relative path of URI segments"
                )));
            }
            total += bytes.len() as u64;
            if held.insert(file.clone(), Arc::new(bytes)).is_some() {
                return Err(refuse(format!("{file:?} is given twice")));
            }
        }
        if held.len() > self.limits.max_files {
            return Err(refuse(format!(
                "{} files, over SkillLimits::max_files ({})",
                held.len(),
                self.limits.max_files
            )));
        }
        if total > self.limits.max_skill_bytes {
            return Err(refuse(format!(
                "{total} bytes, over SkillLimits::max_skill_bytes ({})",
                self.limits.max_skill_bytes
            )));
        }
        let skill_md = held
            .get(SKILL_MD)
            .ok_or_else(|| refuse("it has no SKILL.md".into()))?;
        let text = std::str::from_utf8(skill_md)
            .map_err(|_| refuse("its SKILL.md is not UTF-8".into()))?;
        let (frontmatter, _) =
            parse_frontmatter(text).map_err(|error| refuse(error.to_string()))?;
        let name = frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if name != *segments.last().unwrap_or(&"") || !valid_name(name) {
            return Err(refuse(format!(
                "its frontmatter name {name:?} is not a valid skill name equal to its directory"
            )));
        }
        let description = frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if description.is_empty() || description.chars().count() > 1024 {
            return Err(refuse("its description is not 1-1,024 characters".into()));
        }
        let entry = entry_of(path, &held, &frontmatter);
        self.skills.push(ServedSkill {
            path: path.to_owned(),
            files: held,
            frontmatter,
            entry,
        });
        Ok(())
    }

    /// Adds every skill of a directory tree: each directory below `root` that holds a
    /// `SKILL.md`, at its path below `root`, with every file below it. Returns how many.
    /// Files outside any skill are not served; names beginning with `.` are skipped.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an unreadable tree, a symbolic link that leaves the tree or
    /// points at a directory, anything but files and directories, a name that is not a URI
    /// segment, a `SKILL.md` at the root itself, a bound of [`SkillLimits`] crossed
    /// (`max_depth`, `max_entries`, `max_tree_bytes` while reading), and whatever
    /// [`SkillSet::add_skill`] refuses. Nothing is added unless every skill is.
    pub fn add_tree(&mut self, root: impl AsRef<Path>) -> Result<usize> {
        let root = root.as_ref();
        let files = read_tree(root, &self.limits)?;
        let mut skill_dirs: Vec<&[String]> = files
            .iter()
            .filter(|file| file.segments.last().map(String::as_str) == Some(SKILL_MD))
            .map(|file| &file.segments[..file.segments.len() - 1])
            .collect();
        if skill_dirs.iter().any(|dir| dir.is_empty()) {
            return Err(Error::Config(format!(
                "the skill tree {}: a SKILL.md at the root; serve its parent directory",
                root.display()
            )));
        }
        skill_dirs.sort();
        let before = self.skills.len();
        for dir in &skill_dirs {
            let skill_files = files
                .iter()
                .filter(|file| file.segments.starts_with(dir))
                .map(|file| (file.segments[dir.len()..].join("/"), file.bytes.clone()));
            if let Err(error) = self.add_skill(&dir.join("/"), skill_files) {
                self.skills.truncate(before);
                return Err(error);
            }
        }
        Ok(skill_dirs.len())
    }

    /// Serves the skills on `server`: each file a resource, `skills/list`, `skills/get` and
    /// (with [`SkillSet::directory_read`]) `resources/directory/read`, and the extension
    /// declared.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when one of those methods or resources is already served (two
    /// skills may share a file, a nested skill's, only with the same bytes).
    pub fn serve(self, server: &Server) -> Result<()> {
        let mut resources: BTreeMap<String, (Arc<Vec<u8>>, ServerResource)> = BTreeMap::new();
        for skill in &self.skills {
            for (file, bytes) in &skill.files {
                let uri = file_uri(&skill.path, file);
                if let Some((known, _)) = resources.get(&uri) {
                    if known != bytes {
                        return Err(Error::Config(format!("{uri} is served with two contents")));
                    }
                    continue;
                }
                let resource = file_resource(&uri, file, bytes.clone(), &skill.frontmatter);
                resources.insert(uri, (bytes.clone(), resource));
            }
        }
        let directories = Arc::new(directory_index(resources.keys()));
        let shared = Arc::new(self);
        let list = shared.clone();
        server.add_method(
            Method::new(methods::SKILLS_LIST, move |_, params| list.list(params)).inline(true),
        )?;
        let get = shared.clone();
        server.add_method(
            Method::new(methods::SKILLS_GET, move |_, params| get.get(params)).inline(true),
        )?;
        if shared.directory_read {
            let page_size = shared.page_size;
            server.add_method(
                Method::new(methods::RESOURCES_DIRECTORY_READ, move |_, params| {
                    read_directory(&directories, page_size, params)
                })
                .inline(true),
            )?;
        }
        for (_, (_, resource)) in resources {
            server.add_resource(resource)?;
        }
        let settings = if shared.directory_read {
            json!({"directoryRead": true})
        } else {
            json!({})
        };
        server.declare_extension(SKILLS_EXTENSION, settings);
        Ok(())
    }

    fn list(&self, params: &Value) -> std::result::Result<Value, HandlerError> {
        let start = page_start(params)?;
        let end = (start + self.page_size).min(self.skills.len());
        let page: Vec<Value> = self.skills[start.min(end)..end]
            .iter()
            .map(|skill| skill.entry.clone())
            .collect();
        let mut result = json!({"skills": page});
        if end < self.skills.len() {
            result["nextCursor"] = Value::from(cursor(end));
        }
        Ok(result)
    }

    fn get(&self, params: &Value) -> std::result::Result<Value, HandlerError> {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| HandlerError::invalid_params("skills/get needs a `uri`"))?;
        self.skills
            .iter()
            .find(|skill| skill.entry["uri"] == uri)
            .map(|skill| json!({"skill": skill.entry.clone()}))
            .ok_or_else(|| HandlerError::invalid_params(format!("no skill is served at {uri}")))
    }
}

/// 1-64 of `a-z 0-9 -`, no leading, trailing or doubled `-` (Agent Skills).
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn file_uri(path: &str, file: &str) -> String {
    format!("skill://{path}/{file}")
}

fn entry_of(
    path: &str,
    files: &BTreeMap<String, Arc<Vec<u8>>>,
    frontmatter: &Map<String, Value>,
) -> Value {
    // SKILL.md first, then the rest in path order.
    let ordered = files
        .iter()
        .filter(|(file, _)| *file == SKILL_MD)
        .chain(files.iter().filter(|(file, _)| *file != SKILL_MD));
    let resources: Vec<Value> = ordered
        .map(|(file, bytes)| {
            json!({"uri": file_uri(path, file), "digest": skill_digest(bytes), "size": bytes.len()})
        })
        .collect();
    json!({
        "uri": file_uri(path, SKILL_MD),
        "frontmatter": frontmatter,
        "resources": resources,
    })
}

fn mime_of(file: &str, text: bool) -> &'static str {
    let extension = file
        .rsplit_once('.')
        .map(|(_, ext)| ext)
        .unwrap_or_default();
    match extension.to_ascii_lowercase().as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ if text => "text/plain",
        _ => "application/octet-stream",
    }
}

fn file_resource(
    uri: &str,
    file: &str,
    bytes: Arc<Vec<u8>>,
    frontmatter: &Map<String, Value>,
) -> ServerResource {
    let text = std::str::from_utf8(&bytes).is_ok();
    let mime = mime_of(file, text);
    let read = move |_: &super::RequestContext, uri: &str| {
        Ok(vec![match std::str::from_utf8(&bytes) {
            Ok(text) => content::text_contents(uri, Some(mime), text),
            Err(_) => content::blob_contents(
                uri,
                Some(mime),
                base64::engine::general_purpose::STANDARD.encode(bytes.as_slice()),
            ),
        }])
    };
    if file == SKILL_MD {
        let text = |key: &str| {
            frontmatter
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        ServerResource::new(uri, text("name"), read)
            .description(text("description"))
            .mime_type(mime)
    } else {
        ServerResource::new(uri, file, read).mime_type(mime)
    }
}

/// Every directory of the served URIs, with its direct children: a child's listing by name.
fn directory_index<'a>(
    uris: impl Iterator<Item = &'a String>,
) -> BTreeMap<String, BTreeMap<String, Value>> {
    let mut index: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for uri in uris {
        let path = uri.strip_prefix("skill://").unwrap_or(uri);
        let segments: Vec<&str> = path.split('/').collect();
        for depth in 1..segments.len() {
            let dir = format!("skill://{}", segments[..depth].join("/"));
            let name = segments[depth];
            let child = if depth + 1 == segments.len() {
                json!({"uri": uri, "name": name, "mimeType": mime_of(name, true)})
            } else {
                json!({"uri": format!("{dir}/{name}"), "name": name, "mimeType": DIRECTORY_MIME})
            };
            index
                .entry(dir)
                .or_default()
                .entry(name.to_owned())
                .or_insert(child);
        }
    }
    index
}

fn read_directory(
    index: &BTreeMap<String, BTreeMap<String, Value>>,
    page_size: usize,
    params: &Value,
) -> std::result::Result<Value, HandlerError> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| HandlerError::invalid_params("resources/directory/read needs a `uri`"))?;
    let children = index
        .get(uri)
        .ok_or_else(|| HandlerError::invalid_params(format!("{uri} is not a served directory")))?;
    let start = page_start(params)?;
    let page: Vec<Value> = children
        .values()
        .skip(start)
        .take(page_size)
        .cloned()
        .collect();
    let mut result = json!({"resources": page});
    if start + page_size < children.len() {
        result["nextCursor"] = Value::from(cursor(start + page_size));
    }
    Ok(result)
}

fn page_start(params: &Value) -> std::result::Result<usize, HandlerError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(text)) => {
            read_cursor(text).ok_or_else(|| HandlerError::invalid_params("an unknown cursor"))
        }
        Some(_) => Err(HandlerError::invalid_params("`cursor` is not a string")),
    }
}

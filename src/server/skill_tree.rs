//! Reading a directory tree of skills from disk, within bounds and confined to the tree.
//!
//! Every directory holding a `SKILL.md` is a skill, its path below the root the skill's path
//! (`acme/billing/refunds` is served as `skill://acme/billing/refunds/SKILL.md`), and every
//! file below it one of its files, nested skills' files included. The tree is read once, when
//! it is added: what is served is what was read and digested, whatever the disk does later.

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The bounds of skills served from a tree or the library API. Each is finite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillLimits {
    /// The most files one skill has. Defaults to 512 (the SEP's SHOULD).
    pub max_files: usize,
    /// The most bytes of one skill, its files summed. Defaults to 16 MiB (the SEP's SHOULD).
    pub max_skill_bytes: u64,
    /// The deepest directory below the tree's root (a file directly in the root is at depth
    /// 0). Defaults to 8.
    pub max_depth: usize,
    /// The most entries (files and directories) one tree walk visits. Defaults to 4,096.
    pub max_entries: usize,
    /// The most bytes one tree walk reads, all files summed. Defaults to 64 MiB.
    pub max_tree_bytes: u64,
    /// The most skills a set serves. Defaults to 1,000.
    pub max_skills: usize,
}

impl Default for SkillLimits {
    fn default() -> Self {
        SkillLimits {
            max_files: 512,
            max_skill_bytes: 16 * 1024 * 1024,
            max_depth: 8,
            max_entries: 4096,
            max_tree_bytes: 64 * 1024 * 1024,
            max_skills: 1000,
        }
    }
}

/// A file of the tree: its path below the root, in segments, and its bytes.
pub(crate) struct TreeFile {
    pub(crate) segments: Vec<String>,
    pub(crate) bytes: Vec<u8>,
}

fn refused(root: &Path, why: impl std::fmt::Display) -> Error {
    Error::Config(format!("the skill tree {}: {why}", root.display()))
}

/// One segment of a skill path or file path: RFC 3986 unreserved characters only, and not
/// `.` or `..`.
pub(crate) fn valid_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Reads every file below `root`. Names beginning with `.` are skipped (not served).
/// Refused: a name that is not a valid URI segment, a symbolic link whose target is outside
/// the tree or is a directory, anything but files and directories, and any bound crossed.
pub(crate) fn read_tree(root: &Path, limits: &SkillLimits) -> Result<Vec<TreeFile>> {
    let real_root = fs::canonicalize(root).map_err(|error| refused(root, error))?;
    if !real_root.is_dir() {
        return Err(refused(root, "not a directory"));
    }
    let mut files = Vec::new();
    let mut entries = 0usize;
    let mut bytes = 0u64;
    let mut pending: Vec<(PathBuf, Vec<String>)> = vec![(real_root.clone(), Vec::new())];
    while let Some((dir, segments)) = pending.pop() {
        let mut children: Vec<fs::DirEntry> = fs::read_dir(&dir)
            .map_err(|error| refused(root, format!("{}: {error}", dir.display())))?
            .collect::<std::io::Result<_>>()
            .map_err(|error| refused(root, error))?;
        children.sort_by_key(|child| child.file_name());
        for child in children {
            let path = child.path();
            let Some(name) = child.file_name().to_str().map(str::to_owned) else {
                return Err(refused(root, format!("{} is not UTF-8", path.display())));
            };
            if name.starts_with('.') {
                continue;
            }
            entries += 1;
            if entries > limits.max_entries {
                return Err(refused(
                    root,
                    format!(
                        "over {} entries (SkillLimits::max_entries)",
                        limits.max_entries
                    ),
                ));
            }
            if !valid_segment(&name) {
                return Err(refused(
                    root,
                    format!("{name:?} is not a URI path segment (A-Z a-z 0-9 - . _ ~)"),
                ));
            }
            let mut below = segments.clone();
            below.push(name);
            let kind = fs::symlink_metadata(&path).map_err(|error| refused(root, error))?;
            let target = if kind.file_type().is_symlink() {
                let target = fs::canonicalize(&path)
                    .map_err(|error| refused(root, format!("{}: {error}", path.display())))?;
                if !target.starts_with(&real_root) {
                    return Err(refused(
                        root,
                        format!("{} links outside the tree", path.display()),
                    ));
                }
                if target.is_dir() {
                    return Err(refused(
                        root,
                        format!("{} links to a directory", path.display()),
                    ));
                }
                target
            } else {
                path.clone()
            };
            let kind = fs::symlink_metadata(&target).map_err(|error| refused(root, error))?;
            if kind.is_dir() {
                if below.len() > limits.max_depth {
                    return Err(refused(
                        root,
                        format!(
                            "{} is deeper than {} (SkillLimits::max_depth)",
                            path.display(),
                            limits.max_depth
                        ),
                    ));
                }
                pending.push((target, below));
            } else if kind.is_file() {
                let left = limits
                    .max_tree_bytes
                    .saturating_sub(bytes)
                    .min(limits.max_skill_bytes);
                let content = read_bounded(&target, left)
                    .map_err(|error| refused(root, format!("{}: {error}", path.display())))?
                    .ok_or_else(|| {
                        refused(
                            root,
                            format!(
                                "{} crosses SkillLimits::max_tree_bytes or max_skill_bytes",
                                path.display()
                            ),
                        )
                    })?;
                bytes += content.len() as u64;
                files.push(TreeFile {
                    segments: below,
                    bytes: content,
                });
            } else {
                return Err(refused(
                    root,
                    format!("{} is neither a file nor a directory", path.display()),
                ));
            }
        }
    }
    Ok(files)
}

/// The bytes of the file at `path`, not following a link there, when at most `limit`.
/// Opened without blocking, so a FIFO swapped in after the check is refused, not waited on.
fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

//! Reading a config file or an `envFile` as data: a regular file, no larger than a bound.
//!
//! A path in a config can name anything, and a cloned repository chooses what its
//! `.vscode/mcp.json` or `.env` is: a FIFO blocks a reader until a writer comes (forever when
//! none does), a device such as `/dev/zero` never ends, and a symlink can point at either. So
//! a file is read in four steps:
//!
//! 1. The path's metadata (symlinks followed) must be a regular file, so a device is never
//!    even opened: opening some devices has effects of its own.
//! 2. The open is non-blocking on Unix (`O_NONBLOCK`), so a path swapped for a FIFO after the
//!    first check cannot make the open wait for a writer. (Elsewhere there is no such FIFO:
//!    Windows' named pipes live apart from files, and opening one never waits.)
//! 3. The opened file's own metadata decides, so no swap between the check and the open slips
//!    through; its size must be within the bound.
//! 4. At most one byte past the bound is read, so a file that grows while it is read is still
//!    bounded.

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub(super) enum ReadRefusal {
    /// Not a regular file; says what it is instead ("a FIFO", "a directory", …).
    NotRegular(&'static str),
    /// Larger than the bound (`size` is `None` when it grew past it while read).
    TooLarge { size: Option<u64>, max: usize },
    /// The file could not be opened or read, or is not UTF-8.
    Io(io::Error),
}

impl ReadRefusal {
    /// The problem in words, after the path: `{path} is a FIFO, not a regular file`. `knob`
    /// names the setter of the bound, for the size message.
    pub(super) fn describe(&self, path: &Path, knob: &str) -> String {
        let path = path.display();
        match self {
            ReadRefusal::NotRegular(kind) => format!("{path} is {kind}, not a regular file"),
            ReadRefusal::TooLarge {
                size: Some(size),
                max,
            } => format!(
                "{path} is {size} bytes, more than the limit of {max} bytes (LoadOptions::{knob})"
            ),
            ReadRefusal::TooLarge { size: None, max } => format!(
                "{path} grew while read to more than the limit of {max} bytes \
                 (LoadOptions::{knob})"
            ),
            ReadRefusal::Io(error) => format!("cannot read {path}: {error}"),
        }
    }
}

/// Reads the regular file at `path` as UTF-8 text of at most `max_bytes` bytes; see the module
/// docs.
pub(super) fn read_regular(path: &Path, max_bytes: usize) -> Result<String, ReadRefusal> {
    let before = std::fs::metadata(path).map_err(ReadRefusal::Io)?;
    check_kind(&before.file_type())?;
    let file = open(path).map_err(ReadRefusal::Io)?;
    let opened = file.metadata().map_err(ReadRefusal::Io)?;
    check_kind(&opened.file_type())?;
    let max = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    if opened.len() > max {
        return Err(ReadRefusal::TooLarge {
            size: Some(opened.len()),
            max: max_bytes,
        });
    }
    // The length is at most `max_bytes`, so it fits a usize.
    let expected = usize::try_from(opened.len()).unwrap_or(max_bytes);
    let mut bytes = Vec::with_capacity(expected.saturating_add(1));
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadRefusal::Io)?;
    if bytes.len() > max_bytes {
        return Err(ReadRefusal::TooLarge {
            size: None,
            max: max_bytes,
        });
    }
    String::from_utf8(bytes).map_err(|error| {
        ReadRefusal::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text ({error})"),
        ))
    })
}

#[cfg(unix)]
fn open(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // On a regular file O_NONBLOCK changes nothing; on a FIFO it makes the open return at
    // once, and the metadata check that follows refuses it.
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).open(path)
}

fn check_kind(file_type: &FileType) -> Result<(), ReadRefusal> {
    if file_type.is_file() {
        Ok(())
    } else {
        Err(ReadRefusal::NotRegular(kind_of(file_type)))
    }
}

/// What a file that is not a regular file is, for the message.
fn kind_of(file_type: &FileType) -> &'static str {
    if file_type.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "something else"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "toolwire-config-file-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_regular_file_within_the_bound_is_read_and_one_byte_more_is_not() {
        let dir = scratch("bound");
        let path = dir.join("f");
        std::fs::write(&path, "abcd").unwrap();
        assert_eq!(read_regular(&path, 4).unwrap(), "abcd");
        let refusal = read_regular(&path, 3).unwrap_err();
        assert!(
            matches!(
                refusal,
                ReadRefusal::TooLarge {
                    size: Some(4),
                    max: 3
                }
            ),
            "{refusal:?}"
        );
        assert_eq!(
            refusal.describe(Path::new("f"), "max_config_bytes"),
            "f is 4 bytes, more than the limit of 3 bytes (LoadOptions::max_config_bytes)"
        );
    }

    #[test]
    fn a_directory_is_named_as_one() {
        let dir = scratch("dir");
        let refusal = read_regular(&dir, 10).unwrap_err();
        assert_eq!(
            refusal.describe(Path::new("d"), "max_config_bytes"),
            "d is a directory, not a regular file"
        );
    }

    #[test]
    fn text_that_is_not_utf8_is_an_io_error() {
        let dir = scratch("utf8");
        let path = dir.join("f");
        std::fs::write(&path, b"\xff").unwrap();
        assert!(matches!(
            read_regular(&path, 10),
            Err(ReadRefusal::Io(error)) if error.kind() == io::ErrorKind::InvalidData
        ));
    }
}

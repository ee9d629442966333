//! RESP2, the protocol Redis speaks: commands out as arrays of bulk strings, replies in as one
//! of five types. Replies come from the network and are untrusted: every length is bounded
//! before anything is allocated for it, and so are arrays' items, their nesting and a reply's
//! total size.

use std::io::{self, BufRead};

/// A reply, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`.
    Simple(String),
    /// `-ERR …`: the server refused the command.
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$3\r\nabc` (`None`: `$-1`, nothing).
    Bulk(Option<Vec<u8>>),
    /// `*2\r\n…` (`None`: `*-1`).
    Array(Option<Vec<Reply>>),
}

/// What a reply may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest bulk string.
    pub max_bulk: usize,
    /// The most items of one array.
    pub max_items: usize,
    /// The deepest nesting of arrays (1: an array of scalars).
    pub max_depth: usize,
    /// The most bytes of one reply, everything counted.
    pub max_total: usize,
}

/// The longest line of a simple string, an error or a length.
const MAX_LINE: usize = 64 * 1024;

/// One command as RESP2 sends it: an array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|arg| arg.len() + 16).sum::<usize>());
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A reply as a server would send it (for the tests and the fuzz target's round trip).
pub fn encode_reply(reply: &Reply) -> Vec<u8> {
    let mut out = Vec::new();
    write_reply(reply, &mut out);
    out
}

fn write_reply(reply: &Reply, out: &mut Vec<u8>) {
    match reply {
        Reply::Simple(text) => out.extend_from_slice(format!("+{text}\r\n").as_bytes()),
        Reply::Error(text) => out.extend_from_slice(format!("-{text}\r\n").as_bytes()),
        Reply::Integer(number) => out.extend_from_slice(format!(":{number}\r\n").as_bytes()),
        Reply::Bulk(None) => out.extend_from_slice(b"$-1\r\n"),
        Reply::Bulk(Some(bytes)) => {
            out.extend_from_slice(format!("${}\r\n", bytes.len()).as_bytes());
            out.extend_from_slice(bytes);
            out.extend_from_slice(b"\r\n");
        }
        Reply::Array(None) => out.extend_from_slice(b"*-1\r\n"),
        Reply::Array(Some(items)) => {
            out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
            for item in items {
                write_reply(item, out);
            }
        }
    }
}

fn invalid(text: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, text.into())
}

/// Reads one reply within `limits`.
///
/// # Errors
///
/// The reader's error, [`io::ErrorKind::UnexpectedEof`] for a reply cut short, and
/// [`io::ErrorKind::InvalidData`] for anything that is not RESP2 or breaks a limit.
pub fn read_reply(reader: &mut impl BufRead, limits: &Limits) -> io::Result<Reply> {
    let mut total = 0usize;
    read_at(reader, limits, 0, &mut total)
}

fn read_at(
    reader: &mut impl BufRead,
    limits: &Limits,
    depth: usize,
    total: &mut usize,
) -> io::Result<Reply> {
    let line = read_line(reader, total, limits)?;
    let (kind, rest) = line
        .split_first()
        .ok_or_else(|| invalid("an empty reply line"))?;
    let text =
        || String::from_utf8(rest.to_vec()).map_err(|_| invalid("a reply line that is not UTF-8"));
    match kind {
        b'+' => Ok(Reply::Simple(text()?)),
        b'-' => Ok(Reply::Error(text()?)),
        b':' => Ok(Reply::Integer(number(rest)?)),
        b'$' => {
            let Some(length) = length(rest)? else {
                return Ok(Reply::Bulk(None));
            };
            if length > limits.max_bulk {
                return Err(invalid(format!(
                    "a bulk string of {length} bytes, past the limit of {}",
                    limits.max_bulk
                )));
            }
            charge(total, length + 2, limits)?;
            let mut bytes = vec![0u8; length + 2];
            reader.read_exact(&mut bytes).map_err(|error| {
                if error.kind() == io::ErrorKind::UnexpectedEof {
                    cut_short()
                } else {
                    error
                }
            })?;
            if !bytes.ends_with(b"\r\n") {
                return Err(invalid("a bulk string not ended by CRLF"));
            }
            bytes.truncate(length);
            Ok(Reply::Bulk(Some(bytes)))
        }
        b'*' => {
            let Some(count) = length(rest)? else {
                return Ok(Reply::Array(None));
            };
            if depth + 1 > limits.max_depth {
                return Err(invalid(format!(
                    "arrays nested past the limit of {}",
                    limits.max_depth
                )));
            }
            if count > limits.max_items {
                return Err(invalid(format!(
                    "an array of {count} items, past the limit of {}",
                    limits.max_items
                )));
            }
            // Each item takes at least three bytes (`:0\r\n` is four): a count past what the
            // total can still hold is refused before anything is allocated for it.
            charge(total, count.saturating_mul(3), limits)?;
            *total -= count * 3;
            let mut items = Vec::with_capacity(count);
            for _ in 0..count {
                items.push(read_at(reader, limits, depth + 1, total)?);
            }
            Ok(Reply::Array(Some(items)))
        }
        other => Err(invalid(format!(
            "a reply of unknown type {:?}",
            char::from(*other)
        ))),
    }
}

fn cut_short() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "the reply was cut short")
}

/// Counts `bytes` more against the reply's total.
fn charge(total: &mut usize, bytes: usize, limits: &Limits) -> io::Result<()> {
    *total = total.saturating_add(bytes);
    if *total > limits.max_total {
        return Err(invalid(format!(
            "a reply past the limit of {} bytes",
            limits.max_total
        )));
    }
    Ok(())
}

/// One line without its CRLF, at most [`MAX_LINE`] bytes.
fn read_line(reader: &mut impl BufRead, total: &mut usize, limits: &Limits) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Err(cut_short());
        }
        let (used, done) = match available.iter().position(|&byte| byte == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..used]);
        reader.consume(used);
        if line.len() > MAX_LINE + 2 {
            return Err(invalid(format!("a reply line past {MAX_LINE} bytes")));
        }
        if done {
            break;
        }
    }
    charge(total, line.len(), limits)?;
    if !line.ends_with(b"\r\n") {
        return Err(invalid("a reply line not ended by CRLF"));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}

fn number(digits: &[u8]) -> io::Result<i64> {
    std::str::from_utf8(digits)
        .ok()
        .filter(|text| !text.starts_with('+'))
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| invalid("a reply number that is not an integer"))
}

/// A length: `None` for `-1`.
fn length(digits: &[u8]) -> io::Result<Option<usize>> {
    match number(digits)? {
        -1 => Ok(None),
        n if n < 0 => Err(invalid(format!("a negative length {n}"))),
        n => usize::try_from(n)
            .map(Some)
            .map_err(|_| invalid("a length past this machine's")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_bulk: 16,
        max_items: 4,
        max_depth: 2,
        max_total: 256,
    };

    fn read(bytes: &[u8]) -> io::Result<Reply> {
        read_reply(&mut &bytes[..], &LIMITS)
    }

    #[test]
    fn every_type_is_read_and_written_back() {
        for bytes in [
            &b"+OK\r\n"[..],
            b"-ERR wrong\r\n",
            b":-42\r\n",
            b"$3\r\na\r\n\r\n",
            b"$-1\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"*2\r\n:1\r\n*1\r\n$0\r\n\r\n",
        ] {
            let reply = read(bytes).unwrap();
            assert_eq!(encode_reply(&reply), bytes);
        }
        assert_eq!(
            encode(&[b"GET", b"k"]),
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n".to_vec()
        );
    }

    #[test]
    fn hostile_replies_are_refused_before_anything_is_allocated() {
        for (bytes, says) in [
            (&b"$17\r\n"[..], "past the limit of 16"),
            (b"$9223372036854775807\r\n", "past the limit"),
            (b"*5\r\n", "5 items"),
            (b"*1\r\n*1\r\n*1\r\n:1\r\n", "nested"),
            (b"*4\r\n$16\r\n", "cut short"),
            (b"$-2\r\n", "negative"),
            (b":+1\r\n", "not an integer"),
            (b"?\r\n", "unknown type"),
            (b"+OK\n", "CRLF"),
            (b"$2\r\nabcd", "CRLF"),
            (b"", "cut short"),
        ] {
            let error = read(bytes).unwrap_err().to_string();
            assert!(error.contains(says), "{bytes:?}: {error}");
        }
        // The total counts everything: many small items past it are refused.
        let mut many = b"*4\r\n".to_vec();
        for _ in 0..4 {
            many.extend_from_slice(b"*4\r\n$16\r\n0123456789abcdef\r\n$16\r\n0123456789abcdef\r\n$16\r\n0123456789abcdef\r\n$16\r\n0123456789abcdef\r\n");
        }
        let error = read(&many).unwrap_err().to_string();
        assert!(error.contains("256 bytes"), "{error}");
        // A line without an end is bounded too.
        let long = vec![b'+'; MAX_LINE + 8];
        let error = read(&long).unwrap_err().to_string();
        assert!(error.contains("reply line past"), "{error}");
    }
}

//! A small line editor for `shell`: the terminal in raw mode while a line is typed (and only
//! then, so a running call gets Ctrl-C as SIGINT), left/right, Home/End, Backspace/Delete,
//! Ctrl-A/E/U/K/W, up/down through the history, Ctrl-C clears the line, Ctrl-D on an empty
//! line ends. Written here rather than taken from a crate: this is all `shell` needs, and the
//! crates that do more (rustyline, reedline) bring a dozen dependencies to the `cli` feature.
//! When stdin is not a terminal, lines are read as they come.

use std::io::{BufRead, IsTerminal, Read, Write};

/// The most entries kept in the history.
const MAX_HISTORY: usize = 1000;
/// The longest line accepted (bytes).
const MAX_LINE: usize = 64 * 1024;

/// What reading a line gave.
pub enum Line {
    /// A line (without its end).
    Text(String),
    /// Ctrl-C at the prompt: the line was dropped.
    Interrupted,
    /// End of input (Ctrl-D on an empty line, or stdin closed).
    End,
}

/// The editor and its history.
pub struct Editor {
    history: Vec<String>,
    terminal: bool,
}

impl Editor {
    /// An editor on stdin; raw mode only when stdin and stdout are terminals.
    pub fn new() -> Editor {
        Editor {
            history: Vec::new(),
            terminal: std::io::stdin().is_terminal() && std::io::stdout().is_terminal(),
        }
    }

    /// The history, oldest first.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Adds a line to the history (not a repeat of the last one, nor a blank one).
    pub fn remember(&mut self, line: &str) {
        if line.trim().is_empty() || self.history.last().is_some_and(|last| last == line) {
            return;
        }
        if self.history.len() == MAX_HISTORY {
            self.history.remove(0);
        }
        self.history.push(line.to_owned());
    }

    /// Reads one line after showing `prompt`.
    pub fn read(&mut self, prompt: &str) -> Line {
        if !self.terminal {
            return read_plain();
        }
        match raw::Raw::enter() {
            Ok(raw) => {
                let line = self.edit(prompt);
                drop(raw);
                line
            }
            Err(error) => {
                log::debug!("no raw mode ({error}); reading plain lines");
                self.terminal = false;
                show(prompt);
                read_plain()
            }
        }
    }

    fn edit(&mut self, prompt: &str) -> Line {
        let mut line: Vec<char> = Vec::new();
        let mut cursor = 0usize;
        // Where in the history up/down is: `history.len()` is the line being typed.
        let mut at = self.history.len();
        let mut typed: Vec<char> = Vec::new();
        let mut input = std::io::stdin().lock();
        redraw(prompt, &line, cursor);
        loop {
            let Some(byte) = next_byte(&mut input) else {
                show("\r\n");
                return Line::End;
            };
            match byte {
                b'\r' | b'\n' => {
                    show("\r\n");
                    return Line::Text(line.into_iter().collect());
                }
                3 => {
                    show("^C\r\n");
                    return Line::Interrupted;
                }
                4 if line.is_empty() => {
                    show("\r\n");
                    return Line::End;
                }
                4 => {
                    if cursor < line.len() {
                        line.remove(cursor);
                    }
                }
                1 => cursor = 0,
                5 => cursor = line.len(),
                2 => cursor = cursor.saturating_sub(1),
                6 => cursor = (cursor + 1).min(line.len()),
                11 => line.truncate(cursor),
                21 => {
                    line.drain(..cursor);
                    cursor = 0;
                }
                23 => {
                    let mut start = cursor;
                    while start > 0 && line[start - 1] == ' ' {
                        start -= 1;
                    }
                    while start > 0 && line[start - 1] != ' ' {
                        start -= 1;
                    }
                    line.drain(start..cursor);
                    cursor = start;
                }
                8 | 127 => {
                    if cursor > 0 {
                        cursor -= 1;
                        line.remove(cursor);
                    }
                }
                27 => match escape(&mut input) {
                    Key::Up | Key::Down if self.history.is_empty() => {}
                    Key::Up => {
                        if at == self.history.len() {
                            typed.clone_from(&line);
                        }
                        at = at.saturating_sub(1);
                        line = self.history[at].chars().collect();
                        cursor = line.len();
                    }
                    Key::Down => {
                        if at < self.history.len() {
                            at += 1;
                            line = if at == self.history.len() {
                                typed.clone()
                            } else {
                                self.history[at].chars().collect()
                            };
                            cursor = line.len();
                        }
                    }
                    Key::Left => cursor = cursor.saturating_sub(1),
                    Key::Right => cursor = (cursor + 1).min(line.len()),
                    Key::Home => cursor = 0,
                    Key::End => cursor = line.len(),
                    Key::Delete => {
                        if cursor < line.len() {
                            line.remove(cursor);
                        }
                    }
                    Key::Other => {}
                },
                byte if byte < 32 => {}
                byte => {
                    if let Some(c) = utf8_char(byte, &mut input) {
                        if line.len() * 4 < MAX_LINE {
                            line.insert(cursor, c);
                            cursor += 1;
                        }
                    }
                }
            }
            redraw(prompt, &line, cursor);
        }
    }
}

/// A key from an escape sequence.
enum Key {
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    Delete,
    Other,
}

/// Reads the rest of an escape sequence: `ESC [ A`, `ESC O H`, `ESC [ 3 ~`, ...
fn escape(input: &mut impl Read) -> Key {
    let Some(kind) = next_byte(input) else {
        return Key::Other;
    };
    if kind != b'[' && kind != b'O' {
        return Key::Other;
    }
    let mut parameter = Vec::new();
    loop {
        let Some(byte) = next_byte(input) else {
            return Key::Other;
        };
        match byte {
            b'0'..=b'9' | b';' if parameter.len() < 8 => parameter.push(byte),
            b'A' => return Key::Up,
            b'B' => return Key::Down,
            b'C' => return Key::Right,
            b'D' => return Key::Left,
            b'H' => return Key::Home,
            b'F' => return Key::End,
            b'~' => {
                return match parameter.as_slice() {
                    b"1" | b"7" => Key::Home,
                    b"4" | b"8" => Key::End,
                    b"3" => Key::Delete,
                    _ => Key::Other,
                }
            }
            _ => return Key::Other,
        }
    }
}

fn next_byte(input: &mut impl Read) -> Option<u8> {
    let mut byte = [0u8; 1];
    loop {
        match input.read(&mut byte) {
            Ok(0) => return None,
            Ok(_) => return Some(byte[0]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

/// The character that starts with `first`, reading its continuation bytes.
fn utf8_char(first: u8, input: &mut impl Read) -> Option<char> {
    let length = match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return None,
    };
    let mut bytes = vec![first];
    for _ in 1..length {
        bytes.push(next_byte(input)?);
    }
    std::str::from_utf8(&bytes).ok()?.chars().next()
}

fn show(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Draws the prompt and the line, and puts the cursor in place. What was typed is shown
/// with its control characters escaped (pasted text may hold some).
fn redraw(prompt: &str, line: &[char], cursor: usize) {
    let text: String = line.iter().collect();
    let after: String = line[cursor..].iter().collect();
    let shown = crate::terminal::shown_line(&text);
    let back = crate::terminal::shown_line(&after).chars().count();
    let mut frame = format!("\r{prompt}{shown}\x1b[K");
    if back > 0 {
        frame.push_str(&format!("\x1b[{back}D"));
    }
    show(&frame);
}

fn read_plain() -> Line {
    let mut line = String::new();
    let stdin = std::io::stdin();
    let read = stdin
        .lock()
        .take(MAX_LINE as u64)
        .read_line(&mut line)
        .unwrap_or(0);
    if read == 0 {
        return Line::End;
    }
    Line::Text(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Splits a line into words as a shell would: spaces separate, `'...'` and `"..."` quote,
/// `\` escapes the next character (outside single quotes).
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a ' is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => return Err("a \" is not closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a \" is not closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The terminal's raw mode, restored when dropped.
mod raw {
    /// The terminal settings to restore.
    pub struct Raw {
        #[cfg(unix)]
        saved: libc::termios,
    }

    impl Raw {
        /// Puts stdin's terminal in raw mode: no line buffering, no echo, no signals from
        /// keys (Ctrl-C arrives as a byte), no flow control; output processing kept.
        #[cfg(unix)]
        pub fn enter() -> std::io::Result<Raw> {
            #[allow(unsafe_code)]
            // SAFETY: tcgetattr fills a zeroed termios we own for fd 0; tcsetattr reads a
            // copy of it; both only touch the terminal's settings.
            unsafe {
                let mut saved: libc::termios = std::mem::zeroed();
                if libc::tcgetattr(0, &mut saved) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let mut raw = saved;
                raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN);
                raw.c_iflag &= !(libc::IXON | libc::ICRNL);
                raw.c_cc[libc::VMIN] = 1;
                raw.c_cc[libc::VTIME] = 0;
                if libc::tcsetattr(0, libc::TCSADRAIN, &raw) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(Raw { saved })
            }
        }

        #[cfg(not(unix))]
        pub fn enter() -> std::io::Result<Raw> {
            Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "line editing needs a Unix terminal",
            ))
        }
    }

    impl Drop for Raw {
        fn drop(&mut self) {
            #[cfg(unix)]
            #[allow(unsafe_code)]
            // SAFETY: restores the settings tcgetattr gave, from a termios we own.
            unsafe {
                libc::tcsetattr(0, libc::TCSADRAIN, &self.saved);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_like_a_shell() {
        assert_eq!(
            split(r#"call echo message='hello world' "x=a \"b\"" c\ d"#).unwrap(),
            ["call", "echo", "message=hello world", "x=a \"b\"", "c d"]
        );
        assert_eq!(split("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split("a ''").unwrap(), ["a", ""]);
        assert!(split("call 'open").is_err());
    }

    #[test]
    fn escape_sequences_are_keys() {
        assert!(matches!(escape(&mut &b"[A"[..]), Key::Up));
        assert!(matches!(escape(&mut &b"[3~"[..]), Key::Delete));
        assert!(matches!(escape(&mut &b"OH"[..]), Key::Home));
        assert!(matches!(escape(&mut &b"[1;5C"[..]), Key::Right));
    }
}

//! The line editor of `shell`: rustyline (no default features, in-memory history) on a
//! terminal, which puts it in raw mode only while a line is typed (so a running call gets
//! Ctrl-C as SIGINT) and measures what it draws by display width, so wide characters (CJK,
//! emoji) keep the cursor where the text is. Emacs keys (left/right, Home/End,
//! Backspace/Delete, Ctrl-A/E/U/K/W), up/down through the history, Ctrl-C clears the line,
//! Ctrl-D on an empty line ends. When stdin or stdout is not a terminal, lines are read as they
//! come, with no prompt.

use std::io::{BufRead, IsTerminal, Read};

use rustyline::config::Config;
use rustyline::error::ReadlineError;
use rustyline::history::{History, SearchDirection};
use rustyline::DefaultEditor;

/// The most entries kept in the history.
const MAX_HISTORY: usize = 1000;
/// The longest line accepted (bytes): a longer line read from a pipe is cut there (the rest
/// is the next line), a longer one typed or pasted at the terminal is dropped.
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
    editor: DefaultEditor,
    terminal: bool,
}

impl Editor {
    /// An editor on stdin; line editing only when stdin and stdout are terminals.
    pub fn new() -> Result<Editor, String> {
        let config = Config::builder()
            .max_history_size(MAX_HISTORY)
            .and_then(|builder| builder.history_ignore_dups(true))
            .map_err(|error| format!("cannot set up the line editor: {error}"))?
            .auto_add_history(false)
            .build();
        let editor = DefaultEditor::with_config(config)
            .map_err(|error| format!("cannot set up the line editor: {error}"))?;
        Ok(Editor {
            editor,
            terminal: std::io::stdin().is_terminal() && std::io::stdout().is_terminal(),
        })
    }

    /// The history, oldest first.
    pub fn history(&self) -> Vec<String> {
        let history = self.editor.history();
        (0..history.len())
            .filter_map(|index| history.get(index, SearchDirection::Forward).ok().flatten())
            .map(|found| found.entry.into_owned())
            .collect()
    }

    /// Adds a line to the history (not a repeat of the last one, nor a blank one).
    pub fn remember(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        if let Err(error) = self.editor.add_history_entry(line) {
            log::debug!("the history did not take a line: {error}");
        }
    }

    /// Reads one line after showing `prompt`.
    pub fn read(&mut self, prompt: &str) -> Line {
        if !self.terminal {
            return read_plain();
        }
        match self.editor.readline(prompt) {
            Ok(line) if line.len() > MAX_LINE => {
                errln!(
                    "toolwire: a line is at most {} KiB; that one was dropped",
                    MAX_LINE / 1024
                );
                Line::Interrupted
            }
            Ok(line) => Line::Text(line),
            Err(ReadlineError::Interrupted | ReadlineError::Signal(_)) => Line::Interrupted,
            Err(ReadlineError::Eof) => Line::End,
            Err(error) => {
                log::debug!("no line editing ({error}); reading plain lines");
                self.terminal = false;
                out!("{prompt}");
                read_plain()
            }
        }
    }
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
}

//! Fuzzes the config-file readers (`ServerConfigs::parse`): Claude Desktop, Cursor, Claude
//! Code and VS Code server lists, with variable expansion.
//!
//! The input (UTF-8, lossily) is the file's text, read with the default options (format
//! detected, process environment) twice, and in each of the four formats with fixed
//! variables; a text with an `envFile` key is skipped (it would read a file). Checked:
//! * nothing panics, and reading the same text twice gives the same result;
//! * every error is a config error that names something: not JSON, a repeated key, an
//!   integer outside 64 bits, the top level, the servers key, or a server of the file and
//!   its field; a key repeated in any object is always refused ("duplicate key");
//! * an accepted file lists exactly its servers, each stdio (`command`, no `url`) or HTTP
//!   (`url`, no `command`), never both; an entry with both, or of type `sse`, fails the file;
//! * a stdio entry has a non-empty command, the file's arguments count, `env` keys (each a
//!   name the OS can take) and `cwd`, and the default bounds; an HTTP entry an `http(s)://`
//!   URL and the file's header names;
//! * Claude Desktop values are literal: they are the file's own.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::config(data));

//! A tiny stderr logger for the `log` facade: `level target: message`, one line each, drawn
//! around the progress bar when one is on screen.
//!
//! A record may quote a server (its log messages, its stderr, its error texts): its control
//! characters are shown escaped (see [`crate::terminal`]). ureq (targets `ureq` and
//! `ureq_proto`) is never enabled at trace: its trace records dump the raw bytes of each
//! request, headers and tokens included, and when it sees trace enabled its debug records
//! show whole query strings and `Location` headers. Its debug records, redacted, are shown.

use std::io::Write;

use log::{LevelFilter, Log, Metadata, Record};

struct StderrLogger;

static LOGGER: StderrLogger = StderrLogger;

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        // The server's own log messages are shown by `serverlog`, at `--server-log`.
        metadata.level() <= log::max_level()
            && !is_raw_wire(metadata)
            && metadata.target() != "toolwire::server"
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let message = record.args().to_string();
        // The library's messages start with "toolwire: ", which the target already says.
        let message = message.strip_prefix("toolwire: ").unwrap_or(&message);
        let line = format!(
            "{} {}: {message}\n",
            record.level().as_str().to_ascii_lowercase(),
            record.target(),
        );
        let line = crate::terminal::shown(&line);
        crate::progress::suspend(|| {
            // A closed stderr is not worth failing over.
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        });
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// ureq at trace, which shows the wire's raw bytes (credentials among them).
fn is_raw_wire(metadata: &Metadata<'_>) -> bool {
    metadata.level() == log::Level::Trace && metadata.target().starts_with("ureq")
}

/// Installs the logger with `level`.
pub fn init(level: LevelFilter) {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}

//! Secrets never show in errors, `Debug` or log records. It installs a global logger that
//! captures every record, so it is a binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod gateway_secrets;
mod secrets_masked;

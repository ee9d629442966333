//! A notification flood logs one warning. It installs a global logger and counts the
//! warnings, so it is a binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod notification_flood;

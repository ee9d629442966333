//! Config files: the formats of every host, variables, bad and hostile entries, OAuth entries.

#[path = "../support/mod.rs"]
mod support;

mod bad_entries;
mod files;
mod hostile;
mod oauth;

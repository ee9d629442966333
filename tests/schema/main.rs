//! JSON Schema: the official suite, real-world tool schemas, hostile schemas.

#[path = "../support/mod.rs"]
mod support;

mod hostile;
mod real_world;
mod suite;

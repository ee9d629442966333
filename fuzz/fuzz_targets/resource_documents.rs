//! Fuzzes the documents the HTTP server reads from an authorization server when it checks
//! tokens (`toolwire::fuzzing::resource_server_metadata`, `resource_jwks`,
//! `introspection_answer`): its metadata, its JWKS and a token introspection answer (RFC
//! 7662), picked by the first byte (`% 3`). Checked: nothing panics; each is taken exactly when
//! a model over `serde_json` says it should be, with the same fields.
#![no_main]

#[path = "../auth_checks.rs"]
mod auth_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| auth_checks::resource_documents(data));

//! Fuzzes what the HTTP server reads when it checks authorization
//! (`toolwire::fuzzing::resource_token`): the `Authorization` header (the input's first line),
//! the JWT in it and the issuer's JWKS document (the rest). Checked: nothing panics; only a
//! token of an allowed algorithm, with a subject and the scope, is served; a refusal is 401 or
//! 403 with a `Bearer` challenge naming the metadata and the scope, never holding the token.
#![no_main]

#[path = "../auth_checks.rs"]
mod auth_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| auth_checks::resource_token(data));

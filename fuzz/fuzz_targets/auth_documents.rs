//! Fuzzes the readers of the documents an authorization flow is sent: protected resource
//! metadata, authorization server metadata, a registration response and a token response,
//! picked by the first byte (`% 4`). Checked: nothing panics; exactly what a model over
//! `serde_json` accepts is accepted, with the same fields; `Debug` never shows a secret or a
//! token; `resource_matches` never panics.
#![no_main]

#[path = "../auth_checks.rs"]
mod auth_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| auth_checks::auth_documents(data));

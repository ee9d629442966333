//! Fuzzes the reading of an authorization redirect's address (`toolwire::auth::parse_redirect`).
//! Checked: nothing panics; `code`, `state`, `iss`, `error` and `error_description` are the
//! first of their name, form-decoded as a model written out in `auth_checks.rs` decodes them;
//! `repeated` is set exactly when one of them comes twice; `Debug` never shows the code.
#![no_main]

#[path = "../auth_checks.rs"]
mod auth_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| auth_checks::auth_redirect(data));

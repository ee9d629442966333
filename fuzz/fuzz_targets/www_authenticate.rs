//! Fuzzes the `WWW-Authenticate` parser (`toolwire::auth::parse_challenges`): the input
//! (UTF-8, lossily) split on `\n` into header fields. Checked: nothing panics; the result is
//! bounded and the same twice; every scheme and parameter name is a token, names in lower
//! case, a token68 never beside parameters; the challenges written back (values quoted and
//! escaped) parse to the same challenges.
#![no_main]

#[path = "../auth_checks.rs"]
mod auth_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| auth_checks::www_authenticate(data));

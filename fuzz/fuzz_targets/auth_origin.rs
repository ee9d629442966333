//! Fuzzes the rule for the URLs an authorization flow is pointed at by the network (a
//! challenge's `resource_metadata`, the authorization server the resource metadata names and
//! its endpoints): origins compared, loopback and private hosts recognized in every spelling.
//! Checked: nothing panics; the properties in `auth_checks.rs` (`auth_origin`).
#![no_main]

#[path = "../auth_checks.rs"]
mod auth_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| auth_checks::auth_origin(data));

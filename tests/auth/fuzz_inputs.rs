//! The authorization parsers' fuzz properties (`fuzz/auth_checks.rs`, included below) over
//! every committed seed and kept crash input, in the normal test suite.
#![cfg(feature = "oauth")]

use std::path::{Path, PathBuf};

#[path = "../../fuzz/auth_checks.rs"]
mod auth_checks;

fn inputs(target: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz")
            .join(kind)
            .join(target);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            found.extend(entries.filter_map(|entry| entry.ok().map(|entry| entry.path())));
        }
    }
    found.sort();
    found
}

fn run_all(target: &str, check: fn(&[u8])) {
    let inputs = inputs(target);
    assert!(!inputs.is_empty(), "no seeds for {target}");
    for path in inputs {
        let data = std::fs::read(&path).unwrap();
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("{target}: {} breaks a property", path.display());
        }
    }
}

#[test]
fn www_authenticate_inputs_hold_their_properties() {
    run_all("www_authenticate", auth_checks::www_authenticate);
}

#[test]
fn auth_documents_inputs_hold_their_properties() {
    run_all("auth_documents", auth_checks::auth_documents);
}

#[test]
fn auth_redirect_inputs_hold_their_properties() {
    run_all("auth_redirect", auth_checks::auth_redirect);
}

#[test]
fn auth_origin_inputs_hold_their_properties() {
    run_all("auth_origin", auth_checks::auth_origin);
}

#[cfg(feature = "server")]
#[test]
fn resource_token_inputs_hold_their_properties() {
    run_all("resource_token", auth_checks::resource_token);
}

#[cfg(feature = "server")]
#[test]
fn resource_documents_inputs_hold_their_properties() {
    run_all("resource_documents", auth_checks::resource_documents);
}

/// The `resource_documents` seeds are taken and refused as their names say.
#[cfg(feature = "server")]
#[test]
fn the_resource_documents_seeds_are_taken_and_refused_as_named() {
    let seed = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/corpus/resource_documents")
            .join(name);
        std::fs::read(path).unwrap()[1..].to_vec()
    };
    let issuer = auth_checks::ISSUER;
    let metadata = |name: &str| toolwire::fuzzing::resource_server_metadata(&seed(name), issuer);
    assert!(metadata("metadata.json").is_ok());
    assert!(metadata("metadata_other_issuer.json").is_err());
    assert_eq!(
        toolwire::fuzzing::resource_jwks(&seed("jwks_two_keys.json"), 32),
        Ok(2)
    );
    assert_eq!(
        toolwire::fuzzing::resource_jwks(&seed("jwks_unusable_keys.json"), 32),
        Ok(0)
    );
    let answer = |name: &str| {
        toolwire::fuzzing::introspection_answer(
            &seed(name),
            auth_checks::RESOURCE,
            issuer,
            auth_checks::NOW,
        )
    };
    let active = answer("introspection_active.json").unwrap();
    assert_eq!(
        (active.subject.as_str(), active.exp),
        ("ann", Some(1_000_060))
    );
    for refused in [
        "introspection_inactive.json",
        "introspection_dpop.json",
        "introspection_expired.json",
    ] {
        assert!(answer(refused).is_err(), "{refused}");
    }
}

/// The `resource_token` seeds reach every answer: served (ES256 and RS256), 403 and 401.
#[cfg(feature = "server")]
#[test]
fn the_resource_token_seeds_reach_every_answer() {
    let status = |seed: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/corpus/resource_token")
            .join(seed);
        let text = std::fs::read_to_string(path).unwrap();
        let (header, jwks) = text.split_once('\n').unwrap();
        let out = toolwire::fuzzing::resource_token(
            header,
            jwks.as_bytes(),
            auth_checks::RESOURCE,
            auth_checks::ISSUER,
            &["mcp"],
        );
        assert_eq!(out.keys, Some(2), "{seed}");
        out.status
    };
    assert_eq!(status("es256_valid.txt"), 200);
    assert_eq!(status("rs256_valid.txt"), 200);
    assert_eq!(status("no_scope.txt"), 403);
    for refused in ["expired.txt", "alg_none.txt", "missing.txt", "basic.txt"] {
        assert_eq!(status(refused), 401, "{refused}");
    }
}

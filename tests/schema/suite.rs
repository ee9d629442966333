//! Conformance of `toolwire::schema` against the official JSON-Schema-Test-Suite
//! (github.com/json-schema-org/JSON-Schema-Test-Suite), drafts 4, 6, 7, 2019-09 and 2020-12.
//!
//! The suite is not part of this repository. Point `TOOLWIRE_SCHEMA_SUITE` at its `tests/`
//! folder and run the ignored test:
//!
//! ```text
//! TOOLWIRE_SCHEMA_SUITE=/path/to/JSON-Schema-Test-Suite/tests \
//!     cargo test --test schema_suite -- --ignored --nocapture
//! ```
//!
//! A registry package that ships it: the source distribution of the Python `jsonschema`
//! package carries the suite under `json/tests/` (`pip download --no-deps --no-binary :all:
//! jsonschema`, then unpack). The npm package `json-schema-test-suite` has drafts 3 and 4 only.
//!
//! Left out: `optional/` (formats, ECMA-262 regex corners, big numbers, which the
//! specification makes optional) and `refRemote.json` (remote references, which this
//! validator never fetches). Every other case must pass, except the [`KNOWN_FAILURES`].
//! Schemas of drafts 4 to 7 carry no `$schema` in the suite; the test adds the draft's URI to
//! each root schema object, as a real schema of that draft would say.

use std::fs;
use std::path::Path;

use serde_json::Value;
use toolwire::schema::Schema;

/// Cases expected to fail, as `draft/file.json: group description` (the whole group) or
/// `draft/file.json: group description: test description`. Each has a reason.
const META: &str =
    "a $ref to a draft's meta-schema is read as `true` (meta-schemas are never fetched)";
const REMOTE: &str =
    "needs a remote document from the suite's remotes/ (references are never fetched)";
const VOCABULARY: &str =
    "a custom meta-schema's $vocabulary: needs the remote meta-schema; vocabularies are not read";

const KNOWN_FAILURES: &[(&str, &str)] = &[
    (
        "draft4/definitions.json: validate definition against metaschema: invalid definition schema",
        META,
    ),
    (
        "draft6/definitions.json: validate definition against metaschema: invalid definition schema",
        META,
    ),
    (
        "draft7/definitions.json: validate definition against metaschema: invalid definition schema",
        META,
    ),
    (
        "draft2019-09/defs.json: validate definition against metaschema: invalid definition schema",
        META,
    ),
    (
        "draft2020-12/defs.json: validate definition against metaschema: invalid definition schema",
        META,
    ),
    (
        "draft4/ref.json: remote ref, containing refs itself: remote ref invalid",
        META,
    ),
    (
        "draft6/ref.json: remote ref, containing refs itself: remote ref invalid",
        META,
    ),
    (
        "draft7/ref.json: remote ref, containing refs itself: remote ref invalid",
        META,
    ),
    (
        "draft2019-09/ref.json: remote ref, containing refs itself: remote ref invalid",
        META,
    ),
    (
        "draft2020-12/ref.json: remote ref, containing refs itself: remote ref invalid",
        META,
    ),
    (
        "draft2019-09/vocabulary.json: schema that uses custom metaschema with with no validation vocabulary: no validation: invalid number, but it still validates",
        VOCABULARY,
    ),
    (
        "draft2020-12/vocabulary.json: schema that uses custom metaschema with with no validation vocabulary: no validation: invalid number, but it still validates",
        VOCABULARY,
    ),
    (
        "draft2020-12/dynamicRef.json: strict-tree schema, guards against misspelled properties",
        REMOTE,
    ),
    (
        "draft2020-12/dynamicRef.json: tests for implementation dynamic anchor and reference link",
        REMOTE,
    ),
    (
        "draft2020-12/dynamicRef.json: $ref and $dynamicAnchor are independent of order - $defs first",
        REMOTE,
    ),
    (
        "draft2020-12/dynamicRef.json: $ref and $dynamicAnchor are independent of order - $ref first",
        REMOTE,
    ),
    (
        "draft2020-12/dynamicRef.json: $ref to $dynamicRef finds detached $dynamicAnchor",
        REMOTE,
    ),
];

const DRAFTS: &[(&str, &str)] = &[
    ("draft4", "http://json-schema.org/draft-04/schema#"),
    ("draft6", "http://json-schema.org/draft-06/schema#"),
    ("draft7", "http://json-schema.org/draft-07/schema#"),
    (
        "draft2019-09",
        "https://json-schema.org/draft/2019-09/schema",
    ),
    (
        "draft2020-12",
        "https://json-schema.org/draft/2020-12/schema",
    ),
];

fn is_known(group_key: &str, case_key: &str) -> bool {
    KNOWN_FAILURES
        .iter()
        .any(|(known, _)| *known == group_key || *known == case_key)
}

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: Vec<String>,
    known: usize,
}

fn run_draft(root: &Path, draft: &str, meta_schema: &str, tally: &mut Tally) {
    let folder = root.join(draft);
    let mut files: Vec<_> = fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", folder.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name != "refRemote.json")
        })
        .collect();
    files.sort();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(&file).expect("suite file");
        let groups: Vec<Value> = serde_json::from_str(&text).expect("suite JSON");
        for group in groups {
            let description = group["description"].as_str().unwrap_or("?");
            let group_key = format!("{draft}/{name}: {description}");
            let mut schema = group["schema"].clone();
            if let Value::Object(object) = &mut schema {
                object
                    .entry("$schema")
                    .or_insert_with(|| Value::String(meta_schema.to_owned()));
            }
            let compiled = Schema::compile(&schema);
            for test in group["tests"].as_array().expect("tests") {
                let case_key = format!(
                    "{group_key}: {}",
                    test["description"].as_str().unwrap_or("?")
                );
                let expected = test["valid"].as_bool().expect("valid");
                let outcome = match &compiled {
                    Err(error) => Err(format!("the schema did not compile: {error}")),
                    Ok(schema) => match schema.validate(&test["data"]) {
                        Ok(()) if expected => Ok(()),
                        Err(_) if !expected => Ok(()),
                        Ok(()) => Err("valid, expected invalid".to_owned()),
                        Err(violations) => {
                            Err(format!("invalid, expected valid: {}", violations[0]))
                        }
                    },
                };
                match outcome {
                    Ok(()) => {
                        tally.passed += 1;
                        if KNOWN_FAILURES.iter().any(|(known, _)| *known == case_key) {
                            println!("  now passing (remove from KNOWN_FAILURES?): {case_key}");
                        }
                    }
                    Err(_) if is_known(&group_key, &case_key) => tally.known += 1,
                    Err(why) => tally.failed.push(format!("{case_key}: {why}")),
                }
            }
        }
    }
}

/// The suite's `tests/` folder: `TOOLWIRE_SCHEMA_SUITE`, else the one `tests/peers/install.sh`
/// unpacked (named in `$TOOLWIRE_PEERS_DIR/peers.env`). Run without either, the test fails
/// saying so rather than passing having checked nothing.
fn suite_root() -> std::path::PathBuf {
    if let Some(root) = std::env::var_os("TOOLWIRE_SCHEMA_SUITE") {
        return root.into();
    }
    let Some(dir) = std::env::var_os("TOOLWIRE_PEERS_DIR") else {
        panic!(
            "the_official_test_suite_passes needs the JSON-Schema-Test-Suite: set \
             TOOLWIRE_SCHEMA_SUITE to its tests/ folder, or TOOLWIRE_PEERS_DIR=DIR after \
             `bash tests/peers/install.sh DIR`"
        );
    };
    let env = Path::new(&dir).join("peers.env");
    let text = fs::read_to_string(&env)
        .unwrap_or_else(|error| panic!("{} cannot be read: {error}", env.display()));
    let line = text
        .lines()
        .find_map(|line| line.strip_prefix("TOOLWIRE_SCHEMA_SUITE="))
        .unwrap_or_else(|| {
            panic!(
                "{} names no TOOLWIRE_SCHEMA_SUITE: run tests/peers/install.sh again",
                env.display()
            )
        });
    // install.sh writes the path with printf %q; its own paths need no quoting.
    line.trim().into()
}

#[test]
#[ignore = "needs the JSON-Schema-Test-Suite: TOOLWIRE_SCHEMA_SUITE, or TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_official_test_suite_passes() {
    let root = suite_root();
    let root = root.as_path();
    let mut unexpected = Vec::new();
    for (draft, meta_schema) in DRAFTS {
        assert!(
            root.join(draft).is_dir(),
            "{draft} is not in {}: not the suite's tests/ folder?",
            root.display()
        );
        let mut tally = Tally::default();
        run_draft(root, draft, meta_schema, &mut tally);
        let total = tally.passed + tally.known + tally.failed.len();
        println!(
            "{draft:<13} {} of {total} passed ({} known failures, {} unexpected)",
            tally.passed,
            tally.known,
            tally.failed.len()
        );
        unexpected.extend(tally.failed);
    }
    for failure in &unexpected {
        println!("  FAILED {failure}");
    }
    assert!(
        unexpected.is_empty(),
        "{} unexpected failures",
        unexpected.len()
    );
}

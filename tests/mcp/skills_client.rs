//! Skills (SEP-2640) on the host: nothing is read when skills are listed; loading reads the
//! SKILL.md alone and refuses it when its size, digest or frontmatter differ from the entry;
//! a loaded skill reads only the files its entry lists, each verified. The server here lies
//! on purpose: its entries and its files are set by each test.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};
use toolwire::mcp::{skill_digest, SKILLS_EXTENSION};
use toolwire::server::{
    content, Method, PeerTransport, Server, ServerConfig, ServerConnection, ServerResource,
};
use toolwire::transport::MemoryTransport;
use toolwire::{Error, McpClient, McpConfig};

const SKILL_MD: &str = "---\nname: pdf\ndescription: Fill PDF forms\n---\nRead FORMS.md.\n";
const FORMS: &str = "# Forms\n";
const SKILL_URI: &str = "skill://pdf/SKILL.md";
const FORMS_URI: &str = "skill://pdf/references/FORMS.md";

/// The entry a truthful server would list for `SKILL_MD` and `FORMS`.
fn entry() -> Value {
    json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "pdf", "description": "Fill PDF forms"},
        "resources": [
            {"uri": SKILL_URI, "digest": skill_digest(SKILL_MD.as_bytes()), "size": SKILL_MD.len()},
            {"uri": FORMS_URI, "digest": skill_digest(FORMS.as_bytes()), "size": FORMS.len()},
        ],
    })
}

struct Fake {
    client: McpClient,
    reads: Arc<Mutex<Vec<String>>>,
    _connection: ServerConnection,
}

/// A server listing `entry` and serving these bytes for SKILL.md and FORMS.md (and an
/// unlisted file), counting every read.
fn fake(entry: Value, skill_md: &str, forms: &str, declared: bool) -> Fake {
    let server = Server::new(ServerConfig::new("liar", "1")).unwrap();
    let reads = Arc::new(Mutex::new(Vec::new()));
    for (uri, text) in [
        (SKILL_URI, skill_md.to_owned()),
        (FORMS_URI, forms.to_owned()),
        ("skill://pdf/unlisted.md", "not in the entry\n".to_owned()),
    ] {
        let reads = reads.clone();
        server
            .add_resource(ServerResource::new(uri, uri, move |_, uri| {
                reads.lock().push(uri.to_owned());
                Ok(vec![content::text_contents(
                    uri,
                    Some("text/markdown"),
                    text.clone(),
                )])
            }))
            .unwrap();
    }
    let get_entry = entry.clone();
    server
        .add_method(Method::new("skills/list", move |_, _| {
            Ok(json!({"skills": [entry.clone()]}))
        }))
        .unwrap();
    server
        .add_method(Method::new("skills/get", move |_, _| {
            Ok(json!({"skill": get_entry.clone()}))
        }))
        .unwrap();
    if declared {
        server.declare_extension(SKILLS_EXTENSION, json!({}));
    }
    let (client_end, server_end) = MemoryTransport::pair();
    let connection = server.connect(PeerTransport::new(server_end)).unwrap();
    let client = McpClient::connect(client_end, McpConfig::default()).unwrap();
    Fake {
        client,
        reads,
        _connection: connection,
    }
}

fn protocol_error<T: std::fmt::Debug>(result: toolwire::Result<T>, needle: &str) {
    match result {
        Err(Error::Protocol(message)) => {
            assert!(
                message.contains(needle),
                "{message:?} does not say {needle:?}"
            )
        }
        other => panic!("expected a refusal saying {needle:?}, got {other:?}"),
    }
}

#[test]
fn listing_reads_nothing_and_loading_reads_skill_md_alone() {
    let fake = fake(entry(), SKILL_MD, FORMS, true);
    let entries = fake.client.list_skills().unwrap();
    assert_eq!(entries.len(), 1);
    let got = fake.client.get_skill(SKILL_URI).unwrap();
    assert!(
        fake.reads.lock().is_empty(),
        "a file was read before loading"
    );

    let mut skill = fake.client.load_skill(&got).unwrap();
    assert_eq!(skill.body(), "Read FORMS.md.\n");
    assert_eq!(*fake.reads.lock(), [SKILL_URI]);

    assert_eq!(
        skill.read(&fake.client, FORMS_URI).unwrap(),
        FORMS.as_bytes()
    );
    // Verified bytes are kept: a second read does not go to the server.
    skill.read(&fake.client, FORMS_URI).unwrap();
    assert_eq!(*fake.reads.lock(), [SKILL_URI, FORMS_URI]);
}

#[test]
fn a_wrong_digest_is_refused() {
    let altered = SKILL_MD.replace("Read", "Burn");
    assert_eq!(altered.len(), SKILL_MD.len());
    let fake = fake(entry(), &altered, FORMS, true);
    let entry = &fake.client.list_skills().unwrap()[0];
    protocol_error(fake.client.load_skill(entry), "digest");
    assert_eq!(*fake.reads.lock(), [SKILL_URI], "FORMS.md was read");
}

#[test]
fn a_wrong_size_is_refused() {
    let longer = format!("{SKILL_MD}more\n");
    let fake = fake(entry(), &longer, FORMS, true);
    let entry = &fake.client.list_skills().unwrap()[0];
    protocol_error(fake.client.load_skill(entry), "bytes");
}

#[test]
fn a_frontmatter_that_differs_from_the_entry_is_refused() {
    // The file is what the entry digests, but the entry's frontmatter says otherwise.
    let mut lying = entry();
    lying["frontmatter"]["description"] = json!("Something else");
    let fake1 = fake(lying, SKILL_MD, FORMS, true);
    let entry1 = &fake1.client.list_skills().unwrap()[0];
    protocol_error(fake1.client.load_skill(entry1), "description");

    // A field the file has and the entry lacks differs too.
    let extra = SKILL_MD.replace("---\nRead", "license: MIT\n---\nRead");
    let mut entry2 = entry();
    entry2["resources"][0] =
        json!({"uri": SKILL_URI, "digest": skill_digest(extra.as_bytes()), "size": extra.len()});
    let fake2 = fake(entry2, &extra, FORMS, true);
    let listed = &fake2.client.list_skills().unwrap()[0];
    protocol_error(fake2.client.load_skill(listed), "license");
}

#[test]
fn a_loaded_skill_reads_only_listed_and_verified_files() {
    let fake = fake(entry(), SKILL_MD, "# Forms, altered\n", true);
    let entry = &fake.client.list_skills().unwrap()[0];
    let mut skill = fake.client.load_skill(entry).unwrap();
    protocol_error(skill.read(&fake.client, FORMS_URI), "bytes");
    // The server has it; the entry does not list it: not even asked for.
    protocol_error(
        skill.read(&fake.client, "skill://pdf/unlisted.md"),
        "not a file of the skill",
    );
    assert_eq!(*fake.reads.lock(), [SKILL_URI, FORMS_URI]);
}

/// A change made to a truthful entry.
type Change = Box<dyn Fn(&mut Value)>;

#[test]
fn entries_a_host_must_not_load_are_refused() {
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|e| e["resources"][1]["uri"] = json!("skill://other/x.md")),
            "outside the skill",
        ),
        (
            Box::new(|e| e["resources"][1]["uri"] = json!("skill://pdf/../x.md")),
            "outside the skill",
        ),
        (
            Box::new(|e| {
                e["resources"].as_array_mut().unwrap().remove(0);
            }),
            "its own SKILL.md",
        ),
        (
            Box::new(|e| e["resources"][1]["digest"] = json!("md5:00")),
            "digest",
        ),
        (
            Box::new(|e| e["frontmatter"]["name"] = json!("other")),
            "named after its path",
        ),
        (Box::new(|e| e["resources"] = json!(null)), "resources"),
    ];
    for (change, needle) in cases {
        let mut bad = entry();
        change(&mut bad);
        let fake = fake(bad, SKILL_MD, FORMS, true);
        protocol_error(fake.client.list_skills(), needle);
    }
    // "dynamic" is listed but not loaded: there is nothing to verify against.
    let mut dynamic = entry();
    dynamic["resources"] = json!("dynamic");
    let fake = fake(dynamic, SKILL_MD, FORMS, true);
    let entry = &fake.client.list_skills().unwrap()[0];
    protocol_error(fake.client.load_skill(entry), "dynamic");
    assert!(fake.reads.lock().is_empty());
}

#[test]
fn a_server_without_the_extension_is_not_asked() {
    let fake = fake(entry(), SKILL_MD, FORMS, false);
    protocol_error(fake.client.list_skills(), SKILLS_EXTENSION);
}

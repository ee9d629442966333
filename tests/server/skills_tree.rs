//! Skills (SEP-2640) served from a directory tree and the library API: what a host reads back
//! (entries, digests, sizes, directory reads, paging), the bounds of `SkillLimits`, and the
//! confinement of a tree's paths (`..`, absolute paths, symbolic links out of the tree).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolwire::mcp::{skill_digest, SkillResources, SKILLS_EXTENSION};
use toolwire::server::{
    PeerTransport, Server, ServerConfig, ServerConnection, SkillLimits, SkillSet,
};
use toolwire::transport::MemoryTransport;
use toolwire::{CallOptions, Error, McpClient, McpConfig};

fn skill_md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill\n---\nDo {name}.\n")
}

/// A fresh directory under the system's temporary one, removed when dropped.
struct Tree(PathBuf);

impl Tree {
    fn new(test: &str) -> Tree {
        let dir =
            std::env::temp_dir().join(format!("toolwire-skills-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Tree(dir)
    }

    fn file(&self, path: &str, bytes: &[u8]) -> &Tree {
        let path = self.0.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
        self
    }

    fn skill(&self, dir: &str, name: &str) -> &Tree {
        self.file(&format!("{dir}/SKILL.md"), skill_md(name).as_bytes())
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A client of a server serving `skills`, and what keeps the server's side open.
fn client_of(skills: SkillSet) -> (McpClient, ServerConnection) {
    let server = Server::new(ServerConfig::new("skills", "1")).unwrap();
    skills.serve(&server).unwrap();
    let (client_end, server_end) = MemoryTransport::pair();
    let connection = server.connect(PeerTransport::new(server_end)).unwrap();
    let client = McpClient::connect(client_end, McpConfig::default()).unwrap();
    (client, connection)
}

fn refused(result: toolwire::Result<usize>, needle: &str) {
    match result {
        Err(Error::Config(message)) => {
            assert!(
                message.contains(needle),
                "{message:?} does not say {needle:?}"
            )
        }
        other => panic!("expected a refusal saying {needle:?}, got {other:?}"),
    }
}

fn error_code(result: toolwire::Result<Value>) -> i32 {
    match result {
        Err(Error::Rpc(error)) => error.code.0,
        other => panic!("expected an error response, got {other:?}"),
    }
}

#[test]
fn a_tree_is_served_as_entries_files_and_directories() {
    let tree = Tree::new("served");
    tree.skill("pdf-processing", "pdf-processing")
        .file("pdf-processing/references/FORMS.md", b"# Forms\n")
        .file("pdf-processing/bin/tool.bin", &[0, 159, 146, 150, 255])
        .skill("acme/billing/refunds", "refunds")
        .file("acme/README.md", b"outside any skill: not served\n")
        .file("pdf-processing/.hidden", b"skipped");
    let mut skills = SkillSet::new().page_size(1);
    assert_eq!(skills.add_tree(&tree.0).unwrap(), 2);
    let (client, _server) = client_of(skills);

    let info = client.session_info().unwrap();
    assert_eq!(
        info.capabilities["extensions"][SKILLS_EXTENSION],
        json!({"directoryRead": true})
    );
    assert!(info.capabilities["resources"].is_object());

    // One skill per page: both come back through the cursor.
    let entries = client.list_skills().unwrap();
    let uris: Vec<&str> = entries.iter().map(|entry| entry.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://pdf-processing/SKILL.md"
        ]
    );
    let pdf = &entries[1];
    assert_eq!(pdf.description(), "The pdf-processing skill");
    let SkillResources::Files(files) = &pdf.resources else {
        panic!("files declared")
    };
    let declared: Vec<(&str, u64)> = files.iter().map(|f| (f.uri.as_str(), f.size)).collect();
    assert_eq!(
        declared,
        [
            (
                "skill://pdf-processing/SKILL.md",
                skill_md("pdf-processing").len() as u64
            ),
            ("skill://pdf-processing/bin/tool.bin", 5),
            ("skill://pdf-processing/references/FORMS.md", 8),
        ]
    );
    assert_eq!(files[2].digest, skill_digest(b"# Forms\n"));

    // Loaded, its files read back verified: text and bytes alike.
    let mut skill = client.load_skill(pdf).unwrap();
    assert_eq!(skill.body(), "Do pdf-processing.\n");
    assert_eq!(
        skill
            .read(&client, "skill://pdf-processing/bin/tool.bin")
            .unwrap(),
        [0, 159, 146, 150, 255]
    );
    assert_eq!(client.get_skill(&pdf.uri).unwrap(), *pdf);

    // The root's children, the subdirectory marked as one; a file is not a directory.
    let read = |uri: &str| {
        client.request(
            "resources/directory/read",
            json!({"uri": uri}),
            CallOptions::new(),
        )
    };
    // One child per page, too: the cursor walks them all.
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = client
            .request(
                "resources/directory/read",
                json!({"uri": "skill://pdf-processing", "cursor": cursor}),
                CallOptions::new(),
            )
            .unwrap();
        for child in page["resources"].as_array().unwrap() {
            names.push((
                child["uri"].as_str().unwrap().to_owned(),
                child["mimeType"].as_str().unwrap().to_owned(),
            ));
        }
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
        assert!(names.len() < 10, "the cursor does not end");
    }
    let names: Vec<(&str, &str)> = names
        .iter()
        .map(|(u, m)| (u.as_str(), m.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("skill://pdf-processing/SKILL.md", "text/markdown"),
            ("skill://pdf-processing/bin", "inode/directory"),
            ("skill://pdf-processing/references", "inode/directory"),
        ]
    );
    assert_eq!(error_code(read("skill://pdf-processing/SKILL.md")), -32602);
    assert_eq!(error_code(read("skill://acme/README.md")), -32602);
    let unknown = client.request(
        "skills/get",
        json!({"uri": "skill://nope/SKILL.md"}),
        CallOptions::new(),
    );
    assert_eq!(error_code(unknown), -32602);
    // Files outside every skill, and dot files, are not resources.
    let resources = client.list_resources().unwrap();
    assert!(resources
        .iter()
        .all(|r| !r.uri.contains("README") && !r.uri.contains("hidden")));
}

#[test]
fn without_directory_read_the_method_is_not_served() {
    let tree = Tree::new("nodirread");
    tree.skill("one", "one");
    let mut skills = SkillSet::new().directory_read(false);
    skills.add_tree(&tree.0).unwrap();
    let (client, _server) = client_of(skills);
    let info = client.session_info().unwrap();
    assert_eq!(info.capabilities["extensions"][SKILLS_EXTENSION], json!({}));
    let read = client.request(
        "resources/directory/read",
        json!({"uri": "skill://one"}),
        CallOptions::new(),
    );
    assert_eq!(error_code(read), -32601);
}

#[test]
fn the_library_refuses_paths_that_leave_the_skill() {
    let skill_md = b"---\nname: one\ndescription: One\n---\n".to_vec();
    for file in [
        "../escape.md",
        "/etc/passwd",
        "a/../../b",
        "a//b",
        "./a",
        "a/./b",
        "a\\b",
    ] {
        let mut skills = SkillSet::new();
        let result = skills.add_skill(
            "one",
            [
                ("SKILL.md".to_owned(), skill_md.clone()),
                (file.to_owned(), b"x".to_vec()),
            ],
        );
        assert!(result.is_err(), "{file:?} was accepted");
    }
    for path in ["../one", "/one", "a/../one", "", "Acme/one"] {
        let mut skills = SkillSet::new();
        let result = skills.add_skill(path, [("SKILL.md".to_owned(), skill_md.clone())]);
        assert!(result.is_err(), "the skill path {path:?} was accepted");
    }
}

#[test]
fn a_symlink_out_of_the_tree_is_refused() {
    let outside = Tree::new("outside");
    outside.file("secret.txt", b"secret");
    let tree = Tree::new("escape");
    tree.skill("one", "one");
    std::os::unix::fs::symlink(outside.0.join("secret.txt"), tree.0.join("one/secret.txt"))
        .unwrap();
    refused(SkillSet::new().add_tree(&tree.0), "links outside the tree");

    // Through a relative `..` link too.
    let tree = Tree::new("escape-relative");
    tree.skill("one", "one");
    let up = Path::new("../../")
        .join(outside.0.file_name().unwrap())
        .join("secret.txt");
    std::os::unix::fs::symlink(up, tree.0.join("one/secret.txt")).unwrap();
    refused(SkillSet::new().add_tree(&tree.0), "links outside the tree");
}

#[test]
fn a_symlinked_directory_is_refused_and_a_file_link_inside_is_served() {
    let tree = Tree::new("dirlink");
    tree.skill("one", "one").file("shared/notes.md", b"notes\n");
    std::os::unix::fs::symlink(tree.0.join("shared"), tree.0.join("one/shared")).unwrap();
    refused(SkillSet::new().add_tree(&tree.0), "links to a directory");

    let tree = Tree::new("filelink");
    tree.skill("one", "one").file("shared/notes.md", b"notes\n");
    std::os::unix::fs::symlink(tree.0.join("shared/notes.md"), tree.0.join("one/notes.md"))
        .unwrap();
    let mut skills = SkillSet::new();
    assert_eq!(skills.add_tree(&tree.0).unwrap(), 1);
    let (client, _server) = client_of(skills);
    let entry = &client.list_skills().unwrap()[0];
    assert_eq!(
        entry.file("skill://one/notes.md").map(|file| file.size),
        Some(6)
    );
}

#[test]
fn the_bounds_are_enforced() {
    let tree = Tree::new("deep");
    tree.skill("a/b/c/d", "d");
    let limits = SkillLimits {
        max_depth: 3,
        ..SkillLimits::default()
    };
    refused(
        SkillSet::new().limits(limits).add_tree(&tree.0),
        "max_depth",
    );
    let limits = SkillLimits {
        max_depth: 4,
        ..SkillLimits::default()
    };
    assert_eq!(SkillSet::new().limits(limits).add_tree(&tree.0).unwrap(), 1);

    let tree = Tree::new("many");
    tree.skill("one", "one");
    for index in 0..5 {
        tree.file(&format!("one/f{index}.md"), b"x");
    }
    let limits = SkillLimits {
        max_files: 5,
        ..SkillLimits::default()
    };
    refused(
        SkillSet::new().limits(limits).add_tree(&tree.0),
        "max_files",
    );
    let limits = SkillLimits {
        max_entries: 6,
        ..SkillLimits::default()
    };
    refused(
        SkillSet::new().limits(limits).add_tree(&tree.0),
        "max_entries",
    );

    let tree = Tree::new("big");
    tree.skill("one", "one").file("one/big.bin", &[7u8; 4096]);
    let limits = SkillLimits {
        max_skill_bytes: 4096,
        ..SkillLimits::default()
    };
    refused(SkillSet::new().limits(limits).add_tree(&tree.0), "bytes");
    let limits = SkillLimits {
        max_tree_bytes: 4000,
        ..SkillLimits::default()
    };
    refused(
        SkillSet::new().limits(limits).add_tree(&tree.0),
        "max_tree_bytes",
    );

    let tree = Tree::new("skills");
    tree.skill("one", "one").skill("two", "two");
    let limits = SkillLimits {
        max_skills: 1,
        ..SkillLimits::default()
    };
    let mut skills = SkillSet::new().limits(limits);
    refused(skills.add_tree(&tree.0), "max_skills");
    // Nothing of a refused tree is kept.
    assert!(skills.paths().is_empty());
}

#[test]
fn a_skill_must_be_named_after_its_directory_and_not_be_the_root() {
    let tree = Tree::new("misnamed");
    tree.skill("one", "other");
    refused(SkillSet::new().add_tree(&tree.0), "frontmatter name");

    let tree = Tree::new("badname");
    tree.skill("x/One", "One");
    refused(SkillSet::new().add_tree(&tree.0), "frontmatter name");

    let tree = Tree::new("root");
    tree.file("SKILL.md", b"---\nname: root\ndescription: Root\n---\n");
    refused(SkillSet::new().add_tree(&tree.0), "at the root");

    let tree = Tree::new("nofront");
    tree.file("one/SKILL.md", b"# no frontmatter\n");
    refused(SkillSet::new().add_tree(&tree.0), "---");

    let tree = Tree::new("oddname");
    tree.skill("one", "one").file("one/with space.md", b"x");
    refused(SkillSet::new().add_tree(&tree.0), "URI path segment");
}

#[test]
fn a_nested_skill_is_its_own_and_its_parents() {
    let tree = Tree::new("nested");
    tree.skill("outer", "outer").skill("outer/inner", "inner");
    let mut skills = SkillSet::new();
    assert_eq!(skills.add_tree(&tree.0).unwrap(), 2);
    let (client, _server) = client_of(skills);
    let entries = client.list_skills().unwrap();
    let outer = entries.iter().find(|e| e.name() == "outer").unwrap();
    assert!(outer.file("skill://outer/inner/SKILL.md").is_some());
    let inner = entries.iter().find(|e| e.name() == "inner").unwrap();
    let mut loaded = client.load_skill(outer).unwrap();
    // The nested SKILL.md is one resource, the same bytes both entries digest.
    let bytes = loaded
        .read(&client, "skill://outer/inner/SKILL.md")
        .unwrap();
    assert_eq!(skill_digest(&bytes), inner.file(&inner.uri).unwrap().digest);
}

#[test]
fn a_fifo_in_the_tree_is_refused_not_waited_on() {
    let tree = Tree::new("fifo");
    tree.skill("one", "one");
    let path = std::ffi::CString::new(tree.0.join("one/pipe").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file system entry.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    refused(
        SkillSet::new().add_tree(&tree.0),
        "neither a file nor a directory",
    );
}

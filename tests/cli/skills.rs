//! `toolwire skills [NAME]` against the bundled server serving a skill tree
//! (`tool_server --skills DIR`): the listing, a skill loaded and its SKILL.md printed with
//! its other files named and not read, two skills of one name told apart by URI, an unknown
//! name, and a server without the extension.
#![cfg(feature = "cli")]

use crate::support::cli;

use cli::{assert_in_order, run_args, scratch, tool_server};
use serde_json::Value;

fn skill_md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill\n---\nDo {name}.\n")
}

/// A tree of three skills, two of them named `refunds`.
fn tree() -> std::path::PathBuf {
    let dir = scratch("skills");
    for (path, name) in [
        ("pdf", "pdf"),
        ("acme/refunds", "refunds"),
        ("globex/refunds", "refunds"),
    ] {
        std::fs::create_dir_all(dir.join(path)).unwrap();
        std::fs::write(dir.join(path).join("SKILL.md"), skill_md(name)).unwrap();
    }
    std::fs::create_dir_all(dir.join("pdf/references")).unwrap();
    std::fs::write(dir.join("pdf/references/FORMS.md"), "# Forms\n").unwrap();
    dir
}

fn skills(args: &[&str], dir: &std::path::Path) -> cli::Run {
    let server = tool_server();
    let mut all = vec!["skills"];
    all.extend(args);
    all.extend([
        "--",
        server.to_str().unwrap(),
        "--skills",
        dir.to_str().unwrap(),
    ]);
    run_args(&all)
}

#[test]
fn lists_loads_and_tells_skills_of_one_name_apart() {
    let dir = tree();
    let listed = skills(&[], &dir).expect(0);
    assert_in_order(
        &listed.stdout,
        &[
            "NAME",
            "URI",
            "FILES",
            "DESCRIPTION",
            "refunds",
            "skill://acme/refunds/SKILL.md",
            "refunds",
            "skill://globex/refunds/SKILL.md",
            "pdf",
            "skill://pdf/SKILL.md",
            "2",
            "The pdf skill",
            "3 skills",
        ],
    );
    let json: Value = serde_json::from_str(&skills(&["--json"], &dir).expect(0).stdout).unwrap();
    assert_eq!(
        json[2]["resources"][1]["uri"],
        "skill://pdf/references/FORMS.md"
    );

    let loaded = skills(&["pdf"], &dir).expect(0);
    assert_eq!(
        loaded.stdout,
        format!(
            "{}[file, 8 B, not read] skill://pdf/references/FORMS.md\n",
            skill_md("pdf")
        )
    );
    assert!(loaded.stderr.contains("verified"), "{}", loaded.stderr);

    let several = skills(&["refunds"], &dir).expect(2);
    assert!(
        several.stderr.contains("skill://acme/refunds/SKILL.md")
            && several.stderr.contains("skill://globex/refunds/SKILL.md"),
        "{}",
        several.stderr
    );
    let by_uri = skills(&["skill://globex/refunds/SKILL.md"], &dir).expect(0);
    assert_eq!(by_uri.stdout, skill_md("refunds"));

    let unknown = skills(&["nope"], &dir).expect(2);
    assert!(
        unknown.stderr.contains("no skill named `nope`"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn a_server_without_skills_is_not_asked() {
    let server = tool_server();
    let run = run_args(&["skills", "--", server.to_str().unwrap()]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("io.modelcontextprotocol/skills"),
        "{}",
        run.stderr
    );
}

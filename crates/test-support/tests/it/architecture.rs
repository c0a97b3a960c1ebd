//! What `docs/ARCHITECTURE.md` promises about the layout holds for every crate.

use cairn_test_support::architecture::{
    crate_dirs, extra_test_binaries, module_cycles, workspace_dependencies,
};

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let crates = crate_dirs();
    assert!(crates.len() >= 10, "the crates were found: {crates:?}");
    let mut found = Vec::new();
    for dir in &crates {
        for cycle in module_cycles(&dir.join("src")) {
            found.push(format!("{}: {}", dir.display(), cycle.join(" -> ")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

/// The map of `docs/ARCHITECTURE.md`: each crate and the workspace crates it may depend on.
/// The edges (hooks, server) reach the ledger, the policy engine and the stores only through
/// the runtime: one lifecycle, one verdict, one store location.
const MAY_DEPEND_ON: &[(&str, &[&str])] = &[
    ("core", &[]),
    ("interop", &["core"]),
    ("ledger", &["core"]),
    ("policy", &["core"]),
    ("continuity", &["core"]),
    ("decisions", &["core"]),
    ("lanes", &["core", "interop"]),
    (
        "runtime",
        &[
            "core",
            "ledger",
            "policy",
            "continuity",
            "decisions",
            "lanes",
        ],
    ),
    ("store-sqlite", &["core", "ledger"]),
    ("store-postgres", &["core", "ledger"]),
    // The edges: the runtime and core, and for the server the published formats it checks.
    ("hooks", &["core", "runtime"]),
    ("mcp", &["core", "runtime"]),
    ("server", &["core", "runtime", "interop"]),
];

#[test]
fn every_crate_depends_only_on_what_the_architecture_map_allows() {
    let mut wrong = Vec::new();
    let mut seen = Vec::new();
    for dir in crate_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let deps = workspace_dependencies(&dir);
        if name == "cli" || name == "test-support" {
            // The binaries may use everything; test-support is never a normal dependency.
            seen.push(name);
            continue;
        }
        let Some((_, allowed)) = MAY_DEPEND_ON
            .iter()
            .find(|(crate_name, _)| *crate_name == name)
        else {
            wrong.push(format!(
                "`{name}` is not on the map: add it to ARCHITECTURE.md and here"
            ));
            continue;
        };
        for dep in &deps {
            let short = dep.trim_start_matches("cairn-");
            if !allowed.contains(&short) {
                wrong.push(format!("`{name}` depends on `{short}`"));
            }
        }
        seen.push(name);
    }
    assert!(seen.len() >= 14, "the crates were found: {seen:?}");
    assert!(
        wrong.is_empty(),
        "dependencies the map does not allow:\n{}",
        wrong.join("\n")
    );
    for dir in crate_dirs() {
        assert!(
            !workspace_dependencies(&dir).contains("cairn-test-support"),
            "{}: cairn-test-support is a dev-dependency only",
            dir.display()
        );
    }
}

#[test]
fn each_crate_links_at_most_one_integration_test_binary() {
    let mut extra = Vec::new();
    for dir in crate_dirs() {
        extra.extend(extra_test_binaries(&dir));
    }
    assert!(
        extra.is_empty(),
        "integration tests belong in tests/it/ as modules of one binary: {extra:?}"
    );
}

/// The specification's requirement ids (`E-4`, `I-7`, …) that source code cites, each of which
/// the glossary must explain.
#[test]
fn every_requirement_id_the_code_cites_is_in_the_glossary() {
    let root = cairn_test_support::architecture::crates_dir().join("..");
    let glossary = std::fs::read_to_string(root.join("docs/glossary.md")).expect("glossary");
    let cited = cairn_test_support::architecture::requirement_ids(&root.join("crates"));
    assert!(cited.len() > 20, "ids were found: {cited:?}");
    let missing: Vec<&String> = cited
        .iter()
        .filter(|id| !glossary.contains(&format!("**{id}**")))
        .collect();
    assert!(
        missing.is_empty(),
        "cited in code but not explained in docs/glossary.md: {missing:?}"
    );
}

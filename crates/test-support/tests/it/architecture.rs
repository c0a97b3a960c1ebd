//! What `docs/ARCHITECTURE.md` promises about the layout holds for every crate.

use cairn_test_support::architecture::{crate_dirs, extra_test_binaries, module_cycles};

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

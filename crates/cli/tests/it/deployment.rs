//! The deployments that keep the authority out of the agent's reach (issue 20, acceptance 4):
//! `cairn serve` as an OS user of its own, run with the very command line of the systemd unit
//! (`deploy/systemd/cairn.service`), and a hook run as another user that is gated and
//! recorded and cannot read the store, the keys or the tokens; and the Compose file
//! (`deploy/compose/compose.yaml`), parsed, running the unit's command as a user that is not
//! root. The first needs root (to create the users) and util-linux's `setpriv`; without them it
//! says it is skipped, unless `CAIRN_REQUIRE_USERS` is set (`.ci/run` sets it as root).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Output, binary, with_stdin};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The arguments the systemd unit runs `cairn` with.
fn unit_arguments() -> Vec<String> {
    let unit = std::fs::read_to_string(repository().join("deploy/systemd/cairn.service")).unwrap();
    let line = unit
        .lines()
        .find_map(|line| line.strip_prefix("ExecStart="))
        .expect("the unit has ExecStart");
    let mut words = line.split_whitespace().map(str::to_owned);
    assert_eq!(words.next().as_deref(), Some("/usr/local/bin/cairn"));
    words.collect()
}

/// `key=value` settings of the unit.
fn unit_setting(name: &str) -> Option<String> {
    let unit = std::fs::read_to_string(repository().join("deploy/systemd/cairn.service")).unwrap();
    unit.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}=")).map(str::to_owned))
}

#[test]
fn the_compose_file_runs_the_units_command_as_an_unprivileged_user() {
    let text = std::fs::read_to_string(repository().join("deploy/compose/compose.yaml")).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).expect("compose.yaml is YAML");
    let compose = &docs[0];
    let cairn = &compose["services"]["cairn"];
    let command: Vec<String> = cairn["command"]
        .as_vec()
        .expect("a command list")
        .iter()
        .map(|v| v.as_str().expect("a string").to_owned())
        .collect();
    assert_eq!(
        command,
        unit_arguments(),
        "the same command as the systemd unit"
    );
    // Issue 34, 9: a descriptor per connection, far past the 1,024 of a default limit.
    let unit_limit: u64 = unit_setting("LimitNOFILE")
        .expect("the unit sets LimitNOFILE")
        .parse()
        .unwrap();
    assert!(unit_limit >= 65_536, "LimitNOFILE={unit_limit}");
    assert_eq!(
        cairn["ulimits"]["nofile"]["soft"].as_i64(),
        i64::try_from(unit_limit).ok(),
        "the same descriptor limit in Compose"
    );
    let user = cairn["user"].as_str().expect("a user");
    assert!(
        user != "root" && user != "0",
        "the service is not root in its container"
    );
    assert_eq!(Some(user.to_owned()), unit_setting("User"));
    let volumes: Vec<&str> = cairn["volumes"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        volumes.contains(&"cairn-data:/var/lib/cairn"),
        "{volumes:?}"
    );
    assert!(volumes.contains(&"cairn-socket:/run/cairn"), "{volumes:?}");
    // The store is the Compose PostgreSQL, its password a secret, never in the file.
    assert_eq!(
        cairn["environment"]["CAIRN_PG_HOST"].as_str(),
        Some("postgres:5432")
    );
    assert!(!compose["services"]["postgres"].is_badvalue());
    assert!(
        !text.contains("POSTGRES_PASSWORD:"),
        "no password in the file"
    );
    let entrypoint =
        std::fs::read_to_string(repository().join("deploy/compose/entrypoint.sh")).unwrap();
    assert!(entrypoint.contains("export CAIRN_STORE="));
    let dockerfile =
        std::fs::read_to_string(repository().join("deploy/compose/Dockerfile")).unwrap();
    assert!(dockerfile.contains(&format!("USER {user}")));
    // The unit: the folder its user's only, the socket's folder its group's.
    assert_eq!(unit_setting("StateDirectoryMode").as_deref(), Some("0700"));
    assert_eq!(
        unit_setting("RuntimeDirectoryMode").as_deref(),
        Some("0750")
    );
}

/// Users made for the test, removed after it.
struct Users(Vec<String>);

impl Drop for Users {
    fn drop(&mut self) {
        for user in self.0.iter().rev() {
            let _ = Command::new("userdel").arg(user).status();
            let _ = Command::new("groupdel").arg(user).output();
        }
    }
}

/// A process stopped (SIGTERM, then waited for) when dropped, before the users are removed.
struct Stopped(std::process::Child);

impl Stopped {
    fn stop(&mut self) {
        if self.0.try_wait().ok().flatten().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        self.stop();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// `program` run as `user` (its groups too), in `dir`, with a clean Cairn environment.
fn as_user(user: &str, dir: &Path, program: &Path) -> Command {
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid", user, "--regid", user, "--init-groups", "--"])
        .arg(program)
        .current_dir(dir)
        .env_remove("CAIRN_STORE")
        .env_remove("CAIRN_KEYS")
        .env_remove("CAIRN_SERVER")
        .env_remove("CAIRN_TOKEN")
        .env_remove("CAIRN_DATA")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env("HOME", dir)
        .env("CAIRN_HOME", dir.join(".cairn-home"))
        .stdin(Stdio::null());
    command
}

fn pre_tool_use(tool: &str, input: &Value, dir: &Path) -> String {
    serde_json::json!({
        "session_id": "separate-users",
        "transcript_path": dir.join("transcript.jsonl"),
        "cwd": dir,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": format!("toolu-{tool}"),
    })
    .to_string()
}

#[test]
fn a_service_of_its_own_user_gates_and_records_an_agent_of_another_user() {
    if !is_root() || !have("useradd") || !have("setpriv") {
        assert!(
            std::env::var_os("CAIRN_REQUIRE_USERS").is_none(),
            "CAIRN_REQUIRE_USERS is set, but this test needs root, useradd and setpriv"
        );
        eprintln!("separate users: skipped: needs root, useradd and setpriv (util-linux)");
        return;
    }
    let tag = std::process::id() % 100_000;
    let service_user = format!("cairnsvc{tag}");
    let agent_user = format!("cairnagt{tag}");
    let stranger = format!("cairnstr{tag}");
    let mut users = Users(Vec::new());
    for (user, groups) in [
        (&service_user, None),
        (&agent_user, Some(service_user.as_str())),
        (&stranger, None),
    ] {
        let mut add = Command::new("useradd");
        add.args([
            "--system",
            "--user-group",
            "--no-create-home",
            "--shell",
            "/bin/sh",
        ]);
        if let Some(group) = groups {
            add.args(["--groups", group]);
        }
        let status = add.arg(user).status().unwrap();
        assert!(status.success(), "useradd {user}");
        users.0.push(user.clone());
    }

    // A folder every user may enter, the binary every user may run.
    let base = tempfile::tempdir().unwrap();
    let base = base.path();
    let chmod = |path: &Path, mode: &str| {
        assert!(
            Command::new("chmod")
                .arg(mode)
                .arg(path)
                .status()
                .unwrap()
                .success()
        );
    };
    let chown = |path: &Path, owner: &str| {
        assert!(
            Command::new("chown")
                .arg(owner)
                .arg(path)
                .status()
                .unwrap()
                .success()
        );
    };
    chmod(base, "0755");
    let cairn = base.join("cairn");
    std::fs::copy(binary(), &cairn).unwrap();
    chmod(&cairn, "0755");
    // The unit's folders, in the test's place: /var/lib/cairn and /run/cairn.
    let data = base.join("var-lib-cairn");
    let run = base.join("run-cairn");
    std::fs::create_dir(&data).unwrap();
    std::fs::create_dir(&run).unwrap();
    chown(&data, &format!("{service_user}:{service_user}"));
    chmod(&data, "0700");
    chown(&run, &format!("{service_user}:{service_user}"));
    chmod(&run, "0750");
    let agent_home = base.join("agent");
    std::fs::create_dir(&agent_home).unwrap();
    chown(&agent_home, &format!("{agent_user}:{agent_user}"));
    for dir in [base.join("service"), base.join("stranger")] {
        std::fs::create_dir(&dir).unwrap();
        chmod(&dir, "0777");
    }

    let service_home = base.join("service");
    Output::of(
        as_user(&service_user, &service_home, &cairn)
            .args(["serve", "--init-only", "--data"])
            .arg(&data),
    )
    .expect(0);
    // A rule of the service's: no fetching from the web.
    let rule = data.join("policies/no-web.cedar");
    std::fs::write(
        &rule,
        "@id(\"no-web\") forbid(principal, action == Action::\"WebFetch\", resource);\n",
    )
    .unwrap();
    chown(&rule, &format!("{service_user}:{service_user}"));
    chmod(&rule, "0600");
    // And web searches wait for a person (issue 36).
    let asks = data.join("policies/search-asks.cedar");
    std::fs::write(
        &asks,
        "@id(\"search-asks\") @approval(\"web searches are approved by a person\") permit(principal, action == Action::\"WebSearch\", resource);\n",
    )
    .unwrap();
    chown(&asks, &format!("{service_user}:{service_user}"));
    chmod(&asks, "0600");
    let made = Output::of(
        as_user(&service_user, &service_home, &cairn)
            .args([
                "--json", "tokens", "create", "--tenant", "acme", "--role", "agent", "--data",
            ])
            .arg(&data),
    );
    let made: Value = serde_json::from_str(&made.stdout).unwrap();
    let token = made["token"].as_str().unwrap().to_owned();

    // The service, with the unit's command line.
    let args: Vec<String> = unit_arguments()
        .into_iter()
        .map(|arg| {
            arg.replace("/var/lib/cairn", data.to_str().unwrap())
                .replace("/run/cairn", run.to_str().unwrap())
        })
        .collect();
    let mut service = Stopped(
        as_user(&service_user, &service_home, &cairn)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let socket = run.join("cairn.sock");
    let started = Instant::now();
    while !socket.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the service did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // The agent's user can read none of the authority.
    for path in [
        data.join("cairn.db"),
        data.join("tokens.json"),
        data.join("policies/no-web.cedar"),
    ] {
        let read = Output::of(as_user(&agent_user, &agent_home, Path::new("/bin/cat")).arg(&path));
        assert_ne!(read.code, 0, "the agent read {}", path.display());
        assert!(read.stderr.contains("Permission denied"), "{}", read.stderr);
    }
    let keys =
        Output::of(as_user(&agent_user, &agent_home, Path::new("/bin/ls")).arg(data.join("keys")));
    assert_ne!(keys.code, 0, "the agent listed the keys");

    // It is still gated and recorded, through the socket its group may open.
    let hook = |user: &str, home: &Path, tool: &str, input: Value| {
        let mut command = as_user(user, home, &cairn);
        command
            .args(["hook", "claude-code"])
            .env("CAIRN_SERVER", format!("unix:{}", socket.display()))
            .env("CAIRN_TOKEN", &token);
        with_stdin(&mut command, &pre_tool_use(tool, &input, home))
    };
    let read = hook(
        &agent_user,
        &agent_home,
        "Read",
        serde_json::json!({"file_path": "a.txt"}),
    );
    assert_eq!(read.code, 0, "{}", read.stderr);
    let fetch = hook(
        &agent_user,
        &agent_home,
        "WebFetch",
        serde_json::json!({"url": "https://example.com"}),
    );
    assert_eq!(
        fetch.code, 2,
        "the service's rule denies it: {}",
        fetch.stderr
    );
    assert!(fetch.stderr.contains("no-web"), "{}", fetch.stderr);
    // A user outside the service's group cannot even reach it: denied, fail closed.
    let stranger_home = base.join("stranger");
    let shut_out = hook(
        &stranger,
        &stranger_home,
        "Read",
        serde_json::json!({"file_path": "a.txt"}),
    );
    assert_eq!(shut_out.code, 2, "{}", shut_out.stderr);

    // A held call: the agent cannot approve it, neither through the service with its token
    // nor through the store it cannot read; a person with an approver token can.
    let search = serde_json::json!({"query": "release notes"});
    let held = hook(&agent_user, &agent_home, "WebSearch", search.clone());
    assert_eq!(held.code, 2, "{}", held.stderr);
    let at = held.stderr.rfind("apr-").expect("a request id");
    let request = held.stderr[at..at + 28].to_owned();
    let mut itself = as_user(&agent_user, &agent_home, &cairn);
    itself
        .args(["--json", "approvals", "approve", &request])
        .env("CAIRN_SERVER", format!("unix:{}", socket.display()))
        .env("CAIRN_TOKEN", &token);
    assert_eq!(
        Output::of(&mut itself).expect(2).error_code(),
        "role_forbidden"
    );
    let mut direct = as_user(&agent_user, &agent_home, &cairn);
    direct
        .args(["--json", "--store"])
        .arg(data.join("cairn.db"))
        .args(["approvals", "approve", &request]);
    assert_ne!(
        Output::of(&mut direct).code,
        0,
        "the agent decided through the store"
    );
    let approver = Output::of(
        as_user(&service_user, &service_home, &cairn)
            .args([
                "--json", "tokens", "create", "--tenant", "acme", "--role", "approver", "--data",
            ])
            .arg(&data),
    );
    let approver: Value = serde_json::from_str(&approver.stdout).unwrap();
    let mut person = Command::new(&cairn);
    person
        .args(["--json", "approvals", "approve", &request])
        .env_remove("CAIRN_STORE")
        .env("CAIRN_SERVER", format!("unix:{}", socket.display()))
        .env("CAIRN_TOKEN", approver["token"].as_str().unwrap());
    // The token file is re-read within a second.
    let started = Instant::now();
    loop {
        let decided = Output::of(&mut person);
        if decided.code == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{decided:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let again = hook(&agent_user, &agent_home, "WebSearch", search);
    assert_eq!(again.code, 0, "the approved call runs: {}", again.stderr);

    // The doctor, as the agent, says the service runs as another user.
    let mut doctor = as_user(&agent_user, &agent_home, &cairn);
    doctor
        .args(["--json", "doctor"])
        .env("CAIRN_SERVER", format!("unix:{}", socket.display()))
        .env("CAIRN_TOKEN", &token);
    let doctor = Output::of(&mut doctor);
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    assert_eq!(report["ok"], true, "{}", doctor.stdout);
    assert!(
        report["setup"]
            .as_str()
            .unwrap()
            .contains("another OS user"),
        "{}",
        doctor.stdout
    );

    service.stop();
    // Both calls are in the service's store, under the token's tenant and name.
    let listed = Output::of(
        Command::new(&cairn)
            .args(["--json", "runs", "list", "--store"])
            .arg(data.join("cairn.db")),
    );
    let runs: Value = serde_json::from_str(&listed.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{listed:?}");
    assert_eq!(runs[0]["tenant_id"], "acme");
    // Read, the refused fetch, the held search and its request, the approval, its use and
    // the search it admitted.
    assert_eq!(runs[0]["records"], 7);
    let id = made["entry"]["id"].as_str().unwrap();
    assert!(
        runs[0]["run_id"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{id}."))
    );
    drop(users);
}

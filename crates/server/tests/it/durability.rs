//! When records become durable: in `group` durability (the default) before the answer; in
//! `async` within the window with no further request, at once when a request asks for
//! `sync`, and before the service stops.

use std::time::{Duration, Instant};

use cairn_server::Commit;
use cairn_server::tokens::Role;

use crate::{Harness, READ_A};

#[test]
fn by_default_a_step_is_answered_once_its_record_is_committed() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "g");
    for n in 1..=5 {
        assert_eq!(
            service.step(&agent, &run, READ_A).json()["decision"],
            "allow"
        );
        assert_eq!(
            service.records("acme", &run),
            n,
            "committed before the answer"
        );
    }
    // An outcome too.
    service.on_run(
        "POST",
        &agent,
        &run,
        "steps/0/outcome",
        Some(r#"{"status": "applied", "result": 1}"#),
    );
    assert_eq!(
        service.records("acme", &run),
        5,
        "an outcome is the next record's observation"
    );
    assert_eq!(service.step(&agent, &run, READ_A).json()["step"], 5);
    assert_eq!(service.records("acme", &run), 6);
}

#[test]
fn an_async_record_is_committed_within_the_window_without_another_request() {
    let service = Harness::start_with(Commit::Async {
        window: Duration::from_millis(50),
    });
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "b");
    assert_eq!(
        service.step(&agent, &run, READ_A).json()["decision"],
        "allow"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while service.records("acme", &run) == 0 {
        assert!(Instant::now() < deadline, "the group commit never came");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sync_asked_for_is_committed_before_the_answer() {
    let service = Harness::start_with(Commit::Async {
        window: Duration::from_secs(3_600),
    });
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "s");
    service.step(&agent, &run, READ_A);
    assert_eq!(service.records("acme", &run), 0, "async: not yet committed");
    service.step(
        &agent,
        &run,
        r#"{"tool": "files.read", "arguments": {"path": "a"}, "durability": "sync"}"#,
    );
    assert_eq!(service.records("acme", &run), 2);
}

#[test]
fn stopping_the_service_commits_every_waiting_record() {
    let mut service = Harness::start_with(Commit::Async {
        window: Duration::from_secs(3_600),
    });
    let agent = service.token("acme", Role::Agent);
    let run = service.open(&agent, "stop");
    for _ in 0..5 {
        assert_eq!(
            service.step(&agent, &run, READ_A).json()["decision"],
            "allow"
        );
    }
    assert_eq!(service.records("acme", &run), 0);
    service.stop();
    assert_eq!(service.records("acme", &run), 5);
}

#[test]
fn an_idle_run_is_let_go_and_resumed_from_the_store_when_used_again() {
    let service = Harness::start();
    let agent = service.token("acme", Role::Agent);
    let idle = service.open(&agent, "idle");
    let waiting = service.open(&agent, "waiting");
    service.step(&agent, &idle, READ_A);
    // An admitted call whose outcome is not reported yet keeps its run.
    service.step(&agent, &waiting, READ_A);
    assert_eq!(service.service.live_runs(), 2);
    service.service.flush_waiting(Duration::ZERO);
    service.call(
        "POST",
        &format!("/v1/runs/{idle}/steps/0/outcome"),
        Some(&agent),
        Some(r#"{"status": "applied", "result": 1}"#),
    );
    service.service.flush_waiting(Duration::ZERO);
    service.service.evict_idle(Duration::ZERO);
    assert_eq!(
        service.service.live_runs(),
        1,
        "the idle run is let go, the waiting one kept"
    );
    // Used again, it resumes where the store has it.
    let next = service.step(&agent, &idle, READ_A).json();
    assert_eq!(next["decision"], "allow");
    assert_eq!(next["step"], 1);
    assert_eq!(service.service.live_runs(), 2);
}

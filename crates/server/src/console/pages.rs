//! The console's pages, rendered with `maud` (every value escaped). Each page names the CLI
//! command that shows the same thing.

use maud::{DOCTYPE, Markup, html};

use cairn_runtime::ledger::record::{IntentRecord, TerminationReason};
use cairn_runtime::ledger::store::{RunInfo, StoredRow};

use super::RunsQuery;
use crate::api::approvals::ApprovalView;
use crate::tokens::Caller;

/// Runs shown per page.
pub(super) const RUNS_PER_PAGE: usize = 50;
/// The open runs whose records are read for what needs a person (the most recently active).
pub(super) const ATTENTION_RUNS: usize = 100;
/// The longest run whose health is read (from all its records) with each page of it.
pub(super) const HEALTH_MAX_RECORDS: u64 = 10_000;
/// The records before a held call shown with its approval request.
pub(super) const HISTORY_BEFORE_REQUEST: u64 = 10;
/// The states of the runs filter that only open runs can be in.
pub(super) const OPEN_STATES: [&str; 5] = ["open", "attention", "blocked", "waiting", "unreadable"];
/// Records shown per timeline page.
pub(super) const RECORDS_PER_PAGE: u64 = 100;

/// The frame of every page: the title, the navigation and who is signed in.
pub(super) fn layout(title: &str, person: Option<(&Caller, &str)>, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Cairn" }
                link rel="stylesheet" href="/ui/static/console.css";
                link rel="icon" href="/ui/static/icon.svg" type="image/svg+xml";
            }
            body {
                header {
                    span.brand { "Cairn" }
                    @if let Some((caller, csrf)) = person {
                        nav aria-label="Console" {
                            a href="/ui/runs" { "Runs" }
                            a href="/ui/approvals" { "Approvals" }
                        }
                        span.mono { (caller.tenant.as_str()) " · " (caller.role.as_str()) " " (caller.token_id) }
                        form method="post" action="/ui/logout" {
                            input type="hidden" name="csrf" value=(csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// The sign-in form, with its CSRF token and what went wrong last time.
pub(super) fn login(csrf: &str, error: Option<&str>) -> Markup {
    let body = html! {
        section.login {
            h1 { "Sign in" }
            p { "With an investigator's, approver's or admin's token (" code { "cairn tokens create --role investigator" } "). An agent's token cannot sign in." }
            @if let Some(error) = error {
                p.error role="alert" { (error) }
            }
            form method="post" action="/ui/login" {
                input type="hidden" name="csrf" value=(csrf);
                label for="token" { "Token" }
                input #token type="password" name="token" autocomplete="off" required autofocus;
                p { button type="submit" { "Sign in" } }
            }
        }
    };
    layout("Sign in", None, &body)
}

/// A table's head row of `columns`.
pub(super) fn head(columns: &[&str]) -> Markup {
    html! {
        thead { tr { @for column in columns { th scope="col" { (column) } } } }
    }
}

/// What a run's state is, as a person reads it: what needs them first.
fn state_of(run: &RunInfo, attention: Option<&cairn_runtime::Attention>) -> (String, &'static str) {
    if let Some(attention) = attention.filter(|a| a.needs_a_person()) {
        let mut needs = Vec::new();
        if attention.unresolved > 0 {
            needs.push("blocked on reconciliation");
        }
        if attention.waiting > 0 {
            needs.push("waiting for approval");
        }
        if attention.unreadable > 0 {
            needs.push("records that do not read");
        }
        return (needs.join(", "), "needs-person");
    }
    match run.termination {
        None => ("running".to_owned(), "running"),
        Some(TerminationReason::Completed) => ("closed".to_owned(), "closed"),
        Some(reason) => (format!("closed ({})", reason.as_str()), "closed"),
    }
}

/// The runs of the signed-in person's tenant — those that need a person first, then the
/// open ones, then by last activity — filtered and paged.
pub(super) fn runs(
    caller: &Caller,
    csrf: &str,
    query: &RunsQuery,
    mut runs: Vec<RunInfo>,
    attention: &std::collections::HashMap<cairn_core::RunId, cairn_runtime::Attention>,
) -> Markup {
    let wanted_state = query.state.as_deref().unwrap_or("all");
    let task = query.task.as_deref().unwrap_or("").trim();
    let needs = |run: &RunInfo| {
        attention
            .get(&run.meta.run_id)
            .is_some_and(cairn_runtime::Attention::needs_a_person)
    };
    let has = |run: &RunInfo, what: fn(&cairn_runtime::Attention) -> bool| {
        attention.get(&run.meta.run_id).is_some_and(what)
    };
    runs.retain(|run| {
        let in_state = match wanted_state {
            "closed" => run.terminated(),
            "attention" => needs(run),
            "blocked" => has(run, |a| a.unresolved > 0),
            "waiting" => has(run, |a| a.waiting > 0),
            "unreadable" => has(run, |a| a.unreadable > 0),
            _ => true,
        };
        in_state && (task.is_empty() || run.meta.task_id.as_str().contains(task))
    });
    runs.sort_by(|a, b| {
        needs(b)
            .cmp(&needs(a))
            .then(a.terminated().cmp(&b.terminated()))
            .then(b.last_recorded_at.cmp(&a.last_recorded_at))
    });
    let total = runs.len();
    let pages = total.div_ceil(RUNS_PER_PAGE).max(1);
    let page = query.page.unwrap_or(1).clamp(1, pages);
    let shown = runs
        .iter()
        .skip((page - 1) * RUNS_PER_PAGE)
        .take(RUNS_PER_PAGE);
    let link = |page: usize| {
        let mut url = format!("/ui/runs?state={wanted_state}&page={page}");
        if !task.is_empty() {
            url.push_str("&task=");
            url.push_str(&url_encode(task));
        }
        url
    };
    let cli = if OPEN_STATES.contains(&wanted_state) {
        "cairn runs list --unterminated"
    } else {
        "cairn runs list"
    };
    let states = [
        ("all", "all"),
        ("attention", "needs a person"),
        ("blocked", "blocked on reconciliation"),
        ("waiting", "waiting for approval"),
        ("unreadable", "records that do not read"),
        ("open", "open (unterminated)"),
        ("closed", "closed"),
    ];
    let body = html! {
        h1 { "Runs" }
        form.filters method="get" action="/ui/runs" {
            label { "State"
                select name="state" {
                    @for (value, label) in states {
                        option value=(value) selected[value == wanted_state] { (label) }
                    }
                }
            }
            label { "Task contains"
                input type="search" name="task" value=(task);
            }
            button type="submit" { "Filter" }
        }
        p { (total) " run(s)" @if pages > 1 { ", page " (page) " of " (pages) } "." }
        table.runs {
            (head(&["Run", "Task", "State", "Records", "Denied · held · boundaries", "Last activity", "Checkpoint"]))
            tbody {
                @for run in shown {
                    @let seen = attention.get(&run.meta.run_id);
                    @let (state, class) = state_of(run, seen);
                    tr {
                        td.mono data-label="Run" {
                            a href={"/ui/runs/" (url_encode(run.meta.run_id.as_str()))} { (run.meta.run_id.as_str()) }
                        }
                        td.mono data-label="Task" { (run.meta.task_id.as_str()) }
                        td data-label="State" { span class={"state " (class)} { (state) } }
                        td.num data-label="Records" { (run.records) }
                        td.num data-label="Denied · held · boundaries" {
                            @match seen {
                                Some(seen) => { (seen.denials) " · " (seen.held) " · " (seen.boundaries) }
                                None => "—",
                            }
                        }
                        td.mono data-label="Last activity" {
                            @match &run.last_recorded_at { Some(at) => (at.to_string()), None => "—" }
                        }
                        td data-label="Checkpoint" { @if run.checkpointed { "signed" } @else { "none yet" } }
                    }
                }
            }
        }
        @if pages > 1 {
            nav.pager aria-label="Pages" {
                @if page > 1 { a href=(link(page - 1)) rel="prev" { "← Newer" } }
                @if page < pages { a href=(link(page + 1)) rel="next" { "Older →" } }
            }
        }
        p { "What needs a person, and the counts, are read from the records of the " (ATTENTION_RUNS) " most recently active open runs of at most " (HEALTH_MAX_RECORDS) " records; a closed or longer run shows — (open it, or verify it). Whether a run was tampered with is known by verifying it: each run's page links its verification (" code { "cairn ledger verify --all" } " checks every run). A token sees its own tenant's runs: sign in with another tenant's token to see that tenant's." }
        p.cli { "The same in the CLI: " code { (cli) } }
    };
    layout("Runs", Some((caller, csrf)), &body)
}

/// `text` for a URL's query or a form (letters, digits and `-_.~` kept, the rest
/// percent-encoded).
#[must_use]
pub fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// What one record says, in a line: the tool and decision with its rules, the boundary event
/// with its reason, or why the run ended.
pub(super) fn what(record: &IntentRecord) -> Markup {
    html! {
        @if let Some(tool) = &record.tool {
            code { (tool.name.as_str()) }
            @if let Some(admission) = &record.admission {
                @let held = admission
                    .rule_ids
                    .iter()
                    .any(|rule| rule.as_str() == cairn_runtime::approvals::rules::PENDING);
                @let decision = if held { "held for a person" } else { admission.decision.as_str() };
                " " span class={"decision " (if held { "held" } else { admission.decision.as_str() })} { (decision) }
                @if !admission.rule_ids.is_empty() {
                    " by "
                    @for (i, rule) in admission.rule_ids.iter().enumerate() {
                        @if i > 0 { ", " }
                        code { (rule.as_str()) }
                    }
                }
            }
            @if let Some(agent) = &record.agent { " (agent " code { (agent.as_str()) } ")" }
        }
        @if let Some(boundary) = &record.boundary {
            @if boundary.event.as_str() == "context_compaction" {
                a href={"/ui/runs/" (url_encode(record.run_id.as_str())) "/boundaries/" (record.step_index)} { strong { (boundary.event.as_str()) } }
                " — what the record carries across it"
            } @else {
                strong { (boundary.event.as_str()) }
            }
            @if let Some(reason) = &boundary.reason { " — " (reason.as_str()) }
            @if let Some(key) = &boundary.idempotency_key { " · key " code { (key.as_str()) } }
            @if let Some(status) = &boundary.side_effect_status { " · " (status.as_str()) }
        }
        @if let Some(termination) = &record.termination {
            strong { "run closed: " (termination.reason.as_str()) }
            @if let Some(detail) = &termination.detail { " (" (detail.as_str()) ")" }
        }
    }
}

/// A run's records in step order, a page at a time from step `from`.
pub(super) fn timeline(
    caller: &Caller,
    csrf: &str,
    info: &RunInfo,
    from: u64,
    rows: &[StoredRow],
    health: Option<&cairn_runtime::Attention>,
) -> Markup {
    let run = info.meta.run_id.as_str();
    let (state, class) = state_of(info, health);
    let page = |from: u64| format!("/ui/runs/{}?from={from}", url_encode(run));
    let body = html! {
        p { a href="/ui/runs" { "← Runs" } }
        h1.mono { (run) }
        p {
            "Task " code { (info.meta.task_id.as_str()) } " · "
            span class={"state " (class)} { (state) }
            " · " (info.records) " records · checkpoint "
            @if info.checkpointed { "signed" } @else { "none yet" }
        }
        (health_panels(info, health))
        table.timeline {
            (head(&["Step", "Kind", "What", "Lane", "Recorded", "Digest"]))
            tbody {
                @for row in rows {
                    @match row {
                        Ok(record) => tr {
                            td.num { a href={"/ui/runs/" (url_encode(run)) "/steps/" (record.step_index)} { (record.step_index) } }
                            td { (record.kind.as_str()) }
                            td { (what(record)) }
                            td.mono { @if let Some(lane) = &record.lane_id { (lane.as_str()) } }
                            td.mono { (record.recorded_at.to_string()) }
                            td.mono title=(record.digest.to_string()) { (short(&record.digest.to_string())) }
                        },
                        Err(fault) => tr {
                            td.num { (fault.step_index) }
                            td colspan="5" { strong.error { "this row does not read: " } (fault.detail) }
                        },
                    }
                }
            }
        }
        nav.pager aria-label="Pages" {
            @if from > 0 { a href=(page(from.saturating_sub(RECORDS_PER_PAGE))) rel="prev" { "← Earlier" } }
            @if from.saturating_add(RECORDS_PER_PAGE) < info.records {
                a href=(page(from + RECORDS_PER_PAGE)) rel="next" { "Later →" }
            }
        }
        p { a href={"/ui/runs/" (url_encode(run)) "/verify"} { "Verify this run now" } }
        p.cli { "The same in the CLI: " code { "cairn ledger export --run " (run) " --format jsonl" } }
    };
    layout(run, Some((caller, csrf)), &body)
}

/// A digest shortened for a table (`sha256:0123456789ab…`); the whole one is its title.
pub(super) fn short(digest: &str) -> String {
    match digest.split_once(':') {
        Some((algorithm, hex)) => format!("{algorithm}:{}…", hex.get(..12).unwrap_or(hex)),
        None => digest.to_owned(),
    }
}

/// A page that says what went wrong (a run not found, a store failure), in the console's frame.
pub(super) fn problem(caller: &Caller, csrf: &str, title: &str, message: &str) -> Markup {
    let body = html! {
        p { a href="/ui/runs" { "← Runs" } }
        h1 { (title) }
        p.error role="alert" { (message) }
    };
    layout(title, Some((caller, csrf)), &body)
}

/// The requests of the tenant: those waiting for a person (or, `all`, every one).
pub(super) fn approvals(
    caller: &Caller,
    csrf: &str,
    all: bool,
    listed: &[cairn_runtime::approvals::Listed],
) -> Markup {
    let views: Vec<ApprovalView> = listed.iter().map(ApprovalView::from).collect();
    let body = html! {
        h1 { @if all { "Approval requests" } @else { "Waiting for a person" } }
        p {
            @if all { a href="/ui/approvals" { "Only those waiting" } }
            @else { a href="/ui/approvals?all=1" { "Every request, decided ones too" } }
        }
        @if views.is_empty() {
            p { "No request waits for a person." }
        } @else {
            table.runs {
                (head(&["Request", "Tool", "Run", "Step", "State", "Decide by"]))
                tbody {
                    @for view in &views {
                        tr {
                            td.mono data-label="Request" {
                                a href={"/ui/approvals/" (url_encode(&view.id))} { (view.id) }
                            }
                            td.mono data-label="Tool" { (view.tool) }
                            td.mono data-label="Run" {
                                a href={"/ui/runs/" (url_encode(&view.run_id))} { (view.run_id) }
                            }
                            td.num data-label="Step" { (view.step) }
                            td data-label="State" { span class={"state " (if view.state == "pending" { "needs-person" } else { "closed" })} { (view.state) } }
                            td.mono data-label="Decide by" { (view.decide_by) }
                        }
                    }
                }
            }
        }
        p.cli { "The same in the CLI: " code { @if all { "cairn approvals list --all" } @else { "cairn approvals list" } } }
    };
    layout("Approvals", Some((caller, csrf)), &body)
}

/// One request: what was held and why, its state, and — for an approver — the decision forms.
pub(super) fn approval(
    caller: &Caller,
    csrf: &str,
    listed: &cairn_runtime::approvals::Listed,
    held: Option<&cairn_runtime::content::StepView>,
    history: &[StoredRow],
) -> Markup {
    let view = ApprovalView::from(listed);
    let decides = matches!(
        caller.role,
        crate::tokens::Role::Approver | crate::tokens::Role::Admin
    );
    let action = |verb: &str| format!("/ui/approvals/{}/{verb}", url_encode(&view.id));
    let body = html! {
        p { a href="/ui/approvals" { "← Approvals" } }
        h1.mono { (view.id) }
        table {
            tbody {
                tr { th scope="row" { "State" } td { strong { (view.state) } } }
                tr { th scope="row" { "Tool" } td.mono { (view.tool) " " (view.tool_version) } }
                tr { th scope="row" { "Run and step" } td.mono {
                    a href={"/ui/runs/" (url_encode(&view.run_id)) "?from=" (view.step)} { (view.run_id) " step " (view.step) }
                } }
                tr { th scope="row" { "Asked by" } td {
                    @match held.map(|view| &view.row) {
                        Some(Ok(record)) => (what(record)),
                        Some(Err(fault)) => span.error { "the held step does not read: " (fault.detail) },
                        None => "—",
                    }
                } }
                tr { th scope="row" { "Action digest" } td.mono { (view.action_digest) } }
                tr { th scope="row" { "Policy set" } td.mono { (view.policy_set_version.as_deref().unwrap_or("—")) } }
                tr { th scope="row" { "Requested" } td.mono { (view.requested_at) } }
                tr { th scope="row" { "Decide by" } td.mono { (view.decide_by) } }
                @if let Some(decision) = &view.decision {
                    tr { th scope="row" { "Decision" } td { (decision) " by " code { (view.decided_by.as_deref().unwrap_or("?")) } } }
                }
                @if let Some(expires) = &view.approval_expires_at {
                    tr { th scope="row" { "Admits calls until" } td.mono { (expires) } }
                }
                @if let Some(uses) = view.uses {
                    tr { th scope="row" { "Uses" } td { (view.used.len()) " of " (uses) } }
                }
                @if let Some(by) = &view.revoked_by {
                    tr { th scope="row" { "Revoked by" } td.mono { (by) } }
                }
            }
        }
        p { "An approval admits exactly this action — the same tool and arguments (their digest above) in the same run — and nothing else." }
        @if let Some(view) = held {
            @if let Ok(record) = &view.row {
                @if record.args.is_some() { (content("The exact arguments", view.args.as_ref())) }
            }
        }
        @if !history.is_empty() {
            h2 { "Before it in the run" }
            table {
                (head(&["Step", "What", "Recorded"]))
                tbody {
                    @for row in history {
                        @match row {
                            Ok(record) => tr {
                                td.num { a href={"/ui/runs/" (url_encode(&view.run_id)) "/steps/" (record.step_index)} { (record.step_index) } }
                                td { (what(record)) }
                                td.mono { (record.recorded_at.to_string()) }
                            },
                            Err(fault) => tr {
                                td.num { (fault.step_index) }
                                td colspan="2" { strong.error { "this row does not read: " } (fault.detail) }
                            },
                        }
                    }
                }
            }
        }
        @if decides && view.state == "pending" && !view.run_closed {
            h2 { "Decide" }
            form.filters method="post" action=(action("approve")) {
                input type="hidden" name="csrf" value=(csrf);
                label { "Admits calls for" input type="text" name="expires_in" value="15m" size="6"; }
                label { "Calls" input type="number" name="uses" value="1" min="1" max="1000"; }
                label { "Note" input type="text" name="note" maxlength="1024"; }
                button type="submit" { "Approve" }
            }
            form.filters method="post" action=(action("deny")) {
                input type="hidden" name="csrf" value=(csrf);
                label { "Note" input type="text" name="note" maxlength="1024"; }
                button type="submit" { "Deny" }
            }
        }
        @if decides && view.state == "active" {
            form.filters method="post" action=(action("revoke")) {
                input type="hidden" name="csrf" value=(csrf);
                label { "Note" input type="text" name="note" maxlength="1024"; }
                button type="submit" { "Revoke" }
            }
        }
        p.cli { "The same in the CLI: " code { "cairn approvals show " (view.id) } }
    };
    layout(&view.id, Some((caller, csrf)), &body)
}

/// A run's verification, as it came out now: intact or not, the checkpoint and its signers,
/// and every finding at its step.
pub(super) fn verification(
    caller: &Caller,
    csrf: &str,
    report: &cairn_runtime::ledger::verify::RunReport,
    note: Option<&str>,
) -> Markup {
    use cairn_runtime::ledger::verify::CheckpointState;
    // A signed note's body: its origin, the tree size and the Merkle root, one per line.
    let root = note.and_then(|note| note.lines().nth(2));
    let run = report.run_id.as_str();
    let timeline = |step: u64| {
        format!(
            "/ui/runs/{}?from={}",
            url_encode(run),
            step - step % RECORDS_PER_PAGE
        )
    };
    let body = html! {
        p { a href={"/ui/runs/" (url_encode(run))} { "← " (run) } }
        h1 { "Verification" }
        @if report.is_intact() {
            p.state.closed role="status" { "Intact: every record's digest, the chain and the signed checkpoint check out." }
        } @else {
            p.state.needs-person role="alert" { "TAMPERED: " (report.findings.len()) " finding(s) below." }
        }
        table {
            tbody {
                tr { th scope="row" { "Records examined" } td { (report.records) } }
                tr { th scope="row" { "Closed" } td { @if report.terminated { "yes, with its terminal record" } @else { "no (still open)" } } }
                tr { th scope="row" { "Checkpoint" } td {
                    @match &report.checkpoint {
                        CheckpointState::Verified { size, signers } => {
                            "signed, covering " (size) " records, by "
                            @for (i, signer) in signers.iter().enumerate() { @if i > 0 { ", " } code { (signer) } }
                        }
                        CheckpointState::Absent => "none (a run gets one when it closes)",
                        CheckpointState::Failed { reason } => span.error { "does not verify: " (reason) },
                    }
                } }
                @if let Some(root) = root {
                    tr { th scope="row" { "Merkle root" } td.mono { (root) " (base64, as the checkpoint states it" @if !matches!(report.checkpoint, CheckpointState::Verified { .. }) { span.error { "; not trusted: the checkpoint does not verify" } } ")" } }
                }
            }
        }
        @if let Some(note) = note {
            details {
                summary { "The signed checkpoint (a C2SP signed note: origin, size, Merkle root, signatures)" }
                pre.mono { (note) }
            }
        }
        @if !report.findings.is_empty() {
            h2 { "Where it breaks" }
            table {
                (head(&["Step", "What", "Evidence"]))
                tbody {
                    @for finding in &report.findings {
                        tr {
                            td.num { @match finding.step {
                                Some(step) => a href=(timeline(step)) { (step) },
                                None => "—",
                            } }
                            td { strong { (finding.kind.as_str()) } }
                            td { (finding.message) }
                        }
                    }
                }
            }
        }
        p { a href={"/ui/runs/" (url_encode(run)) "/verify"} { "Verify again" } }
        p.cli { "The same in the CLI: " code { "cairn ledger verify --run " (run) } }
    };
    layout("Verification", Some((caller, csrf)), &body)
}

/// Retained content as it is shown: the bytes when they hash to the record's digest, else
/// what is wrong with them.
pub(super) fn content(label: &str, retained: Option<&cairn_runtime::content::Retained>) -> Markup {
    use cairn_runtime::content::Retained;
    html! {
        h2 { (label) }
        @match retained {
            None => p { "The record names none." },
            Some(Retained::Gone) => p { "Not retained (never kept, or its retention ended): only its digest is known." },
            Some(Retained::Altered { actual }) => p.error role="alert" {
                "ALTERED: the content store's bytes hash to " code { (actual.to_string()) } ", not to the digest the record holds. They are not shown."
            },
            Some(Retained::Matches(bytes)) => {
                p.state.closed { "Re-hashed now: matches the record's digest." }
                pre.mono { (String::from_utf8_lossy(bytes)) }
            },
        }
    }
}

/// One step of run `run` for an incident.
pub(super) fn step(
    caller: &Caller,
    csrf: &str,
    run: &str,
    step: u64,
    view: &cairn_runtime::content::StepView,
) -> Markup {
    let body = html! {
        p { a href={"/ui/runs/" (url_encode(run)) "?from=" (step - step % RECORDS_PER_PAGE)} { "← " (run) } }
        h1 { "Step " (step) }
        @match &view.row {
            Err(fault) => p.error role="alert" { "This record does not read: " (fault.detail) },
            Ok(record) => {
                @if !view.digest_matches {
                    p.error role="alert" { "TAMPERED: the record's content does not hash to its digest." }
                }
                table {
                    tbody {
                        tr { th scope="row" { "Kind" } td { (record.kind.as_str()) } }
                        tr { th scope="row" { "What" } td { (what(record)) } }
                        @if let Some(tool) = &record.tool {
                            tr { th scope="row" { "Tool version" } td.mono { (tool.version.as_str()) } }
                        }
                        @if let Some(admission) = &record.admission {
                            tr { th scope="row" { "Policy set" } td.mono { (admission.policy_set_version.to_string()) } }
                        }
                        tr { th scope="row" { "Lane" } td.mono { @match &record.lane_id { Some(lane) => (lane.as_str()), None => "—" } } }
                        @if let Some(args) = &record.args {
                            tr { th scope="row" { "Arguments digest" } td.mono { (args.digest.to_string()) " (" (args.size) " bytes)" } }
                        }
                        tr { th scope="row" { "Observation digest" } td.mono { @match &record.observation_digest { Some(d) => (d.to_string()), None => "—" } } }
                        tr { th scope="row" { "Record digest" } td.mono { (record.digest.to_string()) } }
                        tr { th scope="row" { "Previous digest" } td.mono { @match &record.prev_digest { Some(d) => (d.to_string()), None => "— (first record)" } } }
                        tr { th scope="row" { "Recorded" } td.mono { (record.recorded_at.to_string()) } }
                    }
                }
                @if record.args.is_some() { (content("Arguments", view.args.as_ref())) }
                (content("What the model was shown before it", view.observation.as_ref()))
            },
        }
        p.cli { "The same in the CLI: " code { "cairn ledger show --run " (run) " --step " (step) } }
    };
    layout(&format!("Step {step}"), Some((caller, csrf)), &body)
}

/// Activity health and continuity health side by side, never merged into one light (SPEC
/// D-3): a run can look busy and healthy while what it carries across a boundary is broken.
fn health_panels(info: &RunInfo, health: Option<&cairn_runtime::Attention>) -> Markup {
    let Some(health) = health else {
        return html! {
            p { "Health is read from all of a run's records, so it is not shown with each page of a run over "
                (HEALTH_MAX_RECORDS) " records: the runs list shows what it needs, "
                code { "cairn inspect-continuity" } " its continuity." }
        };
    };
    let run = info.meta.run_id.as_str();
    let at = |step: u64| format!("/ui/runs/{}/steps/{step}", url_encode(run));
    html! {
        div.health {
            section aria-labelledby="activity" {
                h2 #activity { "Activity" }
                ul {
                    li { (health.admitted) " call(s) admitted, " (health.denials) " refused, " (health.held) " held for a person" }
                    li { "last record " @match &info.last_recorded_at { Some(at) => (at.to_string()), None => "—" } }
                    li { @if info.terminated() { "closed" } @else { "open" } }
                }
            }
            section aria-labelledby="continuity" {
                h2 #continuity { "Continuity" }
                ul {
                    @if health.unresolved > 0 {
                        li.error { "BLOCKED on reconciliation: " (health.unresolved) " side effect(s) of unknown outcome; nothing consequential runs until a person reconciles" }
                    }
                    @match &health.continuity {
                        None => li { "no boundary yet: nothing has been carried across a compaction" },
                        Some((step, event, reason)) => li {
                            @match event.as_str() {
                                "context_compaction" => { "compacted at " a href=(format!("/ui/runs/{}/boundaries/{step}", url_encode(run))) { "step " (step) } "; no rehydration recorded since" },
                                "context_rehydration" => { "rehydrated at " a href=(at(*step)) { "step " (step) } ": validated" },
                                "continuity_validation_failed" => span.error { "BROKEN at " a href=(at(*step)) { "step " (step) } ": validation failed" },
                                _ => { "reconciled at " a href=(at(*step)) { "step " (step) } },
                            }
                            @if let Some(reason) = reason { " (" code { (reason.as_str()) } ")" }
                        },
                    }
                    @if health.waiting > 0 {
                        li { (health.waiting) " approval request(s) waiting for a person" }
                    }
                    @if health.unreadable > 0 {
                        li.error { (health.unreadable) " record(s) that do not read: verify the run" }
                    }
                }
            }
        }
    }
}

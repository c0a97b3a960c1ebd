//! The console's pages, rendered with `maud` (every value escaped). Each page names the CLI
//! command that shows the same thing.

use maud::{DOCTYPE, Markup, html};

use cairn_runtime::ledger::record::TerminationReason;
use cairn_runtime::ledger::store::RunInfo;

use super::RunsQuery;
use crate::tokens::Caller;

/// Runs shown per page.
pub(super) const RUNS_PER_PAGE: usize = 50;

/// The frame of every page: the title, the navigation and who is signed in.
fn layout(title: &str, person: Option<(&Caller, &str)>, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Cairn" }
                link rel="stylesheet" href="/ui/static/console.css";
            }
            body {
                header {
                    span.brand { "Cairn" }
                    @if let Some((caller, csrf)) = person {
                        nav aria-label="Console" {
                            a href="/ui/runs" { "Runs" }
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

/// What a run's state is, as a person sorts them: open runs may need someone.
fn state_of(run: &RunInfo) -> (&'static str, &'static str) {
    match run.termination {
        None => ("open", "running"),
        Some(TerminationReason::Completed) => ("completed", "closed"),
        Some(_) => ("ended", "closed"),
    }
}

/// The runs of the signed-in person's tenant, open ones first, filtered and paged.
pub(super) fn runs(
    caller: &Caller,
    csrf: &str,
    query: &RunsQuery,
    mut runs: Vec<RunInfo>,
) -> Markup {
    let wanted_state = query.state.as_deref().unwrap_or("all");
    let task = query.task.as_deref().unwrap_or("").trim();
    runs.retain(|run| {
        (wanted_state != "closed" || run.terminated())
            && (task.is_empty() || run.meta.task_id.as_str().contains(task))
    });
    runs.sort_by(|a, b| {
        a.terminated()
            .cmp(&b.terminated())
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
    let cli = if wanted_state == "open" {
        "cairn runs list --unterminated"
    } else {
        "cairn runs list"
    };
    let body = html! {
        h1 { "Runs" }
        form.filters method="get" action="/ui/runs" {
            label { "State"
                select name="state" {
                    @for (value, label) in [("all", "all"), ("open", "open (may need a person)"), ("closed", "closed")] {
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
            thead { tr {
                th scope="col" { "Run" } th scope="col" { "Task" } th scope="col" { "State" }
                th scope="col" { "Records" } th scope="col" { "Last activity" } th scope="col" { "Checkpoint" }
            } }
            tbody {
                @for run in shown {
                    @let (state, class) = state_of(run);
                    tr {
                        td.mono data-label="Run" { (run.meta.run_id.as_str()) }
                        td.mono data-label="Task" { (run.meta.task_id.as_str()) }
                        td data-label="State" { span class={"state " (class)} { (state) }
                            @if let Some(reason) = &run.termination { " (" (reason.as_str()) ")" } }
                        td.num data-label="Records" { (run.records) }
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

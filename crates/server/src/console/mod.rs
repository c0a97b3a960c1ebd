//! The web console for the people who approve and investigate (`/ui`), served by `cairn
//! serve` beside the API and reading through the same [`Service`] — one verdict, one store,
//! the same roles (SPEC D-3: what a person reads is what the CLI and the API say).
//!
//! Pages are rendered on the server (`maud`, which escapes every value it is given: a tool
//! name or a summary holding markup is shown as text, never run). Nothing is loaded from
//! elsewhere and no script runs: every answer carries a Content-Security-Policy that allows
//! the console's own stylesheet and nothing else.
//!
//! **Signing in.** A person signs in with an investigator's, approver's or admin's token —
//! never an agent's. The console keeps the token in its memory, bound to a random session id
//! that is the only thing the browser holds: a cookie that is `HttpOnly`, `SameSite=Strict`,
//! `Path=/ui` and `Secure` when the service serves TLS. The token is authenticated again at
//! every request (a revoked token ends its sessions at once); a session ends after
//! [`SESSION_IDLE`] without a request and after [`SESSION_LIFETIME`] in all.
//!
//! **Forms.** Every form that changes something carries the session's CSRF token, compared
//! in constant time; the sign-in form carries one bound to a cookie of its own (double
//! submit), so another site cannot sign a browser in with its own token.

mod crossing;
mod pages;
mod sessions;

pub use pages::url_encode;
pub use sessions::{OneTimeLogin, SESSION_COOKIE, SESSION_IDLE, SESSION_LIFETIME};

use sessions::{Person, UiSession, login, login_form, logout};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::service::Service;
use crate::tokens::{Caller, Role};

/// The largest form accepted.
const MAX_FORM_BYTES: usize = 16 * 1024;

/// The policy every console answer carries: the console's own stylesheet and images, forms
/// that post to the console, and nothing else — no script at all, no frame, no other origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// How the console is served.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// The service answers over TLS: cookies are `Secure`.
    pub tls: bool,
    /// A session with no request for this long ends ([`SESSION_IDLE`] by default).
    pub idle: std::time::Duration,
    /// A sign-in link that works once (`cairn ui`).
    pub one_time: OneTimeLogin,
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        Self {
            tls: false,
            idle: SESSION_IDLE,
            one_time: OneTimeLogin::default(),
        }
    }
}

/// The console's state: the service it reads through and the open sessions.
pub struct Console {
    service: Arc<Service>,
    options: ConsoleOptions,
    sessions: Mutex<HashMap<String, UiSession>>,
    /// The one-time sign-in code and the token it stands for, until used.
    one_time: Mutex<Option<(String, String)>>,
}

/// The console's router (`/ui/…`), over `service`.
pub fn router(service: Arc<Service>, options: ConsoleOptions) -> Router {
    Router::new()
        .route("/ui", get(|| async { Redirect::to("/ui/runs") }))
        .route("/ui/", get(|| async { Redirect::to("/ui/runs") }))
        .route("/ui/login", get(login_form).post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/runs", get(runs))
        .route("/ui/runs/{run}", get(run_timeline))
        .route("/ui/runs/{run}/verify", get(verify_run))
        .route("/ui/runs/{run}/steps/{step}", get(step_page))
        .route("/ui/runs/{run}/boundaries/{step}", get(boundary_page))
        .route("/ui/approvals", get(approvals_queue))
        .route("/ui/approvals/{id}", get(approval_page))
        .route("/ui/approvals/{id}/{action}", post(decide_approval))
        .route("/ui/static/console.css", get(stylesheet))
        .route("/ui/static/icon.svg", get(icon))
        .layer(axum::middleware::from_fn(security_headers))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_FORM_BYTES))
        .with_state(Console::new(service, options))
}

/// Adds the console's security headers to every answer.
async fn security_headers(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("console.css"),
    )
        .into_response()
}

/// The console's icon (a cairn of three stones), so that no browser asks elsewhere for one.
async fn icon() -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        include_str!("icon.svg"),
    )
        .into_response()
}

/// The runs page's filters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RunsQuery {
    /// One of [`pages::OPEN_STATES`], `closed`, or anything else for all.
    #[serde(default)]
    pub state: Option<String>,
    /// Runs whose task contains this.
    #[serde(default)]
    pub task: Option<String>,
    /// The page, from 1.
    #[serde(default)]
    pub page: Option<usize>,
}

async fn runs(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(query): Query<RunsQuery>,
) -> Response {
    let person = match console.enter(&headers, SIGNED_IN, "read runs") {
        Ok(person) => person,
        Err(answer) => return *answer,
    };
    let service = Arc::clone(&console.service);
    let open_only = query
        .state
        .as_deref()
        .is_some_and(|state| pages::OPEN_STATES.contains(&state));
    let read = move |caller: &Caller| {
        let runs = service.list_runs(caller, open_only, None)?;
        // What needs a person is read from the open runs' records (the most recently active
        // first, at most ATTENTION_RUNS of them, each of at most HEALTH_MAX_RECORDS records:
        // a longer run is read a page at a time, on its own page).
        let mut open: Vec<&cairn_runtime::ledger::store::RunInfo> = runs
            .iter()
            .filter(|run| !run.terminated() && run.records <= pages::HEALTH_MAX_RECORDS)
            .collect();
        open.sort_by_key(|run| std::cmp::Reverse(run.last_recorded_at));
        let ids: Vec<cairn_core::RunId> = open
            .iter()
            .take(pages::ATTENTION_RUNS)
            .map(|run| run.meta.run_id.clone())
            .collect();
        let attention = service.attention(caller, &ids)?;
        let attention: HashMap<cairn_core::RunId, cairn_runtime::Attention> =
            ids.into_iter().zip(attention).collect();
        Ok((runs, attention))
    };
    rendered(&person, read, |person, (runs, attention)| {
        pages::runs(&person.caller, &person.csrf, &query, runs, &attention)
    })
    .await
}

/// The timeline page's position.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TimelineQuery {
    /// The first step shown.
    #[serde(default)]
    pub from: Option<u64>,
}

async fn run_timeline(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    axum::extract::Path(run): axum::extract::Path<String>,
    Query(query): Query<TimelineQuery>,
) -> Response {
    let person = match console.enter(&headers, SIGNED_IN, "read runs") {
        Ok(person) => person,
        Err(answer) => return *answer,
    };
    let service = Arc::clone(&console.service);
    let from = query.from.unwrap_or(0);
    let read = move |caller: &Caller| {
        let run = Service::run_id(caller, &run)?;
        let (info, rows) = service.records_page(caller, &run, from, pages::RECORDS_PER_PAGE)?;
        // The health of a run is read from all its records: for long runs, not on every page.
        let health = if info.records <= pages::HEALTH_MAX_RECORDS {
            service.attention(caller, std::slice::from_ref(&run))?.pop()
        } else {
            None
        };
        Ok((info, rows, health))
    };
    rendered(&person, read, |person, (info, rows, health)| {
        pages::timeline(
            &person.caller,
            &person.csrf,
            &info,
            from,
            &rows,
            health.as_ref(),
        )
    })
    .await
}

/// `error` as a page in the console's frame, with its HTTP status.
fn problem(person: &Person, error: &crate::error::ApiError) -> Response {
    let status = error.status();
    let title = if status == StatusCode::NOT_FOUND {
        "Not found"
    } else {
        "Something went wrong"
    };
    (
        status,
        Html(
            pages::problem(
                &person.caller,
                &person.csrf,
                title,
                &format!("{} ({})", error.message(), error.code()),
            )
            .into_string(),
        ),
    )
        .into_response()
}

/// The approvals queue's filter.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ApprovalsQuery {
    /// Every request, not only those waiting.
    #[serde(default)]
    pub all: Option<String>,
}

/// Reads what a page shows on the blocking pool, as `person` (the store is read there), and
/// renders it; an error is a page in the console's frame.
async fn rendered<T: Send + 'static>(
    person: &Person,
    read: impl FnOnce(&Caller) -> Result<T, crate::error::ApiError> + Send + 'static,
    render: impl FnOnce(&Person, T) -> maud::Markup,
) -> Response {
    let caller = person.caller.clone();
    match tokio::task::spawn_blocking(move || read(&caller)).await {
        Ok(Ok(value)) => Html(render(person, value).into_string()).into_response(),
        Ok(Err(error)) => problem(person, &error),
        Err(_) => problem(
            person,
            &crate::error::ApiError::new(
                crate::error::ServerCode::INTERNAL,
                "reading what this page shows failed (the service logged it)",
            ),
        ),
    }
}

/// Who signs in to the console: people, never the agent.
const SIGNED_IN: &[Role] = crate::api::extract::roles::APPROVAL_READERS;

async fn approvals_queue(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(query): Query<ApprovalsQuery>,
) -> Response {
    use crate::api::extract::roles::APPROVAL_READERS;
    let person = match console.enter(&headers, APPROVAL_READERS, "read approval requests") {
        Ok(person) => person,
        Err(answer) => return *answer,
    };
    let service = Arc::clone(&console.service);
    let all = query.all.is_some();
    rendered(
        &person,
        move |caller: &Caller| service.list_approvals(caller, all),
        |person, listed| pages::approvals(&person.caller, &person.csrf, all, &listed),
    )
    .await
}

async fn approval_page(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    use crate::api::extract::roles::APPROVAL_READERS;
    let person = match console.enter(&headers, APPROVAL_READERS, "read approval requests") {
        Ok(person) => person,
        Err(answer) => return *answer,
    };
    let service = Arc::clone(&console.service);
    let read = move |caller: &Caller| {
        let listed = service.approval(caller, &id)?;
        // The held step (the rules that asked, its exact arguments when retained) and what
        // the run did just before it.
        let request = &listed.approval.request;
        let held = match service.step_view(caller, &request.run, request.step) {
            Ok(view) => Some(view),
            // A request whose step is not (yet) in the store shows without it; any other
            // failure is the page's.
            Err(error) if error.code() == crate::error::ServerCode::RECORD_NOT_FOUND.name() => None,
            Err(error) => return Err(error),
        };
        let from = request.step.saturating_sub(pages::HISTORY_BEFORE_REQUEST);
        let (_, history) = service.records_page(caller, &request.run, from, request.step - from)?;
        Ok((listed, held, history))
    };
    rendered(&person, read, |person, (listed, held, history)| {
        pages::approval(
            &person.caller,
            &person.csrf,
            &listed,
            held.as_ref(),
            &history,
        )
    })
    .await
}

/// An approver's decision, as the request's page posts it.
#[derive(Deserialize)]
struct DecisionForm {
    csrf: String,
    #[serde(default)]
    expires_in: Option<String>,
    #[serde(default)]
    uses: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

async fn decide_approval(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    axum::extract::Path((id, action)): axum::extract::Path<(String, String)>,
    Form(form): Form<DecisionForm>,
) -> Response {
    use crate::api::extract::roles::APPROVERS;
    use cairn_runtime::approvals::PersonDecision;
    let person = match console.poster(&headers, &form.csrf, APPROVERS, "decide approval requests") {
        Ok(person) => person,
        Err(answer) => return *answer,
    };
    let caller = person.caller.clone();
    let decision = match action.as_str() {
        "approve" => {
            let expires_in = cairn_runtime::duration::parse_duration(
                "expires_in",
                form.expires_in
                    .as_deref()
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or("15m")
                    .trim(),
            );
            let uses = form
                .uses
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map_or(Ok(1), str::parse::<u64>);
            match (expires_in, uses) {
                (Ok(expires_in), Ok(uses)) => PersonDecision::Approve { expires_in, uses },
                (Err(error), _) => return problem(&person, &crate::error::ApiError::from(error)),
                (_, Err(_)) => {
                    return problem(
                        &person,
                        &crate::error::ApiError::new(
                            crate::error::ServerCode::BODY_INVALID,
                            "`uses` must be a whole number (1 by default: one call)",
                        )
                        .at("form.uses"),
                    );
                }
            }
        }
        "deny" => PersonDecision::Deny,
        "revoke" => PersonDecision::Revoke,
        _ => return (StatusCode::NOT_FOUND, "no such decision").into_response(),
    };
    let note = form.note.filter(|note| !note.trim().is_empty());
    let service = Arc::clone(&console.service);
    let target = format!("/ui/approvals/{}", pages::url_encode(&id));
    let decided = tokio::task::spawn_blocking(move || {
        service.decide_approval(&caller, &id, &decision, note.as_deref())
    })
    .await;
    match decided {
        Ok(Ok(_)) => Redirect::to(&target).into_response(),
        Ok(Err(error)) => problem(&person, &error),
        Err(_) => problem(
            &person,
            &crate::error::ApiError::new(
                crate::error::ServerCode::INTERNAL,
                "recording the decision failed (the service logged it)",
            ),
        ),
    }
}

/// Verifies a run now — its chain, its records and its signed checkpoint against the
/// service's trusted keys — each time the page is asked for (investigator, admin).
async fn verify_run(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    axum::extract::Path(run): axum::extract::Path<String>,
) -> Response {
    use crate::api::extract::roles::PEOPLE;
    let person = match console.enter(&headers, PEOPLE, "verify runs") {
        Ok(person) => person,
        Err(answer) => return *answer,
    };
    let service = Arc::clone(&console.service);
    let read = move |caller: &Caller| {
        let run = Service::run_id(caller, &run)?;
        let report = service.verify(caller, &run)?;
        let note = service.checkpoint_note(caller, &run)?;
        Ok((report, note))
    };
    rendered(&person, read, |person, (report, note)| {
        pages::verification(&person.caller, &person.csrf, &report, note.as_deref())
    })
    .await
}

/// One step for an incident: its digests, policy version, lane and rules, and its retained
/// arguments and observation re-hashed as they are shown (people who read approval requests
/// read them: deciding needs the exact arguments).
async fn step_page(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    axum::extract::Path((run, step)): axum::extract::Path<(String, String)>,
) -> Response {
    use crate::api::extract::roles::APPROVAL_READERS;
    let person = match console.enter(&headers, APPROVAL_READERS, "read a step's content") {
        Ok(person) => person,
        Err(answer) => return *answer,
    };
    let service = Arc::clone(&console.service);
    let read = move |caller: &Caller| {
        let run = Service::run_id(caller, &run)?;
        let step = step_number(&step)?;
        let view = service.step_view(caller, &run, step)?;
        Ok((run, step, view))
    };
    rendered(&person, read, |person, (run, step, view)| {
        pages::step(&person.caller, &person.csrf, run.as_str(), step, &view)
    })
    .await
}

/// The path's step number.
fn step_number(text: &str) -> Result<u64, crate::error::ApiError> {
    text.parse::<u64>().map_err(|_| {
        crate::error::ApiError::new(
            crate::error::ServerCode::PARAMETER_INVALID,
            format!("`{text}` is not a step number"),
        )
        .at("path.step")
    })
}

/// One compaction for an investigator: the durable record beside the retained summary, how
/// the run came back, and the session's decisions compared now.
async fn boundary_page(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    axum::extract::Path((run, step)): axum::extract::Path<(String, String)>,
) -> Response {
    use crate::api::extract::roles::APPROVAL_READERS;
    let person = match console.enter(&headers, APPROVAL_READERS, "read a run's boundaries") {
        Ok(person) => person,
        Err(answer) => return *answer,
    };
    let service = Arc::clone(&console.service);
    let read = move |caller: &Caller| {
        let run = Service::run_id(caller, &run)?;
        let crossing = service.crossing(caller, &run, step_number(&step)?)?;
        let decisions = service.session_decisions(caller, &run)?;
        Ok((run, crossing, decisions))
    };
    rendered(&person, read, |person, (run, crossing, decisions)| {
        crossing::page(
            &person.caller,
            &person.csrf,
            run.as_str(),
            &crossing,
            decisions.as_ref(),
        )
    })
    .await
}

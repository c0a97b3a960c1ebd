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

mod pages;

pub use pages::url_encode;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::service::Service;
use crate::tokens::{Caller, Role};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "cairn_ui";
/// The sign-in form's CSRF cookie.
const LOGIN_COOKIE: &str = "cairn_ui_login";
/// A session with no request for this long ends.
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// A session ends this long after sign-in, whatever its use.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// The most sessions kept at once (the oldest go first).
const MAX_SESSIONS: usize = 10_000;
/// The largest form accepted.
const MAX_FORM_BYTES: usize = 16 * 1024;

/// The policy every console answer carries: the console's own stylesheet and images, forms
/// that post to the console, and nothing else — no script at all, no frame, no other origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// How the console is served.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConsoleOptions {
    /// The service answers over TLS: cookies are `Secure`.
    pub tls: bool,
}

/// One signed-in person.
struct UiSession {
    /// The token they signed in with (kept here only; authenticated at every request).
    bearer: String,
    /// The session's CSRF token.
    csrf: String,
    signed_in: Instant,
    last_seen: Instant,
}

/// The console's state: the service it reads through and the open sessions.
pub struct Console {
    service: Arc<Service>,
    options: ConsoleOptions,
    sessions: Mutex<HashMap<String, UiSession>>,
}

/// Who is signed in, as a page sees them.
struct Person {
    caller: Caller,
    csrf: String,
}

/// A random token of 32 bytes, in hex.
fn random_token() -> String {
    use rand_core::RngCore as _;
    let mut bytes = [0_u8; 32];
    rand_core::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `a` and `b` are equal, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// The value of cookie `name` in `headers`.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

impl Console {
    /// The console over `service`.
    #[must_use]
    pub fn new(service: Arc<Service>, options: ConsoleOptions) -> Arc<Self> {
        Arc::new(Self {
            service,
            options,
            sessions: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, UiSession>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A `Set-Cookie` value for `name`, expiring with the session (`None`: cleared).
    fn set_cookie(&self, name: &str, value: Option<&str>) -> HeaderValue {
        let secure = if self.options.tls { "; Secure" } else { "" };
        let text = match value {
            Some(value) => format!(
                "{name}={value}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
                SESSION_LIFETIME.as_secs()
            ),
            None => format!("{name}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0{secure}"),
        };
        HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The person the request's session cookie names, their token authenticated again now;
    /// `None` (and the session forgotten) when there is none, it expired, or the token no
    /// longer authenticates.
    fn person(&self, headers: &HeaderMap) -> Option<Person> {
        let id = cookie(headers, SESSION_COOKIE)?;
        let now = Instant::now();
        let mut sessions = self.lock();
        let session = sessions.get_mut(id)?;
        let expired = now.duration_since(session.last_seen) > SESSION_IDLE
            || now.duration_since(session.signed_in) > SESSION_LIFETIME;
        let caller = if expired {
            None
        } else {
            self.service
                .authenticate(&session.bearer)
                .ok()
                .filter(|caller| caller.role != Role::Agent)
        };
        match caller {
            Some(caller) => {
                session.last_seen = now;
                Some(Person {
                    caller,
                    csrf: session.csrf.clone(),
                })
            }
            None => {
                sessions.remove(id);
                None
            }
        }
    }

    /// The person who posted a form with the CSRF token `csrf`: signed in in one of `roles`
    /// (see [`Console::enter`]), and the token their session's; else the answer (403 for a
    /// token that does not match).
    fn poster(
        &self,
        headers: &HeaderMap,
        csrf: &str,
        roles: &[Role],
        what: &str,
    ) -> Result<Person, Box<Response>> {
        let person = self.enter(headers, roles, what)?;
        if same(&person.csrf, csrf) {
            Ok(person)
        } else {
            Err(Box::new(
                (
                    StatusCode::FORBIDDEN,
                    "the form's CSRF token does not match your session",
                )
                    .into_response(),
            ))
        }
    }

    /// Opens a session for `bearer`, forgetting the oldest when there are too many.
    fn open(&self, bearer: String) -> (String, String) {
        let id = random_token();
        let csrf = random_token();
        let now = Instant::now();
        let mut sessions = self.lock();
        if sessions.len() >= MAX_SESSIONS {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, session)| session.last_seen)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                sessions.remove(&oldest);
            }
        }
        sessions.insert(
            id.clone(),
            UiSession {
                bearer,
                csrf: csrf.clone(),
                signed_in: now,
                last_seen: now,
            },
        );
        (id, csrf)
    }
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

/// The page for a request without a session: back to the sign-in form.
fn to_login() -> Response {
    Redirect::to("/ui/login").into_response()
}

async fn login_form(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    if console.person(&headers).is_some() {
        return Redirect::to("/ui/runs").into_response();
    }
    let csrf = random_token();
    (
        StatusCode::OK,
        [(
            header::SET_COOKIE,
            console.set_cookie(LOGIN_COOKIE, Some(&csrf)),
        )],
        Html(pages::login(&csrf, None).into_string()),
    )
        .into_response()
}

/// The sign-in form's fields.
#[derive(Deserialize)]
struct LoginForm {
    token: String,
    csrf: String,
}

async fn login(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let fresh = random_token();
    let again = |status: StatusCode, message: &str| {
        (
            status,
            [(
                header::SET_COOKIE,
                console.set_cookie(LOGIN_COOKIE, Some(&fresh)),
            )],
            Html(pages::login(&fresh, Some(message)).into_string()),
        )
            .into_response()
    };
    let bound = cookie(&headers, LOGIN_COOKIE).is_some_and(|expected| same(expected, &form.csrf));
    if !bound {
        return again(
            StatusCode::FORBIDDEN,
            "The sign-in form expired or came from elsewhere; sign in again.",
        );
    }
    let token = form.token.trim().to_owned();
    match console.service.authenticate(&token) {
        Ok(caller) if caller.role == Role::Agent => again(
            StatusCode::FORBIDDEN,
            "An agent's token cannot sign in to the console: use an investigator's, approver's or admin's token.",
        ),
        Ok(_) => {
            let (id, _) = console.open(token);
            let mut response = Redirect::to("/ui/runs").into_response();
            let headers = response.headers_mut();
            headers.append(
                header::SET_COOKIE,
                console.set_cookie(SESSION_COOKIE, Some(&id)),
            );
            headers.append(header::SET_COOKIE, console.set_cookie(LOGIN_COOKIE, None));
            response
        }
        Err(_) => again(
            StatusCode::UNAUTHORIZED,
            "That token is malformed, unknown or revoked.",
        ),
    }
}

/// A form that changes something: its CSRF token.
#[derive(Deserialize)]
struct CsrfForm {
    csrf: String,
}

async fn logout(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    if let Err(answer) = console.poster(&headers, &form.csrf, SIGNED_IN, "sign out") {
        return *answer;
    }
    if let Some(id) = cookie(&headers, SESSION_COOKIE) {
        console.lock().remove(id);
    }
    let mut response = Redirect::to("/ui/login").into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, console.set_cookie(SESSION_COOKIE, None));
    response
}

/// The runs page's filters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RunsQuery {
    /// `open`, `closed`, or anything else for all.
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
    let open_only = matches!(query.state.as_deref(), Some("open" | "attention"));
    let read = move |caller: &Caller| {
        let runs = service.list_runs(caller, open_only, None)?;
        // What needs a person is read from the open runs' records (the most recently active
        // first, at most ATTENTION_RUNS of them).
        let mut open: Vec<&cairn_runtime::ledger::store::RunInfo> =
            runs.iter().filter(|run| !run.terminated()).collect();
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

impl Console {
    /// The signed-in person, when their role is one of `roles` (the API's own role sets);
    /// else the answer: the sign-in form, or a page that says the role may not `what`.
    fn enter(
        &self,
        headers: &HeaderMap,
        roles: &[Role],
        what: &str,
    ) -> Result<Person, Box<Response>> {
        let Some(person) = self.person(headers) else {
            return Err(Box::new(to_login()));
        };
        if roles.contains(&person.caller.role) {
            return Ok(person);
        }
        let refused = crate::error::ApiError::new(
            crate::error::ServerCode::ROLE_FORBIDDEN,
            format!(
                "a token of role `{}` may not {what}",
                person.caller.role.as_str()
            ),
        );
        Err(Box::new(problem(&person, &refused)))
    }
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
        // The held step, for the rules that asked for a person.
        let request = &listed.approval.request;
        let (_, rows) = service.records_page(caller, &request.run, request.step, 1)?;
        Ok((listed, rows.into_iter().next()))
    };
    rendered(&person, read, |person, (listed, held)| {
        pages::approval(&person.caller, &person.csrf, &listed, held.as_ref())
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
    rendered(
        &person,
        move |caller: &Caller| service.verify(caller, &Service::run_id(caller, &run)?),
        |person, report| pages::verification(&person.caller, &person.csrf, &report),
    )
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
        let step = step.parse::<u64>().map_err(|_| {
            crate::error::ApiError::new(
                crate::error::ServerCode::PARAMETER_INVALID,
                format!("`{step}` is not a step number"),
            )
            .at("path.step")
        })?;
        let view = service.step_view(caller, &run, step)?;
        Ok((run, step, view))
    };
    rendered(&person, read, |person, (run, step, view)| {
        pages::step(&person.caller, &person.csrf, run.as_str(), step, &view)
    })
    .await
}

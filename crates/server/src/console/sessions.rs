//! Signing in to the console: sessions, their cookies, the CSRF tokens of forms, and the
//! one-time sign-in link `cairn ui` prints.
//!
//! The console keeps a person's token in its memory, bound to a random session id that is
//! the only thing the browser holds (a cookie that is `HttpOnly`, `SameSite=Strict`,
//! `Path=/ui`, `Secure` over TLS). The token is authenticated again at every request; a
//! session ends after its idle time without a request and after [`SESSION_LIFETIME`] in all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{Console, ConsoleOptions, SIGNED_IN, pages, problem};
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
/// One signed-in person.
pub(super) struct UiSession {
    /// The token they signed in with (kept here only; authenticated at every request).
    bearer: String,
    /// The session's CSRF token.
    csrf: String,
    signed_in: Instant,
    last_seen: Instant,
}

/// Who is signed in, as a page sees them.
pub(super) struct Person {
    pub(super) caller: Caller,
    pub(super) csrf: String,
}

/// A random token of 32 bytes, in hex.
pub(super) fn random_token() -> String {
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
    pub fn new(service: Arc<Service>, mut options: ConsoleOptions) -> Arc<Self> {
        let one_time = Mutex::new(options.one_time.take_pair());
        Arc::new(Self {
            service,
            options,
            sessions: Mutex::new(HashMap::new()),
            one_time,
        })
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, UiSession>> {
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
        let expired = now.duration_since(session.last_seen) > self.options.idle
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
    pub(super) fn poster(
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

/// The page for a request without a session: back to the sign-in form.
fn to_login() -> Response {
    Redirect::to("/ui/login").into_response()
}

/// `GET /ui/login`: the sign-in form — or, with the one-time code `cairn ui` printed, a
/// session at once (the code works once).
pub(super) async fn login_form(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(link): Query<OneTimeQuery>,
) -> Response {
    if let Some(code) = link.code.as_deref() {
        return console.sign_in_once(code);
    }
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
pub(super) struct LoginForm {
    token: String,
    csrf: String,
}

pub(super) async fn login(
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
pub(super) struct CsrfForm {
    csrf: String,
}

pub(super) async fn logout(
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

impl Console {
    /// The signed-in person, when their role is one of `roles` (the API's own role sets);
    /// else the answer: the sign-in form, or a page that says the role may not `what`.
    pub(super) fn enter(
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
/// The one-time sign-in link's query.
#[derive(Deserialize)]
pub(super) struct OneTimeQuery {
    #[serde(default)]
    code: Option<String>,
}

/// A sign-in link that works once: `GET /ui/login?code=<code>` opens a session for the
/// bearer token it stands for (`cairn ui` prints it, as Jupyter prints its token URL; the
/// token itself is never shown).
#[derive(Clone, Default)]
pub struct OneTimeLogin(Option<(String, String)>);

impl std::fmt::Debug for OneTimeLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "OneTimeLogin(set)"
        } else {
            "OneTimeLogin(none)"
        })
    }
}

impl OneTimeLogin {
    /// A link for `bearer`, with a fresh random code; returns it and the code.
    #[must_use]
    pub fn new(bearer: String) -> (Self, String) {
        let code = random_token();
        (Self(Some((code.clone(), bearer))), code)
    }

    fn take_pair(&mut self) -> Option<(String, String)> {
        self.0.take()
    }
}

impl Console {
    /// Opens a session for the one-time code `code` when it is the console's (and forgets the
    /// code); else the sign-in form, saying the link was used or is wrong.
    fn sign_in_once(&self, code: &str) -> Response {
        let bearer = {
            let mut slot = self.one_time.lock().unwrap_or_else(PoisonError::into_inner);
            match slot.as_ref() {
                Some((expected, _)) if same(expected, code) => {
                    slot.take().map(|(_, bearer)| bearer)
                }
                _ => None,
            }
        };
        let Some(bearer) = bearer else {
            let csrf = random_token();
            return (
                StatusCode::FORBIDDEN,
                [(header::SET_COOKIE, self.set_cookie(LOGIN_COOKIE, Some(&csrf)))],
                Html(
                    pages::login(
                        &csrf,
                        Some("That sign-in link was already used, or is not this console's: start `cairn ui` again for a new one."),
                    )
                    .into_string(),
                ),
            )
                .into_response();
        };
        let (id, _) = self.open(bearer);
        let mut response = Redirect::to("/ui/runs").into_response();
        response.headers_mut().append(
            header::SET_COOKIE,
            self.set_cookie(SESSION_COOKIE, Some(&id)),
        );
        response
    }
}

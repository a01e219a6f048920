//! The survey form app (seed 003's workload): a page with a form and a session cookie, a form
//! post that redirects, a thanks page.
//!
//! `GET /form` answers 200 with an HTML form and, when the client presents no session the
//! server issued, a `Set-Cookie: session=ID; Path=/; HttpOnly`. `POST /form` with that cookie
//! and an `application/x-www-form-urlencoded` body holding `name` (non-empty) and `rating`
//! (1 to 5) answers 302 `Location: /thanks`; without the cookie 403, with a bad body 400.
//! `GET /thanks` answers 200 with the cookie, else 403. Other methods get 405. A scenario that
//! forgets its cookie jar, sends the wrong content type or skips a field is refused here and
//! counted in `/__stats`, so tests assert on what the server saw.
//!
//! Session ids carry their own proof: a random number and its keyed hash under a key drawn when
//! the server starts, so any thread checks any id without a shared session table.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use http::StatusCode;

/// MAX_FORM_BODY caps the form body kept in memory (413 beyond).
pub(crate) const MAX_FORM_BODY: usize = 64 * 1024;

/// FORM_CONTENT_TYPE is the only body type `POST /form` accepts.
pub(crate) const FORM_CONTENT_TYPE: &str = "application/x-www-form-urlencoded";

/// PAGE is the form `GET /form` serves.
pub(crate) const PAGE: &str = "<!doctype html>\n<html><head><title>Survey</title></head><body>\n\
<form method=\"post\" action=\"/form\">\n\
<label>Name <input name=\"name\" required></label>\n\
<label>Rating <input name=\"rating\" type=\"number\" min=\"1\" max=\"5\" required></label>\n\
<button type=\"submit\">Send</button>\n</form>\n</body></html>\n";

/// THANKS is the page the redirect leads to.
pub(crate) const THANKS: &str =
    "<!doctype html>\n<html><head><title>Thanks</title></head><body><p>Thanks!</p></body></html>\n";

/// Verb is the request method as far as the form app cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    /// Get (HEAD too: the same answer without a body).
    Get,
    /// Post submits the form.
    Post,
    /// Other methods are not allowed on the form routes.
    Other,
}

/// Page is which of the app's paths was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Page {
    /// Form is `/form`.
    Form,
    /// Thanks is `/thanks`.
    Thanks,
}

/// Outcome is the app's answer to one request, and what `/__stats` counts it as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// FormPage: 200 with the form; `new_session` sets a cookie.
    FormPage {
        /// new_session: the client had no valid session, so one is issued.
        new_session: bool,
    },
    /// Posted: 302 to /thanks.
    Posted,
    /// ThanksPage: 200 with the thanks page.
    ThanksPage,
    /// NoSession: 403, the session cookie is absent or not one this server issued.
    NoSession,
    /// BadForm: 400 with a one-line reason (wrong content type, missing or bad field).
    BadForm(String),
    /// TooLarge: 413, the body is over `MAX_FORM_BODY`.
    TooLarge,
    /// NotAllowed: 405.
    NotAllowed,
}

impl Outcome {
    /// status is the HTTP status the outcome answers with.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Outcome::FormPage { .. } | Outcome::ThanksPage => StatusCode::OK,
            Outcome::Posted => StatusCode::FOUND,
            Outcome::NoSession => StatusCode::FORBIDDEN,
            Outcome::BadForm(_) => StatusCode::BAD_REQUEST,
            Outcome::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Outcome::NotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        }
    }
}

/// Visit is what the app needs from a request: its method, whether it carried a valid session,
/// its content type and its body (when it was a post).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Visit<'a> {
    pub(crate) verb: Verb,
    pub(crate) session: bool,
    pub(crate) form_type: bool,
    pub(crate) body: &'a [u8],
    pub(crate) too_large: bool,
}

/// decide answers one visit to one page. A missing session is refused before the body is
/// judged, as a real app's session middleware would.
pub(crate) fn decide(page: Page, visit: &Visit<'_>) -> Outcome {
    match (page, visit.verb) {
        (_, Verb::Other) | (Page::Thanks, Verb::Post) => Outcome::NotAllowed,
        (Page::Form, Verb::Get) => Outcome::FormPage {
            new_session: !visit.session,
        },
        _ if !visit.session => Outcome::NoSession,
        (Page::Thanks, Verb::Get) => Outcome::ThanksPage,
        (Page::Form, Verb::Post) => {
            if visit.too_large {
                Outcome::TooLarge
            } else if !visit.form_type {
                Outcome::BadForm(format!("expected Content-Type: {FORM_CONTENT_TYPE}"))
            } else {
                match check_fields(visit.body) {
                    Ok(()) => Outcome::Posted,
                    Err(reason) => Outcome::BadForm(reason),
                }
            }
        }
    }
}

/// check_fields wants `name` non-empty and `rating` a whole number from 1 to 5.
fn check_fields(body: &[u8]) -> Result<(), String> {
    let (mut name, mut rating) = (None, None);
    for (key, value) in form_urlencoded::parse(body) {
        match key.as_ref() {
            "name" => name = Some(value),
            "rating" => rating = Some(value),
            _ => {}
        }
    }
    match name {
        Some(name) if !name.trim().is_empty() => {}
        Some(_) => return Err("field name is empty".to_string()),
        None => return Err("missing field name".to_string()),
    }
    match rating.as_deref().map(str::parse::<u8>) {
        Some(Ok(1..=5)) => Ok(()),
        Some(_) => Err("field rating must be 1 to 5".to_string()),
        None => Err("missing field rating".to_string()),
    }
}

/// Sessions issues and checks session ids under a key drawn when the server starts.
#[derive(Debug)]
pub(crate) struct Sessions {
    key: RandomState,
}

impl Sessions {
    pub(crate) fn new() -> Sessions {
        Sessions {
            key: RandomState::new(),
        }
    }

    /// issue makes a session id from a random number: 16 hex digits of it, 16 of its proof.
    pub(crate) fn issue(&self, random: u64) -> String {
        format!("{random:016x}{:016x}", self.key.hash_one(random))
    }

    /// valid is true for an id this server issued.
    pub(crate) fn valid(&self, id: &str) -> bool {
        if id.len() != 32 || !id.is_ascii() {
            return false;
        }
        let (random, proof) = id.split_at(16);
        match (
            u64::from_str_radix(random, 16),
            u64::from_str_radix(proof, 16),
        ) {
            (Ok(random), Ok(proof)) => self.key.hash_one(random) == proof,
            _ => false,
        }
    }
}

/// session_cookie finds the `session` value in a `Cookie` header ("a=1; session=ID; b=2").
pub(crate) fn session_cookie(header: &[u8]) -> Option<&str> {
    let header = std::str::from_utf8(header).ok()?;
    header.split(';').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name.trim() == "session").then(|| value.trim().trim_matches('"'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visit(verb: Verb, session: bool, form_type: bool, body: &str) -> Visit<'_> {
        Visit {
            verb,
            session,
            form_type,
            body: body.as_bytes(),
            too_large: false,
        }
    }

    #[test]
    // long: a table of cases, one visit and its outcome each.
    fn visits_are_decided() {
        let good = "name=Ada&rating=5";
        let bad = |reason: &str| Outcome::BadForm(reason.to_string());
        let cases: Vec<(&str, Page, Visit<'_>, Outcome)> = vec![
            (
                "first visit gets a session",
                Page::Form,
                visit(Verb::Get, false, false, ""),
                Outcome::FormPage { new_session: true },
            ),
            (
                "returning visit keeps it",
                Page::Form,
                visit(Verb::Get, true, false, ""),
                Outcome::FormPage { new_session: false },
            ),
            (
                "post with session",
                Page::Form,
                visit(Verb::Post, true, true, good),
                Outcome::Posted,
            ),
            (
                "post with extra fields and escapes",
                Page::Form,
                visit(Verb::Post, true, true, "x=1&name=Ada+L%C3%B6w&rating=1"),
                Outcome::Posted,
            ),
            (
                "post without session",
                Page::Form,
                visit(Verb::Post, false, true, good),
                Outcome::NoSession,
            ),
            (
                "no session beats a bad body",
                Page::Form,
                visit(Verb::Post, false, false, ""),
                Outcome::NoSession,
            ),
            (
                "wrong content type",
                Page::Form,
                visit(Verb::Post, true, false, good),
                bad("expected Content-Type: application/x-www-form-urlencoded"),
            ),
            (
                "missing name",
                Page::Form,
                visit(Verb::Post, true, true, "rating=3"),
                bad("missing field name"),
            ),
            (
                "empty name",
                Page::Form,
                visit(Verb::Post, true, true, "name=+&rating=3"),
                bad("field name is empty"),
            ),
            (
                "missing rating",
                Page::Form,
                visit(Verb::Post, true, true, "name=a"),
                bad("missing field rating"),
            ),
            (
                "rating out of range",
                Page::Form,
                visit(Verb::Post, true, true, "name=a&rating=6"),
                bad("field rating must be 1 to 5"),
            ),
            (
                "rating not a number",
                Page::Form,
                visit(Verb::Post, true, true, "name=a&rating=five"),
                bad("field rating must be 1 to 5"),
            ),
            (
                "thanks with session",
                Page::Thanks,
                visit(Verb::Get, true, false, ""),
                Outcome::ThanksPage,
            ),
            (
                "thanks without session",
                Page::Thanks,
                visit(Verb::Get, false, false, ""),
                Outcome::NoSession,
            ),
            (
                "post to thanks",
                Page::Thanks,
                visit(Verb::Post, true, true, good),
                Outcome::NotAllowed,
            ),
            (
                "delete the form",
                Page::Form,
                visit(Verb::Other, true, false, ""),
                Outcome::NotAllowed,
            ),
        ];
        for (label, page, visit, want) in cases {
            assert_eq!(decide(page, &visit), want, "{label}");
        }
        let mut huge = visit(Verb::Post, true, true, good);
        huge.too_large = true;
        assert_eq!(decide(Page::Form, &huge), Outcome::TooLarge);
    }

    #[test]
    fn sessions_prove_themselves() {
        let sessions = Sessions::new();
        let id = sessions.issue(42);
        assert_eq!(id.len(), 32);
        assert!(sessions.valid(&id));
        let other = Sessions::new();
        assert!(!other.valid(&id), "another server's id");
        let mut forged = id.clone().into_bytes();
        forged[31] = if forged[31] == b'0' { b'1' } else { b'0' };
        let forged = String::from_utf8(forged).expect("ascii");
        for bad in [
            "",
            "abc",
            forged.as_str(),
            "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
        ] {
            assert!(!sessions.valid(bad), "{bad:?}");
        }
    }

    #[test]
    fn session_cookies_are_found() {
        let cases: &[(&str, Option<&str>)] = &[
            ("session=abc", Some("abc")),
            ("a=1; session=abc; b=2", Some("abc")),
            ("a=1;session=\"abc\"", Some("abc")),
            ("sessionx=abc", None),
            ("a=1; b=2", None),
            ("", None),
        ];
        for (header, want) in cases {
            assert_eq!(session_cookie(header.as_bytes()), *want, "{header:?}");
        }
    }
}

//! The task app: seed 000's task-queue API (`services/taskqueue`), lean, for benchmarking the
//! load generators that drive it rather than the queue itself.
//!
//! `POST /tasks/submissions` with a JSON body whose `type` is `factorial`, `http-fetch` or
//! `fail` answers `202 {"id":ID,"status":"QUEUED"}` (a body that is not JSON: 400; a missing
//! or unknown `type`: 422). `GET /tasks/submissions/ID` answers the task's status document:
//! `RUNNING` until [`TASK_TIME`] has passed since its submission, then `SUCCEEDED` (`FAILED`
//! for a `fail` task, with its `error`). `GET /tasks/ID` answers the result once done (text, as
//! taskqueue does; a failed task's `{id, status, error}` as JSON), 409 before, 404 for an id
//! this server did not issue. Other methods get 405 with `Allow`.
//!
//! With `fail_every: N` ([`Failing`]) every N-th fresh submission runs as a `fail` task
//! whatever its type, the way a flaky service fails some of its work. A submission with an
//! `X-Retry-Of: ID` header naming a failed task of this server is a resubmission: counted as
//! one, never made to fail by the knob (another header or id: 422).
//!
//! Nothing is stored: an id carries its submission time and kind, with a keyed hash as proof
//! (like the form app's sessions), so any thread answers any id with no shared table and no
//! lock, and the server costs the client what a fast real service would. Each answer leaves in
//! one write (the connection queues head and body together), so a request costs the loopback
//! two TCP segments, where taskqueue's two-part answers cost four.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::StatusCode;

use crate::form::Verb;

/// TASK_TIME is how long a task runs: long enough that a poll with no interval sees RUNNING a
/// few times, short enough that a flow is dominated by requests, not by waiting.
pub(crate) const TASK_TIME: Duration = Duration::from_millis(2);

/// RESULT is a factorial task's result: the digits of 100!.
pub(crate) const RESULT: &str = "93326215443944152681699238856266700490715968264381621468592963\
8952175999932299156089414639761565182862536979208272237582511852109168640000000000000000000000\
00\n";

/// Kind is what a task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Factorial: succeeds with [`RESULT`].
    Factorial,
    /// HttpFetch: succeeds with a short text (nothing is fetched).
    HttpFetch,
    /// Fail: ends FAILED.
    Fail,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Factorial => "factorial",
            Kind::HttpFetch => "http-fetch",
            Kind::Fail => "fail",
        }
    }

    fn from_bits(bits: u64) -> Option<Kind> {
        match bits {
            0 => Some(Kind::Factorial),
            1 => Some(Kind::HttpFetch),
            2 => Some(Kind::Fail),
            _ => None,
        }
    }

    fn bits(self) -> u64 {
        match self {
            Kind::Factorial => 0,
            Kind::HttpFetch => 1,
            Kind::Fail => 2,
        }
    }
}

/// Ask is which of the app's paths was asked for; an id is kept as its 32 hex digits, parsed
/// (not yet proven) into two numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// Submit is `/tasks/submissions`.
    Submit,
    /// Status is `/tasks/submissions/ID` (None: not an id's shape).
    Status(Option<RawId>),
    /// Result is `/tasks/ID`.
    Result(Option<RawId>),
}

/// RawId is an id's payload and proof as read from a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawId {
    payload: u64,
    proof: u64,
}

/// ask reads a path of the app; None for any other path.
pub(crate) fn ask(path: &str) -> Option<Ask> {
    if path == "/tasks/submissions" {
        return Some(Ask::Submit);
    }
    if let Some(id) = path.strip_prefix("/tasks/submissions/") {
        return Some(Ask::Status(raw_id(id)));
    }
    path.strip_prefix("/tasks/")
        .filter(|id| !id.is_empty() && !id.contains('/'))
        .map(|id| Ask::Result(raw_id(id)))
}

/// raw_id reads an id's shape (32 hex digits) into its two numbers, not yet proven.
pub(crate) fn raw_id(id: &str) -> Option<RawId> {
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (payload, proof) = id.split_at(16);
    Some(RawId {
        payload: u64::from_str_radix(payload, 16).ok()?,
        proof: u64::from_str_radix(proof, 16).ok()?,
    })
}

/// Task is a proven id: when it was submitted (since the server started) and what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Task {
    payload: u64,
    submitted: Duration,
    kind: Kind,
}

/// Ids issues and proves task ids: 16 hex digits of payload (submission time in microseconds
/// since the server started, 40 bits; kind, 2 bits; 22 random bits so ids differ), 16 of its
/// keyed hash.
#[derive(Debug)]
pub(crate) struct Ids {
    key: RandomState,
}

const KIND_SHIFT: u32 = 22;
const TIME_SHIFT: u32 = 24;

impl Ids {
    pub(crate) fn new() -> Ids {
        Ids {
            key: RandomState::new(),
        }
    }

    /// issue makes the id of a task of `kind` submitted at `now` (since the server started).
    pub(crate) fn issue(&self, now: Duration, kind: Kind, random: u64) -> IdText {
        let micros = (now.as_micros() as u64) & ((1 << 40) - 1);
        let payload =
            (micros << TIME_SHIFT) | (kind.bits() << KIND_SHIFT) | (random & ((1 << 22) - 1));
        self.text(payload)
    }

    /// text writes the id of `payload`: 32 lower-case hex digits, on the stack.
    pub(crate) fn text(&self, payload: u64) -> IdText {
        let mut out = [0u8; 32];
        for (i, word) in [payload, self.key.hash_one(payload)]
            .into_iter()
            .enumerate()
        {
            for j in 0..16 {
                let nibble = (word >> (60 - 4 * j)) & 0xf;
                out[i * 16 + j] = b"0123456789abcdef"[nibble as usize];
            }
        }
        IdText(out)
    }

    /// prove returns the task behind an id this server issued, else None.
    pub(crate) fn prove(&self, raw: Option<RawId>) -> Option<Task> {
        let raw = raw?;
        if self.key.hash_one(raw.payload) != raw.proof {
            return None;
        }
        Some(Task {
            payload: raw.payload,
            submitted: Duration::from_micros(raw.payload >> TIME_SHIFT),
            kind: Kind::from_bits((raw.payload >> KIND_SHIFT) & 3)?,
        })
    }
}

/// IdText is a task id as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdText([u8; 32]);

impl IdText {
    pub(crate) fn as_str(&self) -> &str {
        // Only hex digits are ever written.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl Task {
    /// payload: the id's payload (its text comes from [`Ids::text`]).
    pub(crate) fn payload(self) -> u64 {
        self.payload
    }
}

/// Outcome is the app's answer to one request, and what `/__stats` counts it as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Submitted: 202, a task of this kind is issued.
    Submitted(Kind),
    /// Resubmitted: 202, a task of this kind is issued to retry a failed one.
    Resubmitted(Kind),
    /// Status: 200, the status document; `done` once its time has passed.
    Status {
        /// task: the task asked about.
        task: Task,
        /// done: finished (SUCCEEDED or FAILED).
        done: bool,
    },
    /// Result: 200 with a finished task's result (or a failed one's error).
    Result(Task),
    /// NotDone: 409, asked for the result of a task still running.
    NotDone,
    /// Unknown: 404, an id this server did not issue.
    Unknown,
    /// Invalid: 400 (not JSON) or 422 (no known `type`) with a one-line reason.
    Invalid(StatusCode, &'static str),
    /// NotAllowed: 405 with this `Allow`.
    NotAllowed(&'static str),
}

impl Outcome {
    /// status is the HTTP status the outcome answers with.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Outcome::Submitted(_) | Outcome::Resubmitted(_) => StatusCode::ACCEPTED,
            Outcome::Status { .. } | Outcome::Result(_) => StatusCode::OK,
            Outcome::NotDone => StatusCode::CONFLICT,
            Outcome::Unknown => StatusCode::NOT_FOUND,
            Outcome::Invalid(status, _) => *status,
            Outcome::NotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
        }
    }
}

/// decide answers one request to the app: `now` is the time since the server started, `body`
/// the request's body (a submission's).
pub(crate) fn decide(ids: &Ids, ask: Ask, verb: Verb, body: &[u8], now: Duration) -> Outcome {
    match (ask, verb) {
        (Ask::Submit, Verb::Post) => match kind_of(body) {
            Ok(kind) => Outcome::Submitted(kind),
            Err((status, why)) => Outcome::Invalid(status, why),
        },
        (Ask::Submit, _) => Outcome::NotAllowed("POST"),
        (Ask::Status(_) | Ask::Result(_), Verb::Post | Verb::Other) => {
            Outcome::NotAllowed("GET, HEAD")
        }
        (Ask::Status(raw), Verb::Get) => match ids.prove(raw) {
            Some(task) => Outcome::Status {
                task,
                done: task.done(now),
            },
            None => Outcome::Unknown,
        },
        (Ask::Result(raw), Verb::Get) => match ids.prove(raw) {
            Some(task) if task.done(now) => Outcome::Result(task),
            Some(_) => Outcome::NotDone,
            None => Outcome::Unknown,
        },
    }
}

/// Failing makes every `every`-th fresh submission a failing task: a service of known
/// failures, for flows that branch on them (the count is the server's, across threads).
#[derive(Debug)]
pub(crate) struct Failing {
    every: u64,
    fresh: AtomicU64,
}

impl Failing {
    /// new fails every `every`-th fresh submission (`every` >= 1).
    pub(crate) fn new(every: u64) -> Failing {
        Failing {
            every: every.max(1),
            fresh: AtomicU64::new(0),
        }
    }

    /// next counts a fresh submission and says whether it is one to fail.
    fn next(&self) -> bool {
        (self.fresh.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(self.every)
    }
}

/// submitted settles a submission [`decide`] accepted: a resubmission when `retry_of` (the
/// `X-Retry-Of` header, if given) names a failed task of this server, else a fresh one,
/// which `failing` may turn into a failing task. Other outcomes pass through.
pub(crate) fn submitted(
    ids: &Ids,
    outcome: Outcome,
    retry_of: Option<Option<RawId>>,
    failing: Option<&Failing>,
) -> Outcome {
    let Outcome::Submitted(kind) = outcome else {
        return outcome;
    };
    match retry_of {
        Some(raw) => match ids.prove(raw) {
            Some(task) if task.kind == Kind::Fail => Outcome::Resubmitted(kind),
            _ => Outcome::Invalid(
                StatusCode::UNPROCESSABLE_ENTITY,
                "X-Retry-Of must name a failed task of this server",
            ),
        },
        None if failing.is_some_and(Failing::next) => Outcome::Submitted(Kind::Fail),
        None => Outcome::Submitted(kind),
    }
}

impl Task {
    /// failed: the task ends FAILED.
    pub(crate) fn failed(self) -> bool {
        self.kind == Kind::Fail
    }

    fn done(self, now: Duration) -> bool {
        now >= self.submitted + TASK_TIME
    }

    /// status_json writes the status document of task `id`.
    pub(crate) fn status_json(self, id: &str, done: bool, out: &mut Vec<u8>) {
        let (status, error) = match (done, self.kind) {
            (false, _) => ("RUNNING", "null"),
            (true, Kind::Fail) => ("FAILED", "\"failed on purpose (type fail)\""),
            (true, _) => ("SUCCEEDED", "null"),
        };
        out.extend_from_slice(b"{\"id\":\"");
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(b"\",\"type\":\"");
        out.extend_from_slice(self.kind.name().as_bytes());
        out.extend_from_slice(b"\",\"status\":\"");
        out.extend_from_slice(status.as_bytes());
        out.extend_from_slice(b"\",\"attempts\":1,\"error\":");
        out.extend_from_slice(error.as_bytes());
        out.extend_from_slice(b"}");
    }

    /// result writes a finished task's result; returns its content type.
    pub(crate) fn result(self, id: &str, out: &mut Vec<u8>) -> &'static str {
        match self.kind {
            Kind::Factorial => {
                out.extend_from_slice(RESULT.as_bytes());
                "text/plain"
            }
            Kind::HttpFetch => {
                out.extend_from_slice(b"fetched\n");
                "text/plain"
            }
            Kind::Fail => {
                self.status_json(id, true, out);
                "application/json"
            }
        }
    }
}

/// kind_of reads a submission's `type`.
fn kind_of(body: &[u8]) -> Result<Kind, (StatusCode, &'static str)> {
    #[derive(serde::Deserialize)]
    struct Submission<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    let sub: Submission<'_> = serde_json::from_slice(body)
        .map_err(|_| (StatusCode::BAD_REQUEST, "body is not a JSON object"))?;
    match sub.kind.as_deref() {
        Some("factorial") => Ok(Kind::Factorial),
        Some("http-fetch") => Ok(Kind::HttpFetch),
        Some("fail") => Ok(Kind::Fail),
        Some(_) => Err((
            StatusCode::UNPROCESSABLE_ENTITY,
            "type must be factorial, http-fetch or fail",
        )),
        None => Err((StatusCode::UNPROCESSABLE_ENTITY, "type is missing")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn paths() {
        let id = "0123456789abcdef0123456789ABCDEF";
        let raw = raw_id(id);
        assert!(raw.is_some());
        let cases: Vec<(&str, Option<Ask>)> = vec![
            ("/tasks/submissions", Some(Ask::Submit)),
            ("/tasks/submissions/x", Some(Ask::Status(None))),
            (
                "/tasks/submissions/0123456789abcdef0123456789ABCDEF",
                Some(Ask::Status(raw)),
            ),
            (
                "/tasks/0123456789abcdef0123456789ABCDEF",
                Some(Ask::Result(raw)),
            ),
            ("/tasks/short", Some(Ask::Result(None))),
            ("/tasks/", None),
            ("/tasks/a/b", None),
            ("/tasks", None),
            ("/other", None),
        ];
        for (path, want) in cases {
            assert_eq!(ask(path), want, "{path}");
        }
    }

    #[test]
    fn a_task_runs_then_ends_as_its_kind_says() {
        let ids = Ids::new();
        let submit = |body: &str| decide(&ids, Ask::Submit, Verb::Post, body.as_bytes(), ms(5));
        let mut seen = Vec::new();
        for (body, kind) in [
            (r#"{"type":"factorial","n":100}"#, Kind::Factorial),
            (
                r#"{"type":"http-fetch","url":"http://x/"}"#,
                Kind::HttpFetch,
            ),
            (r#"{"type":"fail"}"#, Kind::Fail),
        ] {
            assert_eq!(submit(body), Outcome::Submitted(kind), "{body}");
            let id = ids.issue(ms(5), kind, 77).as_str().to_string();
            let raw = raw_id(&id);
            let status = |at| decide(&ids, Ask::Status(raw), Verb::Get, b"", at);
            let result = |at| decide(&ids, Ask::Result(raw), Verb::Get, b"", at);
            let task = ids.prove(raw).unwrap();
            assert_eq!(task.kind, kind);
            assert_eq!(ids.text(task.payload()).as_str(), id);
            assert_eq!(status(ms(6)), Outcome::Status { task, done: false });
            assert_eq!(result(ms(6)), Outcome::NotDone);
            assert_eq!(status(ms(7)), Outcome::Status { task, done: true });
            assert_eq!(result(ms(7)), Outcome::Result(task));
            let mut doc = Vec::new();
            task.status_json(&id, true, &mut doc);
            let doc: serde_json::Value = serde_json::from_slice(&doc).unwrap();
            let want = if kind == Kind::Fail {
                "FAILED"
            } else {
                "SUCCEEDED"
            };
            assert_eq!(doc["status"], want);
            assert_eq!(doc["id"], id.as_str());
            seen.push(id);
        }
        seen.dedup();
        assert_eq!(seen.len(), 3, "ids differ");
    }

    #[test]
    fn every_nth_fresh_task_fails_and_a_retry_names_a_failed_one() {
        let ids = Ids::new();
        let failing = Failing::new(3);
        let fresh = |kind| submitted(&ids, Outcome::Submitted(kind), None, Some(&failing));
        let kinds: Vec<Outcome> = (0..6).map(|_| fresh(Kind::Factorial)).collect();
        let failed = kinds
            .iter()
            .filter(|o| **o == Outcome::Submitted(Kind::Fail))
            .count();
        assert_eq!(failed, 2, "{kinds:?}");
        assert_eq!(kinds[2], Outcome::Submitted(Kind::Fail));
        let bad = raw_id(ids.issue(ms(1), Kind::Fail, 5).as_str());
        let good = raw_id(ids.issue(ms(1), Kind::Factorial, 5).as_str());
        let retry = |raw| {
            submitted(
                &ids,
                Outcome::Submitted(Kind::Factorial),
                Some(raw),
                Some(&failing),
            )
        };
        // A retry never counts towards the knob: the next fresh one is still the 9th.
        for _ in 0..5 {
            assert_eq!(retry(bad), Outcome::Resubmitted(Kind::Factorial));
        }
        assert_eq!(retry(good).status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(retry(None).status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(fresh(Kind::Factorial), Outcome::Submitted(Kind::Factorial));
        assert_eq!(fresh(Kind::Factorial), Outcome::Submitted(Kind::Factorial));
        assert_eq!(fresh(Kind::Factorial), Outcome::Submitted(Kind::Fail));
        // Without the knob nothing changes; a refusal passes through.
        let plain = submitted(&ids, Outcome::Submitted(Kind::HttpFetch), None, None);
        assert_eq!(plain, Outcome::Submitted(Kind::HttpFetch));
        assert_eq!(
            submitted(&ids, Outcome::NotDone, None, Some(&failing)),
            Outcome::NotDone
        );
    }

    #[test]
    fn refusals() {
        let ids = Ids::new();
        let other = Ids::new();
        let foreign = raw_id(other.issue(ms(1), Kind::Factorial, 1).as_str());
        let cases: Vec<(Ask, Verb, &str, StatusCode)> = vec![
            (Ask::Submit, Verb::Post, "not json", StatusCode::BAD_REQUEST),
            (Ask::Submit, Verb::Post, "[1]", StatusCode::BAD_REQUEST),
            (
                Ask::Submit,
                Verb::Post,
                "{}",
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                Ask::Submit,
                Verb::Post,
                r#"{"type":"x"}"#,
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                Ask::Submit,
                Verb::Post,
                r#"{"type":1}"#,
                StatusCode::BAD_REQUEST,
            ),
            (Ask::Submit, Verb::Get, "", StatusCode::METHOD_NOT_ALLOWED),
            (Ask::Status(None), Verb::Get, "", StatusCode::NOT_FOUND),
            (Ask::Status(foreign), Verb::Get, "", StatusCode::NOT_FOUND),
            (Ask::Result(foreign), Verb::Get, "", StatusCode::NOT_FOUND),
            (
                Ask::Result(None),
                Verb::Other,
                "",
                StatusCode::METHOD_NOT_ALLOWED,
            ),
        ];
        for (ask, verb, body, want) in cases {
            let got = decide(&ids, ask, verb, body.as_bytes(), ms(10));
            assert_eq!(got.status(), want, "{ask:?} {verb:?} {body}");
        }
    }
}

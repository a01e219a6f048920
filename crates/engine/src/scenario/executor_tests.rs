//! The executor against a fake transport: a scripted server, a clock that moves only when
//! the flow pauses or a response takes time, and books kept in plain vectors.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::scenario::Script;

/// Fake serves each request with `serve` and keeps what happened.
struct Fake<F: FnMut(&str) -> (u16, String)> {
    serve: F,
    clock: Instant,
    sent: Vec<String>,
    stats: Vec<(usize, u16)>,
    failed: Vec<(usize, String)>,
    reasons: Vec<(usize, String)>,
    groups: Vec<(usize, Duration, bool)>,
    iterations: Vec<bool>,
    tallies: Vec<(usize, String)>,
    /// to: where each request went: the authority of its origin, "" for the run's host.
    to: Vec<String>,
    started: u32,
    paused: Duration,
}

impl<F: FnMut(&str) -> (u16, String)> Fake<F> {
    fn new(serve: F) -> Self {
        Fake {
            serve,
            clock: Instant::now(),
            sent: Vec::new(),
            stats: Vec::new(),
            failed: Vec::new(),
            reasons: Vec::new(),
            groups: Vec::new(),
            iterations: Vec::new(),
            tallies: Vec::new(),
            to: Vec::new(),
            started: 0,
            paused: Duration::ZERO,
        }
    }
}

impl<F: FnMut(&str) -> (u16, String)> Transport for Fake<F> {
    async fn exchange(
        &mut self,
        msg: &crate::message::Request,
        req: &Request,
        hop: bool,
        to: Option<crate::scenario::url::Origin<'_>>,
        _: Instant,
        kept: &mut crate::message::Response,
    ) -> Reply {
        self.to
            .push(to.map_or_else(String::new, |o| o.authority.to_string()));
        let mut bytes = Vec::new();
        crate::http::write_request(msg, None, &mut bytes);
        let text = String::from_utf8(bytes).unwrap();
        let (status, resp) = (self.serve)(&text);
        self.sent.push(text);
        self.clock += Duration::from_millis(2);
        self.stats
            .push((if hop { req.hop_stat } else { req.stat }, status));
        if status == 0 {
            return Reply::Failed(ErrorClass::Timeout);
        }
        *kept = crate::http::read_whole(resp.as_bytes());
        Reply::Answered {
            status,
            latency: Duration::from_millis(2),
        }
    }
    async fn socket(
        &mut self,
        step: &crate::scenario::ws::SocketStep,
        url: &str,
        messages: &[bytes::Bytes],
        _: Instant,
    ) -> bool {
        // The fake has no sockets: it keeps what the step would send, and answers it all.
        let sent: Vec<String> = messages
            .iter()
            .map(|m| String::from_utf8_lossy(m).into_owned())
            .collect();
        self.sent
            .push(format!("WS {url} x{} {}", step.count, sent.join(" | ")));
        self.stats.push((step.stat, 101));
        true
    }
    async fn pause(&mut self, d: Duration) {
        self.clock += d;
        self.paused += d;
    }
    fn now(&mut self) -> Instant {
        self.clock
    }
    fn fail(&mut self, _: Instant, stat: usize, reason: &str) {
        self.failed.push((stat, reason.to_string()));
    }
    fn reason(&mut self, _: Instant, stat: usize, reason: &str) {
        self.reasons.push((stat, reason.to_string()));
    }
    fn group(&mut self, _: Instant, g: usize, took: Duration, ok: bool) {
        self.groups.push((g, took, ok));
    }
    fn started(&mut self, _: Instant) {
        self.started += 1;
    }
    fn iteration(&mut self, _: Instant, _: Duration, ok: bool) {
        self.iterations.push(ok);
    }
    fn tally(&mut self, _: Instant, stat: usize, value: &str) {
        self.tallies.push((stat, value.to_string()));
    }
}

fn http(status: u16, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status} X\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// seed000 is the task-queue flow: submit, extract the id, poll until done, get the result.
fn seed000() -> Script {
    let p = json!({"file": "t.py", "vars": {"var.ORIGIN": "http://o/\"x\""}, "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "submit", "method": "POST", "path": ["/tasks/submissions"],
         "body": {"type": "json", "template": ["{\"url\":\"", {"var": "var.ORIGIN"}, "\"}"]},
         "checks": [{"check": "status", "in": [202]}], "tally": {"path": ["status"], "text": "$.status"},
         "extract": [{"from": "json", "var": "id", "path": ["id"], "text": "$.id"}]},
        {"step": "poll", "interval_s": 1.0, "timeout_s": 10.0, "request":
            {"name": "status", "method": "GET", "path": ["/tasks/submissions/", {"var": "id"}],
             "tally": {"path": ["status"], "text": "$.status"},
             "checks": [{"check": "json", "path": ["status"], "op": "in", "values": ["SUCCEEDED"], "text": "$.status"}]},
         "until": [{"check": "json", "path": ["status"], "op": "in", "values": ["SUCCEEDED", "FAILED"], "text": "$.status"}]},
        {"step": "request", "name": "result", "method": "GET", "path": ["/tasks/", {"var": "id"}]}
    ]}]});
    Script::from_json(&p, "tq:80").unwrap()
}

/// queue serves seed000 with a task that ends as `last` after `polls` polls.
fn queue(last: &'static str, polls: usize) -> impl FnMut(&str) -> (u16, String) {
    let mut n = 0;
    move |req: &str| {
        if req.starts_with("POST /tasks/submissions ") {
            return (202, http(202, "", "{\"id\":\"t 1\",\"status\":\"QUEUED\"}"));
        }
        if req.starts_with("GET /tasks/submissions/t%201 ") {
            n += 1;
            let st = if n >= polls { last } else { "RUNNING" };
            return (200, http(200, "", &format!("{{\"status\":\"{st}\"}}")));
        }
        if req.starts_with("GET /tasks/t%201 ") {
            return (200, http(200, "", "done"));
        }
        (404, http(404, "", ""))
    }
}

#[test]
fn seed000_polls_until_done_then_fetches() {
    let s = seed000();
    let mut t = Fake::new(queue("SUCCEEDED", 3));
    let mut vu = Vu::new(&s, 0);
    let now = t.clock;
    assert!(block(vu.iterate(&s, &mut t, now)));
    let lines: Vec<&str> = t.sent.iter().map(|r| r.lines().next().unwrap()).collect();
    assert_eq!(
        lines,
        [
            "POST /tasks/submissions HTTP/1.1",
            "GET /tasks/submissions/t%201 HTTP/1.1",
            "GET /tasks/submissions/t%201 HTTP/1.1",
            "GET /tasks/submissions/t%201 HTTP/1.1",
            "GET /tasks/t%201 HTTP/1.1",
        ]
    );
    // The JSON body carries the run variable escaped as JSON string content.
    assert!(
        t.sent[0].ends_with("\r\n\r\n{\"url\":\"http://o/\\\"x\\\"\"}"),
        "{}",
        t.sent[0]
    );
    assert!(t.sent[0].contains("Content-Type: application/json\r\n"));
    assert_eq!(
        t.paused,
        Duration::from_secs(2),
        "two 1 s intervals between three polls"
    );
    let names: Vec<usize> = t.stats.iter().map(|s| s.0).collect();
    assert_eq!(names, [0, 1, 1, 1, 2]);
    assert!(t.failed.is_empty() && t.reasons.is_empty());
    assert_eq!(t.iterations, [true]);
    assert_eq!(t.started, 1);
}

#[test]
fn each_answer_is_tallied_by_its_value_under_its_name() {
    let s = seed000();
    let mut t = Fake::new(queue("SUCCEEDED", 3));
    let mut vu = Vu::new(&s, 0);
    let now = t.clock;
    assert!(block(vu.iterate(&s, &mut t, now)));
    let want = [
        (0, "QUEUED"),
        (1, "RUNNING"),
        (1, "RUNNING"),
        (1, "SUCCEEDED"),
    ];
    let got: Vec<(usize, &str)> = t.tallies.iter().map(|(i, v)| (*i, v.as_str())).collect();
    assert_eq!(
        got, want,
        "every poll is an answer; the result has no tally"
    );
    // An error status is what the service said too: tallied, then the iteration ends.
    let mut t = Fake::new(|_: &str| (503, http(503, "", "busy")));
    let now = t.clock;
    assert!(!block(Vu::new(&s, 0).iterate(&s, &mut t, now)));
    assert_eq!(
        t.tallies,
        [(0, crate::scenario::tally::NOT_JSON.to_string())]
    );
    // A transport failure has no answer to tally.
    let mut t = Fake::new(|_: &str| (0, String::new()));
    let now = t.clock;
    assert!(!block(Vu::new(&s, 0).iterate(&s, &mut t, now)));
    assert!(t.tallies.is_empty());
}

#[test]
fn a_failed_task_fails_the_status_check_and_ends_the_iteration() {
    let s = seed000();
    let mut t = Fake::new(queue("FAILED", 2));
    let mut vu = Vu::new(&s, 0);
    let now = t.clock;
    assert!(!block(vu.iterate(&s, &mut t, now)));
    assert_eq!(
        t.failed,
        [(
            1,
            "$.status is \"FAILED\", expected \"SUCCEEDED\"".to_string()
        )]
    );
    assert_eq!(t.sent.len(), 3, "no result fetch after a failed check");
    assert_eq!(t.iterations, [false]);
}

#[test]
fn a_poll_that_never_ends_times_out_with_a_reason() {
    let s = seed000();
    let mut t = Fake::new(queue("SUCCEEDED", 1000));
    let mut vu = Vu::new(&s, 0);
    let now = t.clock;
    assert!(!block(vu.iterate(&s, &mut t, now)));
    assert_eq!(t.failed, [(1, "poll timed out after 10 s".to_string())]);
    // Polls at 0, 1, ..., 9 s (plus 2 ms per response): the next would end past 10 s.
    assert_eq!(t.sent.len() - 1, 10);
}

#[test]
fn transport_failures_and_error_statuses_are_reasons() {
    let s = seed000();
    for (label, status, want) in [("timeout", 0u16, "timeout"), ("500", 500, "HTTP 500")] {
        let mut t = Fake::new(move |_: &str| (status, http(status.max(200), "", "")));
        let mut vu = Vu::new(&s, 0);
        let now = t.clock;
        assert!(!block(vu.iterate(&s, &mut t, now)), "{label}");
        assert_eq!(t.reasons, [(0, want.to_string())], "{label}");
        assert!(t.failed.is_empty(), "{label}");
    }
}

#[test]
fn a_missing_extraction_fails_with_a_reason() {
    let s = seed000();
    let mut t = Fake::new(|_: &str| (202, http(202, "", "{}")));
    let mut vu = Vu::new(&s, 0);
    let now = t.clock;
    assert!(!block(vu.iterate(&s, &mut t, now)));
    assert_eq!(t.failed, [(0, "extract $.id: not found".to_string())]);
}

#[test]
fn cookies_redirects_forms_loops_groups_and_data() {
    let p = json!({"file": "f.py", "data": [{"name": "u", "per": "iteration", "columns": ["who"], "rows": [["ann"], ["bob"]]}],
      "flows": [{"name": "f", "steps": [
        {"step": "group", "name": "visit", "steps": [
          {"step": "request", "name": "form", "method": "GET", "path": ["/form"]},
          {"step": "loop", "count": 2, "steps": [
            {"step": "request", "name": "post", "method": "POST", "path": ["/form"], "follow_redirects": true,
             "query": [["q", [{"var": "vu"}]]],
             "body": {"type": "form", "fields": [["name", [{"var": "data.u.who"}, " x"]], ["i", [{"var": "iteration"}]]]},
             "checks": [{"check": "contains", "text": "thanks"}]}
          ]}
        ]},
        {"step": "think", "dist": "constant", "s": 0.5}
    ]}]});
    let s = Script::from_json(&p, "h:1").unwrap();
    let serve = |req: &str| {
        let line = req.lines().next().unwrap().to_string();
        if line.starts_with("GET /form ") {
            return (200, http(200, "Set-Cookie: sid=s1; Path=/\r\n", "form"));
        }
        if line.starts_with("POST /form?q=3 ") {
            assert!(req.contains("Cookie: sid=s1\r\n"), "{req}");
            return (302, http(302, "Location: http://h:1/thanks\r\n", ""));
        }
        if line.starts_with("GET /thanks ") {
            assert!(req.contains("Cookie: sid=s1\r\n"), "{req}");
            return (200, http(200, "", "thanks!"));
        }
        (404, http(404, "", ""))
    };
    let mut t = Fake::new(serve);
    let mut vu = Vu::new(&s, 3);
    let now = t.clock;
    assert!(block(vu.iterate(&s, &mut t, now)));
    let lines: Vec<&str> = t.sent.iter().map(|r| r.lines().next().unwrap()).collect();
    assert_eq!(
        lines,
        [
            "GET /form HTTP/1.1",
            "POST /form?q=3 HTTP/1.1",
            "GET /thanks HTTP/1.1",
            "POST /form?q=3 HTTP/1.1",
            "GET /thanks HTTP/1.1"
        ]
    );
    assert!(
        t.sent[1].ends_with("\r\n\r\nname=ann+x&i=0"),
        "{}",
        t.sent[1]
    );
    assert!(t.sent[1].contains("Content-Type: application/x-www-form-urlencoded\r\n"));
    assert_eq!(t.groups.len(), 1);
    assert_eq!((t.groups[0].0, t.groups[0].2), (0, true));
    assert_eq!(
        t.groups[0].1,
        Duration::from_millis(10),
        "five responses of 2 ms"
    );
    assert_eq!(t.paused, Duration::from_millis(500));
    // The followed redirect's GET is recorded under its own name, not the POST's.
    let hop = s.names.iter().position(|n| n == "post (redirect)").unwrap();
    let post = s.names.iter().position(|n| n == "post").unwrap();
    let stats: Vec<usize> = t.stats.iter().map(|(n, _)| *n).collect();
    assert_eq!(stats[1..], [post, hop, post, hop]);
}

/// A 4xx the request's status check lists is what the flow wants; one it does not list
/// fails it; and a check failing on a followed redirect's response is booked under the
/// redirect's name (each name's failures are its own requests').
#[test]
fn expected_error_statuses_and_where_redirect_failures_go() {
    let p = json!({"file": "f.py", "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "gone", "method": "DELETE", "path": ["/x"], "checks": [{"check": "status", "in": [204, 404]}]},
        {"step": "request", "name": "go", "method": "GET", "path": ["/r"], "follow_redirects": true,
         "checks": [{"check": "contains", "text": "yes"}]}
    ]}]});
    let s = Script::from_json(&p, "h:1").unwrap();
    assert_eq!(s.requests[0].expected_errors, [404]);
    let serve = |req: &str| {
        if req.starts_with("DELETE /x ") {
            return (404, http(404, "", ""));
        }
        if req.starts_with("GET /r ") {
            return (302, http(302, "Location: /no\r\n", ""));
        }
        (200, http(200, "", "no"))
    };
    let mut t = Fake::new(serve);
    let mut vu = Vu::new(&s, 0);
    let now = t.clock;
    assert!(!block(vu.iterate(&s, &mut t, now)));
    assert!(t.reasons.is_empty(), "{:?}", t.reasons);
    let hop = s.requests[1].hop_stat;
    assert_eq!(s.names[hop], "go (redirect)");
    assert_eq!(
        t.failed,
        [(hop, "body does not contain \"yes\"".to_string())]
    );

    // The same 404 without it in the status check is an error status with its reason.
    let p = json!({"file": "f.py", "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "gone", "method": "DELETE", "path": ["/x"], "checks": [{"check": "status", "in": [204]}]}
    ]}]});
    let s = Script::from_json(&p, "h:1").unwrap();
    assert!(s.requests[0].expected_errors.is_empty());
    let mut t = Fake::new(serve);
    let mut vu = Vu::new(&s, 0);
    let now = t.clock;
    assert!(!block(vu.iterate(&s, &mut t, now)));
    assert_eq!(t.reasons, [(0, "HTTP 404".to_string())]);
}

#[test]
fn per_vu_data_rows_and_choice() {
    let p = json!({"data": [{"name": "u", "per": "vu", "columns": ["id"], "rows": [["a"], ["b"], ["c"]]}],
      "flows": [{"name": "f", "steps": [
        {"step": "set", "var": "c", "choice": ["x", "y"]},
        {"step": "request", "name": "r", "method": "GET", "path": ["/", {"var": "data.u.id"}, "/", {"var": "c"}]}
    ]}]});
    let s = Script::from_json(&p, "h").unwrap();
    let mut t = Fake::new(|_: &str| (200, http(200, "", "")));
    for vu_n in 0..3u64 {
        let mut vu = Vu::new(&s, vu_n);
        for _ in 0..20 {
            let now = t.clock;
            block(vu.iterate(&s, &mut t, now));
        }
    }
    let mut seen: Vec<String> = t
        .sent
        .iter()
        .map(|r| r.split(' ').nth(1).unwrap().to_string())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen, ["/a/x", "/a/y", "/b/x", "/b/y", "/c/x", "/c/y"]);
}

/// signed: a request signed over its body, which holds a UUID and the time drawn once for
/// the iteration; then a bad base64 to decode.
fn signed() -> Script {
    let body = json!([{"fn": "json", "args": [["{\"vu\":\"", {"var": "vu"}, "\",\"id\":\"",
        {"var": "id"}, "\",\"ts\":\"", {"var": "ts"}, "\"}"]]}]);
    let p = json!({"file": "t.py", "vars": {"var.B": "!!"}, "flows": [{"name": "f", "steps": [
        {"step": "set", "var": "id", "fn": "uuid4", "args": []},
        {"step": "set", "var": "ts", "fn": "now", "args": ["unix"]},
        {"step": "request", "name": "signed", "method": "POST", "path": ["/s"],
         "headers": [["X-Id", [{"var": "id"}]], ["X-Ts", [{"var": "ts"}]],
                     ["X-Sig", [{"fn": "hmac_sha256", "args": [["key"], body], "encoding": "hex"}]],
                     ["X-Len", [{"fn": "length", "args": [[{"var": "id"}]]}]]],
         "body": {"type": "text", "template": body}},
        {"step": "request", "name": "decode", "method": "GET", "path": ["/d"],
         "headers": [["X-B", [{"fn": "base64_decode", "args": [[{"var": "var.B"}]]}]]]}
    ]}]});
    Script::from_json(&p, "h:80").unwrap()
}

#[test]
fn functions_sign_what_is_sent_and_draws_hold_for_the_iteration() {
    use hmac::{Hmac, Mac};
    let s = signed();
    let mut t = Fake::new(|_: &str| (200, http(200, "", "ok")));
    let mut vu = Vu::new(&s, 7);
    let mut ids = std::collections::HashSet::new();
    for _ in 0..3 {
        let now = t.clock;
        assert!(!block(vu.iterate(&s, &mut t, now)), "the decode fails");
        let sent = &t.sent[t.sent.len() - 2];
        let header = |name: &str| {
            let line = sent.lines().find(|l| l.starts_with(name)).expect(name);
            line[name.len() + 2..].to_string()
        };
        let body = sent.split("\r\n\r\n").nth(1).unwrap();
        let (id, ts) = (header("X-Id"), header("X-Ts"));
        assert_eq!(
            body,
            format!("{{\"vu\":\"7\",\"id\":\"{id}\",\"ts\":\"{ts}\"}}")
        );
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"key").unwrap();
        mac.update(body.as_bytes());
        assert_eq!(header("X-Sig"), hex::encode(mac.finalize().into_bytes()));
        assert_eq!(header("X-Len"), "36");
        assert!(ids.insert(id), "a new UUID each iteration");
    }
    // The undecodable header is sent and answered, and its request fails with the reason.
    let reasons: Vec<&str> = t.failed.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(reasons, ["base64_decode: not base64"; 3]);
    assert_eq!(t.sent.len(), 6);
}

#[test]
fn a_bad_function_is_refused_with_its_line() {
    let p = json!({"file": "t.py", "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "r", "method": "GET", "path": ["/", {"fn": "sha3", "args": [["x"]]}],
         "line": 12}]}]});
    let err = Script::from_json(&p, "h:80").unwrap_err().to_string();
    assert!(err.contains("t.py:12: unknown function \"sha3\""), "{err}");
}
#[path = "executor_control_tests.rs"]
mod control;

#[path = "executor_hosts_tests.rs"]
mod hosts;

#[test]
fn a_socket_step_goes_to_the_runs_origin_with_its_messages_written_per_vu() {
    let p = json!({"file": "t.py", "flows": [{"name": "f", "steps": [
        {"step": "socket", "name": "chat", "url": ["/ws?room=", {"var": "vu"}],
         "messages": [{"type": "json", "template": ["{\"id\":\"", {"var": "vu"}, "\"}"]},
                      {"type": "text", "template": ["bye"]}],
         "count": 2, "match_field": "id"},
        {"step": "socket", "name": "far", "url": ["wss://other:9/ws"],
         "messages": [{"type": "text", "template": ["x"]}]}
    ]}]});
    let s = Script::from_json(&p, "h:1").unwrap();
    let mut t = Fake::new(|_| (200, String::new()));
    let mut vu = Vu::new(&s, 3);
    let now = t.clock;
    assert!(block(vu.iterate(&s, &mut t, now)));
    assert_eq!(
        t.sent,
        [
            r#"WS ws://h:1/ws?room=3 x2 {"id":"3"} | bye"#,
            "WS wss://other:9/ws x1 x"
        ]
    );
    assert_eq!(t.stats, [(0, 101), (1, 101)]);
    assert_eq!(s.sockets[0].field.as_deref(), Some("id"));
}

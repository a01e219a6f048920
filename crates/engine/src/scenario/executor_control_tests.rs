//! Branches and loops against the fake transport (see `executor_tests.rs`): each construct
//! alone and nested, decided on extracted values, run variables, the VU's numbers and the
//! last response.

use std::time::Duration;

use serde_json::json;

use super::{block, http, Fake};
use crate::scenario::executor::Vu;
use crate::scenario::Script;

fn get(name: &str, path: &str) -> serde_json::Value {
    json!({"step": "request", "name": name, "method": "GET", "path": [path]})
}

fn cmp(var: &str, op: &str, value: serde_json::Value) -> serde_json::Value {
    json!({"cond": "cmp", "left": {"var": var}, "op": op, "right": {"value": value}})
}

fn script(steps: serde_json::Value) -> Script {
    let p = json!({"file": "c.py", "vars": {"var.N": "3", "var.BAD": "x"},
        "flows": [{"name": "f", "steps": steps}]});
    Script::from_json(&p, "h:1").unwrap()
}

/// run runs one iteration of VU `vu` against `serve`; returns the request lines sent, the
/// iteration's outcome and the transport's books.
fn run<F: FnMut(&str) -> (u16, String)>(
    s: &Script,
    vu: u64,
    serve: F,
) -> (Vec<String>, bool, Fake<F>) {
    let mut t = Fake::new(serve);
    let mut v = Vu::new(s, vu);
    let now = t.clock;
    let ok = block(v.iterate(s, &mut t, now));
    let lines = t
        .sent
        .iter()
        .map(|r| r.split(' ').nth(1).unwrap_or("").to_string())
        .collect();
    (lines, ok, t)
}

/// branch_on_poll is the seed-000 flow that branches on the poll: SUCCEEDED fetches the
/// result, FAILED resubmits once (and fetches the retry's result if it succeeds).
fn branch_on_poll() -> Script {
    let until = json!([{"check": "json", "path": ["status"], "op": "in",
        "values": ["SUCCEEDED", "FAILED", "CANCELLED"], "text": "$.status"}]);
    let status = json!({"from": "json", "var": "st", "path": ["status"], "text": "$.status"});
    script(json!([
        {"step": "request", "name": "submit", "method": "POST", "path": ["/submit"],
         "extract": [{"from": "json", "var": "id", "path": ["id"], "text": "$.id"}]},
        {"step": "poll", "interval_s": 0.0, "timeout_s": 10.0, "until": until,
         "request": {"name": "status", "method": "GET", "path": ["/status/", {"var": "id"}],
                     "extract": [status]}},
        {"step": "when", "line": 9, "branches": [
            {"if": cmp("st", "==", json!("SUCCEEDED")), "steps": [
                {"step": "request", "name": "result", "method": "GET", "path": ["/result/", {"var": "id"}]}]},
            {"if": cmp("st", "==", json!("FAILED")), "steps": [
                {"step": "request", "name": "resubmit", "method": "POST", "path": ["/submit"],
                 "headers": [["X-Retry-Of", [{"var": "id"}]]],
                 "extract": [{"from": "json", "var": "id2", "path": ["id"], "text": "$.id"}]},
                {"step": "poll", "interval_s": 0.0, "timeout_s": 10.0, "until": until,
                 "request": {"name": "status", "method": "GET", "path": ["/status/", {"var": "id2"}]}},
                {"step": "when", "branches": [
                    {"if": {"cond": "check", "check": {"check": "json", "path": ["status"],
                        "op": "in", "values": ["SUCCEEDED"], "text": "$.status"}},
                     "steps": [{"step": "request", "name": "result", "method": "GET",
                                "path": ["/result/", {"var": "id2"}]}]}]}
            ]}
        ], "else": [get("odd", "/odd")]}
    ]))
}

/// tasks serves branch_on_poll: task `a` ends as `first`, its retry `b` as `retry`, each
/// after one RUNNING poll.
fn tasks(first: &'static str, retry: &'static str) -> impl FnMut(&str) -> (u16, String) {
    let mut submitted = 0;
    let mut polls = std::collections::HashMap::new();
    move |req: &str| {
        let path = req.split(' ').nth(1).unwrap_or("").to_string();
        if path == "/submit" {
            submitted += 1;
            let id = if submitted == 1 { "a" } else { "b" };
            if id == "b" {
                assert!(req.contains("X-Retry-Of: a\r\n"), "{req}");
            }
            return (202, http(202, "", &format!("{{\"id\":\"{id}\"}}")));
        }
        if let Some(id) = path.strip_prefix("/status/") {
            let n = polls.entry(id.to_string()).or_insert(0);
            *n += 1;
            let end = if id == "a" { first } else { retry };
            let st = if *n < 2 { "RUNNING" } else { end };
            return (200, http(200, "", &format!("{{\"status\":\"{st}\"}}")));
        }
        (200, http(200, "", "done"))
    }
}

#[test]
fn a_flow_branches_on_what_the_poll_said() {
    let s = branch_on_poll();
    let cases: Vec<(&str, &'static str, &'static str, Vec<&str>)> = vec![
        (
            "succeeded: fetch the result",
            "SUCCEEDED",
            "SUCCEEDED",
            vec!["/submit", "/status/a", "/status/a", "/result/a"],
        ),
        (
            "failed: resubmit once, fetch the retry's result",
            "FAILED",
            "SUCCEEDED",
            vec![
                "/submit",
                "/status/a",
                "/status/a",
                "/submit",
                "/status/b",
                "/status/b",
                "/result/b",
            ],
        ),
        (
            "failed twice: no result, no second resubmission",
            "FAILED",
            "FAILED",
            vec![
                "/submit",
                "/status/a",
                "/status/a",
                "/submit",
                "/status/b",
                "/status/b",
            ],
        ),
        (
            "neither: the else branch",
            "CANCELLED",
            "SUCCEEDED",
            vec!["/submit", "/status/a", "/status/a", "/odd"],
        ),
    ];
    for (label, first, retry, want) in cases {
        let (lines, ok, t) = run(&s, 0, tasks(first, retry));
        assert_eq!(lines, want, "{label}");
        assert!(ok, "{label}: every branch completes the iteration");
        assert!(t.failed.is_empty() && t.reasons.is_empty(), "{label}");
    }
}

#[test]
fn repeat_counts_fixed_and_at_run_time() {
    let cases: Vec<(&str, serde_json::Value, usize, Option<&str>)> = vec![
        ("fixed", json!(2), 2, None),
        ("zero runs none", json!(0), 0, None),
        ("a run variable", json!({"var": "var.N"}), 3, None),
        ("the VU's number", json!({"var": "vu"}), 4, None),
        (
            "not a number fails the iteration",
            json!({"var": "var.BAD"}),
            0,
            Some("repeat count \"x\" is not a whole number"),
        ),
    ];
    for (label, count, rounds, fails) in cases {
        let s = script(json!([
            get("first", "/first"),
            {"step": "repeat", "count": count, "steps": [get("r", "/r")]},
            get("last", "/last")
        ]));
        let (lines, ok, t) = run(&s, 4, |_: &str| (200, http(200, "", "")));
        let r = lines.iter().filter(|l| *l == "/r").count();
        assert_eq!(r, rounds, "{label}");
        assert_eq!(ok, fails.is_none(), "{label}");
        match fails {
            None => assert_eq!(lines.last().map(String::as_str), Some("/last"), "{label}"),
            Some(reason) => assert_eq!(t.failed, [(0, reason.to_string())], "{label}"),
        }
    }
}

#[test]
fn until_ends_when_its_condition_holds_or_fails_at_the_limit() {
    let until = |limit: u32| {
        script(json!([
            {"step": "until", "line": 12, "limit": limit,
             "cond": {"cond": "check", "check": {"check": "contains", "text": "DONE"}},
             "steps": [get("job", "/job"), {"step": "think", "dist": "constant", "s": 0.5}]},
            get("after", "/after")
        ]))
    };
    let done_at = |n: usize| {
        let mut i = 0;
        move |_: &str| {
            i += 1;
            let body = if i >= n { "DONE" } else { "WORKING" };
            (200, http(200, "", body))
        }
    };
    // Done on the third round: three rounds, then on.
    let (lines, ok, t) = run(&until(5), 0, done_at(3));
    assert_eq!(lines, ["/job", "/job", "/job", "/after"]);
    assert!(ok);
    assert_eq!(
        t.paused,
        Duration::from_millis(1500),
        "each round runs whole"
    );
    // Never done: five rounds, then the iteration fails, booked on the last request.
    let (lines, ok, t) = run(&until(5), 0, done_at(1000));
    assert_eq!(lines, ["/job"; 5]);
    assert!(!ok);
    assert_eq!(
        t.failed,
        [(0, "until (line 12) still false after 5 rounds".to_string())]
    );
    assert_eq!(t.iterations, [false]);
}

#[test]
fn stop_ends_the_iteration_as_completed() {
    let s = script(json!([
        {"step": "group", "name": "g", "steps": [
            get("a", "/a"),
            {"step": "stop", "cond": cmp("iteration", ">=", json!(1))},
            get("b", "/b")
        ]},
        get("c", "/c")
    ]));
    let mut t = Fake::new(|_: &str| (200, http(200, "", "")));
    let mut v = Vu::new(&s, 0);
    for _ in 0..2 {
        let now = t.clock;
        assert!(block(v.iterate(&s, &mut t, now)));
    }
    let lines: Vec<&str> = t
        .sent
        .iter()
        .map(|r| r.split(' ').nth(1).unwrap())
        .collect();
    assert_eq!(
        lines,
        ["/a", "/b", "/c", "/a"],
        "iteration 1 stops after /a"
    );
    assert_eq!(
        t.iterations,
        [true, true],
        "a stopped iteration is completed"
    );
    let passes: Vec<bool> = t.groups.iter().map(|g| g.2).collect();
    assert_eq!(
        passes,
        [true, true],
        "the group the stop cut short is a pass"
    );
    assert!(t.failed.is_empty());
}

#[test]
fn nested_branches_and_loops_decide_per_round() {
    // A when inside a repeat, holding a repeat of a run-time count and a stop: decided on
    // the VU's number and on each round's response.
    let s = script(json!([
        {"step": "repeat", "count": 3, "steps": [
            {"step": "request", "name": "n", "method": "GET", "path": ["/n"],
             "extract": [{"from": "json", "var": "n", "path": ["n"], "text": "$.n"}]},
            {"step": "when", "branches": [
                {"if": {"cond": "all", "of": [cmp("n", ">", json!(1)),
                    {"cond": "in", "left": {"var": "vu"}, "values": [1, 2]}]},
                 "steps": [
                    {"step": "repeat", "count": {"var": "n"}, "steps": [get("inner", "/inner")]},
                    {"step": "stop", "cond": cmp("n", "==", json!(3))}
                 ]},
                {"if": {"cond": "not", "of": {"cond": "match", "var": "n", "pattern": "^[0-9]+$"}},
                 "steps": [get("odd", "/odd")]}
            ]}
        ]},
        get("end", "/end")
    ]));
    let counter = || {
        let mut i = 0;
        move |req: &str| {
            if req.starts_with("GET /n ") {
                i += 1;
                return (200, http(200, "", &format!("{{\"n\":{i}}}")));
            }
            (200, http(200, "", ""))
        }
    };
    // VU 1: n = 1 (no branch), 2 (two inner), 3 (three inner, then stop: no /end).
    let (lines, ok, _) = run(&s, 1, counter());
    let want = [
        "/n", "/n", "/inner", "/inner", "/n", "/inner", "/inner", "/inner",
    ];
    assert_eq!(lines, want);
    assert!(ok);
    // VU 0 is in no branch's set: three /n, then /end.
    let (lines, ok, _) = run(&s, 0, counter());
    assert_eq!(lines, ["/n", "/n", "/n", "/end"]);
    assert!(ok);
    // A value that is no number takes the second branch.
    let (lines, _, _) = run(&s, 0, |req: &str| {
        let body = if req.starts_with("GET /n ") {
            "{\"n\":\"x\"}"
        } else {
            ""
        };
        (200, http(200, "", body))
    });
    assert_eq!(lines, ["/n", "/odd", "/n", "/odd", "/n", "/odd", "/end"]);
}

#[test]
fn a_status_extraction_and_a_default_feed_conditions() {
    let s = script(json!([
        {"step": "request", "name": "a", "method": "GET", "path": ["/a"],
         "checks": [{"check": "status", "in": [200, 404]}],
         "extract": [{"from": "status", "var": "code"},
                     {"from": "header", "var": "next", "name": "x-next", "default": ""}]},
        {"step": "when", "branches": [
            {"if": {"cond": "all", "of": [cmp("code", "==", json!(200)), cmp("next", "!=", json!(""))]},
             "steps": [{"step": "request", "name": "b", "method": "GET", "path": ["/x", {"var": "next"}]}]}
        ], "else": [get("none", "/none")]}
    ]));
    let (lines, ok, _) = run(&s, 0, |req: &str| {
        if req.starts_with("GET /a ") {
            return (200, http(200, "X-Next: /b\r\n", ""));
        }
        (200, http(200, "", ""))
    });
    assert_eq!(lines, ["/a", "/x/b"]);
    assert!(ok);
    let (lines, ok, _) = run(&s, 0, |_: &str| (404, http(404, "", "")));
    assert_eq!(lines, ["/a", "/none"]);
    assert!(!ok, "the 404 is expected by /a but /none's is not");
}

#[test]
fn a_vu_lets_go_of_a_large_answer_only_when_it_rests() {
    let big = format!("X-Big: {}\r\n", "x".repeat(3_000));
    // (the think after a 3 KB head, whether the VU still holds its fields after the
    // iteration; the body stays, for the conditions that read it)
    let cases = [
        ("no think", None, true),
        ("a think shorter than a rest", Some(0.005), true),
        ("a think that rests", Some(0.05), false),
    ];
    for (what, think, kept) in cases {
        let mut steps = vec![get("big", "/big")];
        if let Some(s) = think {
            steps.push(json!({"step": "think", "dist": "constant", "s": s}));
        }
        let s = script(json!(steps));
        let mut t = Fake::new(|_| (200, http(200, &big, "")));
        let mut v = Vu::new(&s, 0);
        let now = t.clock;
        assert!(block(v.iterate(&s, &mut t, now)), "{what}");
        assert_eq!(v.resp.fields_held() >= 3_000, kept, "{what}");
    }
}

use serde_json::json;

use super::*;

fn req(name: &str, path: serde_json::Value) -> serde_json::Value {
    json!({"step": "request", "name": name, "method": "GET", "path": path, "line": 3})
}

fn plan(steps: serde_json::Value) -> serde_json::Value {
    json!({"version": 1, "file": "s.py", "flows": [{"name": "f", "steps": steps}]})
}

#[test]
fn bad_plans_name_file_and_line() {
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        (
            "unknown variable",
            plan(json!([req("a", json!(["/x/", {"var": "nope"}]))])),
            "s.py:3: variable \"nope\" is used before it is set",
        ),
        (
            "relative path",
            plan(json!([req("a", json!(["x"]))])),
            "s.py:3: the URL must be a path starting with '/' or an http:// or https:// URL",
        ),
        (
            "bad regex",
            plan(
                json!([{"step": "request", "name": "a", "method": "GET", "path": ["/"], "line": 4,
            "extract": [{"from": "regex", "var": "v", "pattern": "(", "group": 1, "line": 5}]}]),
            ),
            "s.py:5: bad regex",
        ),
        (
            "zero loop",
            plan(json!([{"step": "loop", "count": 0, "steps": [], "line": 7}])),
            "s.py:7: loop count must be >= 1",
        ),
        (
            "no flows",
            json!({"file": "s.py", "flows": []}),
            "s.py: the plan has no flow",
        ),
        (
            "bad think",
            plan(json!([{"step": "think", "dist": "uniform", "min_s": 2, "max_s": 1, "line": 9}])),
            "s.py:9: bad think time",
        ),
        (
            "version",
            json!({"version": 2, "file": "s.py", "flows": []}),
            "plan version 2",
        ),
        (
            "unknown step",
            plan(json!([{"step": "dance"}])),
            "bad scenario plan",
        ),
    ];
    for (label, p, want) in cases {
        let err = Script::from_json(&p, "h:1").unwrap_err().to_string();
        assert!(err.contains(want), "{label}: {err}");
    }
}

#[test]
fn bad_control_steps_name_file_and_line() {
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        (
            "condition on an unknown variable",
            plan(json!([{"step": "stop", "line": 11, "cond":
                {"cond": "cmp", "left": {"var": "nope"}, "op": "==", "right": {"value": 1}}}])),
            "s.py:11: variable \"nope\" is used before it is set",
        ),
        (
            "unknown comparison",
            plan(json!([{"step": "stop", "line": 11, "cond":
                {"cond": "cmp", "left": {"var": "vu"}, "op": "=~", "right": {"value": 1}}}])),
            "s.py:11: unknown comparison \"=~\"",
        ),
        (
            "bad regex in a condition",
            plan(json!([{"step": "when", "line": 12, "branches": [{"if":
                {"cond": "match", "var": "vu", "pattern": "("}, "steps": []}]}])),
            "s.py:12: bad regex",
        ),
        (
            "until without a request",
            plan(json!([{"step": "until", "line": 13, "limit": 3,
                "cond": {"cond": "all", "of": []}, "steps": []}])),
            "s.py:13: until: its block sends no request",
        ),
        (
            "until without a limit",
            plan(json!([{"step": "until", "line": 14, "limit": 0,
                "cond": {"cond": "all", "of": []}, "steps": [req("a", json!(["/"]))]}])),
            "s.py:14: until: the limit must be between 1",
        ),
        (
            "a socket to an http URL",
            plan(
                json!([{"step": "socket", "line": 16, "name": "w", "url": ["http://h/ws"],
                "messages": [{"type": "text", "template": ["hi"]}]}]),
            ),
            "s.py:16: a WebSocket URL is a path starting with '/' or a ws:// or wss:// URL",
        ),
        (
            "a socket with nothing to send",
            plan(
                json!([{"step": "socket", "line": 17, "name": "w", "url": ["/ws"],
                "messages": []}]),
            ),
            "s.py:17: websocket: give at least one message",
        ),
        (
            "repeat of an unknown variable",
            plan(json!([{"step": "repeat", "line": 15, "count": {"var": "n"}, "steps": []}])),
            "s.py:15: variable \"n\" is used before it is set",
        ),
    ];
    for (label, p, want) in cases {
        let err = Script::from_json(&p, "h:1").unwrap_err().to_string();
        assert!(err.contains(want), "{label}: {err}");
    }
}

#[test]
fn names_are_shared_and_loops_flattened() {
    let p = plan(json!([
        req("a", json!(["/1"])),
        {"step": "loop", "count": 2, "steps": [
            {"step": "group", "name": "g", "steps": [req("b", json!(["/2"]))]},
            req("a", json!(["/3"]))
        ]}
    ]));
    let s = Script::from_json(&p, "h:1").unwrap();
    assert_eq!(s.names, ["a", "b"]);
    assert_eq!(s.groups, ["g"]);
    assert_eq!(s.depth, 1);
    let kinds: Vec<&str> = s.flows[0]
        .ops
        .iter()
        .map(|o| match o {
            Op::Request(_) => "req",
            Op::LoopStart { .. } => "loop",
            Op::LoopEnd { start: 1, .. } => "end->1",
            Op::GroupStart(0) => "group",
            Op::GroupEnd => "/group",
            _ => "?",
        })
        .collect();
    assert_eq!(
        kinds,
        ["req", "loop", "group", "req", "/group", "req", "end->1"]
    );
}

#[test]
fn weights_pick_in_proportion() {
    let p = json!({"flows": [
        {"name": "a", "weight": 5, "steps": [req("a", json!(["/"]))]},
        {"name": "b", "weight": 1, "steps": [req("b", json!(["/"]))]}
    ]});
    let s = Script::from_json(&p, "h").unwrap();
    assert_eq!(s.total_weight, 6);
    let picks: Vec<&str> = (0..6).map(|d| s.pick(d).name.as_str()).collect();
    assert_eq!(picks, ["a", "a", "a", "a", "a", "b"]);
}

/// when/otherwise_when/otherwise, repeat and until flatten into jumps whose targets are the
/// op after each block.
#[test]
fn branches_and_loops_flatten_into_jumps() {
    let yes = json!({"cond": "cmp", "left": {"var": "vu"}, "op": "==", "right": {"value": 0}});
    let p = plan(json!([
        {"step": "when", "branches": [
            {"if": yes, "steps": [req("a", json!(["/a"]))]},
            {"if": yes, "steps": [req("b", json!(["/b"]))]}
        ], "else": [req("c", json!(["/c"]))]},
        {"step": "repeat", "count": {"var": "iteration"}, "steps": [req("d", json!(["/d"]))]},
        {"step": "until", "limit": 2, "cond": yes, "steps": [req("e", json!(["/e"]))]},
        {"step": "stop"},
        {"step": "when", "branches": [{"if": yes, "steps": [req("f", json!(["/f"]))]}]}
    ]));
    let s = Script::from_json(&p, "h:1").unwrap();
    let shape: Vec<String> = s.flows[0]
        .ops
        .iter()
        .map(|o| match o {
            Op::Request(i) => s.names[s.requests[*i].stat].clone(),
            Op::Unless { to, .. } => format!("unless->{to}"),
            Op::Jump(to) => format!("jump->{to}"),
            Op::LoopStart { count, end, .. } => format!("repeat {count:?} end->{end}"),
            Op::LoopEnd { start, .. } => format!("next->{start}"),
            Op::UntilStart { .. } => "until".to_string(),
            Op::UntilEnd { start, limit, .. } => format!("again->{start} ({limit})"),
            Op::Stop(None) => "stop".to_string(),
            _ => "?".to_string(),
        })
        .collect();
    let want = [
        "unless->3",
        "a",
        "jump->7",
        "unless->6",
        "b",
        "jump->7",
        "c",
        "repeat Slot(1) end->10",
        "d",
        "next->7",
        "until",
        "e",
        "again->10 (2)",
        "stop",
        "unless->16",
        "f",
    ];
    assert_eq!(shape, want);
    assert_eq!(s.depth, 1);
}

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
            "s.py:3: the path must start with '/'",
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

//! The executor across hosts: absolute URLs and templates of them, a 302 followed to another
//! host, the Host header and the cookies of each host, a URL that makes no request.

use serde_json::json;

use super::*;

fn first_line(req: &str) -> &str {
    req.lines().next().unwrap_or("")
}

fn host_of(req: &str) -> &str {
    req.lines()
        .find_map(|l| l.strip_prefix("Host: "))
        .unwrap_or("")
}

/// A flow of an absolute URL, a templated one (an extracted Location) and a path: each goes
/// to its origin with its Host header, and the path to the run's host.
#[test]
fn absolute_and_templated_urls_go_to_their_origins() {
    let p = json!({"file": "f.py", "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "login", "method": "POST", "path": ["http://auth:9/login"],
         "extract": [{"from": "header", "var": "loc", "name": "location"}],
         "checks": [{"check": "status", "in": [302]}]},
        {"step": "request", "name": "next", "method": "GET", "path": [{"var": "loc"}, "/more"],
         "query": [["a", ["1 2"]]]},
        {"step": "request", "name": "v6", "method": "GET", "path": ["http://[::1]:7/x/", {"var": "vu"}]},
        {"step": "request", "name": "home", "method": "GET", "path": ["/home"], "timeout_s": 0.25}
    ]}]});
    let s = Script::from_json(&p, "run:1").unwrap();
    assert_eq!(s.requests[3].timeout, Some(Duration::from_millis(250)));
    assert_eq!(s.longest_timeout(), Some(Duration::from_millis(250)));
    let serve = |req: &str| {
        if first_line(req).starts_with("POST /login ") {
            return (
                302,
                http(302, "Location: https://api.example/v1?k=a b\r\n", ""),
            );
        }
        (200, http(200, "", "ok"))
    };
    let mut t = Fake::new(serve);
    let mut vu = Vu::new(&s, 5);
    let now = t.clock;
    assert!(block(vu.iterate(&s, &mut t, now)), "{:?}", t.failed);
    let lines: Vec<(&str, &str)> = t.sent.iter().map(|r| (first_line(r), host_of(r))).collect();
    assert_eq!(
        lines,
        [
            ("POST /login HTTP/1.1", "auth:9"),
            ("GET /v1?k=a%20b/more&a=1+2 HTTP/1.1", "api.example"),
            ("GET /x/5 HTTP/1.1", "[::1]:7"),
            ("GET /home HTTP/1.1", "run:1"),
        ]
    );
    assert_eq!(t.to, ["auth:9", "api.example", "[::1]:7", ""]);
}

/// follow_redirects follows a 302 to another host (and a relative Location there against
/// that host), keeps each host's cookies apart, and leaves the flow's Authorization behind
/// once it left the request's origin.
#[test]
fn redirects_cross_hosts_with_each_hosts_cookies() {
    let p = json!({"file": "f.py", "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "a", "method": "GET", "path": ["/start"], "follow_redirects": true,
         "headers": [["Authorization", ["Bearer t"]]]},
        {"step": "request", "name": "again", "method": "GET", "path": ["http://b:2/again"]},
        {"step": "request", "name": "home", "method": "GET", "path": ["/home"]}
    ]}]});
    let s = Script::from_json(&p, "a:1").unwrap();
    let serve = |req: &str| {
        let (line, host) = (first_line(req), host_of(req));
        match (line, host) {
            ("GET /start HTTP/1.1", "a:1") => {
                assert!(req.contains("Authorization: Bearer t\r\n"), "{req}");
                (
                    302,
                    http(302, "Set-Cookie: sa=1\r\nLocation: http://b:2/x/y\r\n", ""),
                )
            }
            ("GET /x/y HTTP/1.1", "b:2") => {
                assert!(
                    !req.contains("Authorization"),
                    "credentials stay home: {req}"
                );
                assert!(!req.contains("Cookie"), "a's cookie is a's: {req}");
                (302, http(302, "Set-Cookie: sb=2\r\nLocation: z\r\n", ""))
            }
            ("GET /x/z HTTP/1.1", "b:2") => {
                assert!(req.contains("Cookie: sb=2\r\n"), "{req}");
                (200, http(200, "", "there"))
            }
            ("GET /again HTTP/1.1", "b:2") => {
                assert!(req.contains("Cookie: sb=2\r\n"), "{req}");
                (200, http(200, "", "again"))
            }
            ("GET /home HTTP/1.1", "a:1") => {
                assert!(req.contains("Cookie: sa=1\r\n"), "{req}");
                assert!(!req.contains("sb=2"), "{req}");
                (200, http(200, "", "home"))
            }
            _ => (404, http(404, "", "")),
        }
    };
    let mut t = Fake::new(serve);
    let mut vu = Vu::new(&s, 0);
    let now = t.clock;
    assert!(block(vu.iterate(&s, &mut t, now)), "{:?}", t.reasons);
    assert_eq!(t.to, ["", "b:2", "b:2", "b:2", ""]);
    let hop = s.requests[0].hop_stat;
    let stats: Vec<usize> = t.stats.iter().map(|(n, _)| *n).collect();
    assert_eq!(stats, [0, hop, hop, 2, 3]);
}

/// A templated URL that makes no request fails that request, with the URL and why, and
/// sends nothing; a URL written out wrong is refused when the plan is built.
#[test]
fn urls_that_make_no_request() {
    let p = json!({"file": "f.py", "vars": {"var.BASE": "ftp://x"}, "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "r", "method": "GET", "path": [{"var": "var.BASE"}, "/x"]}
    ]}]});
    let s = Script::from_json(&p, "h:1").unwrap();
    let mut t = Fake::new(|_: &str| (200, http(200, "", "")));
    let mut vu = Vu::new(&s, 0);
    let now = t.clock;
    assert!(!block(vu.iterate(&s, &mut t, now)));
    assert!(t.sent.is_empty());
    assert_eq!(t.failed.len(), 1);
    assert!(
        t.failed[0]
            .1
            .starts_with("bad URL \"ftp://x/x\": not a path"),
        "{:?}",
        t.failed
    );

    let cases: &[(serde_json::Value, &str)] = &[
        (json!(["x/y"]), "f.py:7: the URL must be a path starting with '/' or an http:// or https:// URL, got \"x/y\""),
        (json!(["http://h:99999/x"]), "f.py:7: bad URL: a bad port, got \"http://h:99999/x\""),
        (json!(["http://u@h/"]), "user names"),
        (json!(["//h/x"]), "must be a path"),
    ];
    for (path, want) in cases {
        let p = json!({"file": "f.py", "flows": [{"name": "f", "steps": [
            {"step": "request", "name": "r", "method": "GET", "path": path, "line": 7}
        ]}]});
        let e = Script::from_json(&p, "h:1")
            .expect_err("refused")
            .to_string();
        assert!(e.contains(want), "{path}: {e}");
    }
    // An origin from a variable is checked per request, not before.
    let p = json!({"file": "f.py", "vars": {"var.H": "h"}, "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "r", "method": "GET", "path": ["http://", {"var": "var.H"}, ":5/x"],
         "timeout_s": 0}
    ]}]});
    let e = Script::from_json(&p, "h:1")
        .expect_err("a zero timeout")
        .to_string();
    assert!(e.contains("timeout must be > 0 s"), "{e}");
}

//! The survey form app against a real server: the seed-003 flow (GET the form and a session
//! cookie, POST it, follow the 302), the ways a client gets it wrong, and what `/__stats` saw.

mod common;

use common::{start, Client, Response};
use redline_target::TargetStats;

const FORM_TYPE: &str = "application/x-www-form-urlencoded";

fn post(client: &mut Client, path: &str, headers: &[(&str, &str)], body: &str) -> Response {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    client.send_raw(req.as_bytes());
    client.read_response().expect("response")
}

fn get(client: &mut Client, path: &str, cookie: Option<&str>) -> Response {
    let cookie = cookie.map_or(String::new(), |c| format!("Cookie: {c}\r\n"));
    client.send_raw(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{cookie}\r\n").as_bytes());
    client.read_response().expect("response")
}

/// session_of reads "session=ID" out of a Set-Cookie header and checks its attributes.
fn session_of(resp: &Response) -> String {
    let set = resp.header("set-cookie").expect("set-cookie");
    let mut parts = set.split("; ");
    let pair = parts.next().expect("pair");
    let attributes: Vec<&str> = parts.collect();
    assert_eq!(attributes, ["Path=/", "HttpOnly"], "{set}");
    let id = pair.strip_prefix("session=").expect("session cookie");
    assert_eq!(id.len(), 32, "{set}");
    pair.to_string()
}

#[test]
fn the_survey_flow_redirects_and_is_counted() {
    let target = start(2);
    let mut client = Client::connect(target.local_addr());
    let page = get(&mut client, "/form", None);
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let html = page.text();
    assert!(
        html.contains("<form method=\"post\" action=\"/form\">"),
        "{html}"
    );
    assert!(html.contains("name=\"name\"") && html.contains("name=\"rating\""));
    let cookie = session_of(&page);

    let posted = post(
        &mut client,
        "/form",
        &[("Cookie", &cookie), ("Content-Type", FORM_TYPE)],
        "name=Ada+Lovelace&rating=5",
    );
    assert_eq!(posted.status, 302);
    assert_eq!(posted.header("location"), Some("/thanks"));
    assert_eq!(posted.header("set-cookie"), None);

    let thanks = get(&mut client, "/thanks", Some(&cookie));
    assert_eq!(thanks.status, 200);
    assert!(thanks.text().contains("Thanks"));

    // A returning visitor keeps the session it has.
    let again = get(&mut client, "/form", Some(&format!("theme=dark; {cookie}")));
    assert_eq!(again.status, 200);
    assert_eq!(again.header("set-cookie"), None);

    // Another visitor gets another session.
    let other = get(&mut Client::connect(target.local_addr()), "/form", None);
    assert_ne!(session_of(&other), cookie);

    assert_eq!(
        target.stats(),
        TargetStats {
            requests: 5,
            connections: 2,
            form_pages: 3,
            sessions_issued: 2,
            forms_posted: 1,
            thanks_pages: 1,
            ..TargetStats::default()
        }
    );
}

/// Every way to get the flow wrong is refused with its own status and counted. Table-driven:
/// (label, request, status, reason in the body, the counter that moves).
#[test]
// long: a table of cases, one wrong visit each, on one connection.
fn wrong_visits_are_refused_and_counted() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    let cookie = session_of(&get(&mut client, "/form", None));
    let forged = format!("session={}", "0".repeat(32));
    let good = "name=Ada&rating=4";
    let big = format!("name=Ada&rating=4&pad={}", "x".repeat(70_000));
    type Send<'a> = Box<dyn Fn(&mut Client) -> Response + 'a>;
    type Case<'a> = (&'a str, Send<'a>, u16, &'a str, fn(&TargetStats) -> u64);
    let cases: Vec<Case<'_>> = vec![
        (
            "post without a cookie",
            Box::new(|c| post(c, "/form", &[("Content-Type", FORM_TYPE)], good)),
            403,
            "no session",
            |s| s.missing_cookie,
        ),
        (
            "post with a forged cookie",
            Box::new(|c| {
                post(
                    c,
                    "/form",
                    &[("Cookie", &forged), ("Content-Type", FORM_TYPE)],
                    good,
                )
            }),
            403,
            "no session",
            |s| s.missing_cookie,
        ),
        (
            "thanks without a cookie",
            Box::new(|c| get(c, "/thanks", None)),
            403,
            "no session",
            |s| s.missing_cookie,
        ),
        (
            "json instead of a form",
            Box::new(|c| {
                post(
                    c,
                    "/form",
                    &[("Cookie", &cookie), ("Content-Type", "application/json")],
                    "{\"name\": \"Ada\", \"rating\": 4}",
                )
            }),
            400,
            "expected Content-Type: application/x-www-form-urlencoded",
            |s| s.forms_invalid,
        ),
        (
            "missing rating",
            Box::new(|c| {
                post(
                    c,
                    "/form",
                    &[("Cookie", &cookie), ("Content-Type", FORM_TYPE)],
                    "name=Ada",
                )
            }),
            400,
            "missing field rating",
            |s| s.forms_invalid,
        ),
        (
            "body over 64 KiB",
            Box::new(|c| {
                post(
                    c,
                    "/form",
                    &[("Cookie", &cookie), ("Content-Type", FORM_TYPE)],
                    &big,
                )
            }),
            413,
            "too large",
            |s| s.forms_invalid,
        ),
        (
            "chunked form body",
            Box::new(|c| {
                let req = format!(
                    "POST /form HTTP/1.1\r\nCookie: {cookie}\r\nContent-Type: {FORM_TYPE}\r\n\
                     Transfer-Encoding: chunked\r\n\r\n8\r\nname=Ada\r\n9\r\n&rating=2\r\n0\r\n\r\n"
                );
                c.send_raw(req.as_bytes());
                c.read_response().expect("response")
            }),
            302,
            "see /thanks",
            |s| s.forms_posted,
        ),
        (
            "delete the form",
            Box::new(|c| {
                c.send_raw(b"DELETE /form HTTP/1.1\r\n\r\n");
                c.read_response().expect("response")
            }),
            405,
            "method not allowed",
            |_| 0,
        ),
    ];
    for (label, send, status, reason, counter) in cases {
        let before = target.stats();
        let resp = send(&mut client);
        assert_eq!(resp.status, status, "{label}: {}", resp.text());
        assert!(resp.text().contains(reason), "{label}: {}", resp.text());
        let after = target.stats();
        assert_eq!(after.requests, before.requests + 1, "{label}: one request");
        if status != 405 {
            assert_eq!(counter(&after), counter(&before) + 1, "{label}: counted");
        } else {
            assert_eq!(resp.header("allow"), Some("GET, HEAD, POST"), "{label}");
        }
        assert_eq!(after.sessions_issued, 1, "{label}: no new session");
    }
    // The connection survived every refusal (bodies were read to the end).
    assert_eq!(get(&mut client, "/thanks", Some(&cookie)).status, 200);
}

/// The form routes take the query's behaviour like any path (latency here) and the stats
/// endpoint serves the form counters.
#[test]
fn form_routes_take_query_behaviour_and_show_in_stats() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    let sent = std::time::Instant::now();
    let page = get(&mut client, "/form?latency=30ms", None);
    assert!(sent.elapsed() >= std::time::Duration::from_millis(30));
    assert_eq!(page.status, 200);
    let cookie = session_of(&page);
    assert_eq!(
        get(&mut client, "/form?status=503", Some(&cookie)).status,
        503
    );
    let stats = get(&mut client, "/__stats", None).text();
    for field in [
        "\"form_pages\": 1",
        "\"sessions_issued\": 1",
        "\"forms_posted\": 0",
        "\"missing_cookie\": 0",
    ] {
        assert!(stats.contains(field), "{field} in {stats}");
    }
}

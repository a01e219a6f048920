use super::*;
use crate::config::RunConfig;

/// step is the one request of the plain run that `json` configures.
fn step(json: &str) -> RequestStep {
    let cfg = RunConfig::from_json(json)
        .and_then(|c| c.check())
        .expect(json);
    let plan = Plan::single_request(&cfg);
    let Some(Step::Request(step)) = plan.flows[0].steps.first() else {
        panic!("{json}: no request step");
    };
    step.clone()
}

#[test]
fn a_plain_run_request_in_http1_text() {
    let ua = format!("User-Agent: {USER_AGENT}\r\n");
    let cases: [(&str, &str, String); 7] = [
        (
            "get",
            r#"{"url":"http://127.0.0.1:8080/a?b=1"}"#,
            format!("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{ua}\r\n"),
        ),
        (
            "post with body",
            r#"{"url":"http://127.0.0.1:8080/a","method":"POST","headers":[["X-A","1"]],"body_b64":"aGV5"}"#,
            format!("POST /a HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\n{ua}Content-Length: 3\r\n\r\nhey"),
        ),
        (
            "an empty post says its length",
            r#"{"url":"http://h/","method":"POST"}"#,
            format!("POST / HTTP/1.1\r\nHost: h\r\n{ua}Content-Length: 0\r\n\r\n"),
        ),
        (
            "user host wins",
            r#"{"url":"http://127.0.0.1:8080/a","headers":[["host","example"]]}"#,
            format!("GET /a HTTP/1.1\r\nHost: example\r\n{ua}\r\n"),
        ),
        (
            "user agent wins",
            r#"{"url":"http://h/","headers":[["user-agent","curl/8"]]}"#,
            "GET / HTTP/1.1\r\nHost: h\r\nuser-agent: curl/8\r\n\r\n".to_string(),
        ),
        (
            "through a proxy: absolute form and its credentials",
            r#"{"url":"http://origin:8080/x?y=1","proxy":"http://u:pw@p:1"}"#,
            format!("GET http://origin:8080/x?y=1 HTTP/1.1\r\nHost: origin:8080\r\n{ua}Proxy-Authorization: Basic dTpwdw==\r\n\r\n"),
        ),
        (
            "through a proxy with the user's own credentials",
            r#"{"url":"http://o/","proxy":"http://u:pw@p:1","headers":[["proxy-authorization","Bearer t"]]}"#,
            format!("GET http://o/ HTTP/1.1\r\nHost: o\r\nproxy-authorization: Bearer t\r\n{ua}\r\n"),
        ),
    ];
    for (label, json, want) in cases {
        let got = step(json);
        assert_eq!(String::from_utf8_lossy(&got.request.h1), want, "{label}");
    }
    let tunnel = step(r#"{"url":"https://o/x","proxy":"http://u:pw@p:1"}"#);
    let want = format!("GET /x HTTP/1.1\r\nHost: o\r\n{ua}\r\n");
    let h1 = String::from_utf8_lossy(&tunnel.request.h1);
    assert_eq!(h1, want, "https tunnels: origin form, no credentials");
}

#[test]
fn a_plain_run_request_as_h2_sends_it() {
    // (label, config, uri, header names, body), or None where h2 cannot carry the request
    type Case<'a> = (&'a str, &'a str, Option<(&'a str, &'a [&'a str], &'a [u8])>);
    let cases: [Case; 4] = [
        (
            "get",
            r#"{"url":"http://127.0.0.1:8080/a?b=1"}"#,
            Some(("http://127.0.0.1:8080/a?b=1", &["user-agent"], b"")),
        ),
        (
            "post over tls, connection headers left out",
            r#"{"url":"https://h/p","method":"POST","headers":[["Connection","keep-alive"],["X-A","1"]],"body_b64":"aGk="}"#,
            Some((
                "https://h/p",
                &["x-a", "user-agent", "content-length"],
                b"hi",
            )),
        ),
        (
            "user host is the authority",
            r#"{"url":"http://127.0.0.1:8080/a","headers":[["Host","example"]]}"#,
            Some(("http://example/a", &["user-agent"], b"")),
        ),
        (
            "a value h2 refuses",
            r#"{"url":"http://h/","headers":[["X-A","a\u0001b"]]}"#,
            None,
        ),
    ];
    for (label, json, want) in cases {
        let got = step(json);
        let got = got.request.h2.as_ref().map(|t| {
            let r = t.request();
            let names: Vec<String> = r.headers().keys().map(|k| k.as_str().to_string()).collect();
            (r.uri().to_string(), names, t.body.to_vec())
        });
        let want = want.map(|(uri, names, body)| {
            let names = names.iter().map(|n| n.to_string()).collect();
            (uri.to_string(), names, body.to_vec())
        });
        assert_eq!(got, want, "{label}");
    }
}

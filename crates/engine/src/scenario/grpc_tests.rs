use std::path::Path;

use serde_json::json;

use super::*;
use crate::scenario::{Body, Script};

/// probe is the test server's probe file.
fn probe() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc/probe.proto");
    path.to_string_lossy().into_owned()
}

/// call is a flow's gRPC step of the probe's `method`, its message `message`.
fn call(method: &str, message: serde_json::Value) -> serde_json::Value {
    json!({"step": "request", "name": method, "method": "POST", "line": 4,
        "path": [format!("/redline.probe.Probe/{method}")],
        "body": {"type": "json", "template": message},
        "grpc": {"proto": probe(), "method": format!("redline.probe.Probe/{method}")}})
}

fn plan(steps: serde_json::Value) -> serde_json::Value {
    json!({"version": 1, "file": "s.py", "flows": [{"name": "f", "steps": steps}]})
}

#[test]
fn a_call_step_is_a_post_with_grpcs_headers_and_its_message_encoded_once() {
    let s = Script::from_json(
        &plan(json!([
            call("Unary", json!([r#"{"delay_ms":5,"payload":"hi"}"#])),
            call("Stream", json!(["{\"count\":\"", {"var": "vu"}, "\"}"])),
        ])),
        "127.0.0.1:9",
    )
    .expect("builds");
    let (unary, stream) = (&s.requests[0], &s.requests[1]);
    let names: Vec<&str> = unary.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names[..2], ["content-type", "te"]);
    assert_eq!(unary.content_type, None, "no JSON content type");
    assert!(
        !unary.stream && stream.stream,
        "a streamed answer is timed as it comes"
    );
    let fixed = unary.grpc.as_ref().and_then(|g| g.fixed.clone());
    assert_eq!(
        fixed,
        Some(crate::grpc::frame(&[0x08, 5, 0x32, 2, b'h', b'i']))
    );
    assert!(stream.grpc.as_ref().is_some_and(|g| g.fixed.is_none()));
    assert!(matches!(stream.body, Body::Json(_)));
    // The rendered JSON, a variable's value a string as the template writes it, encoded.
    let g = stream.grpc.as_ref().expect("a call");
    let mut body = br#"{"count":"3"}"#.to_vec();
    assert_eq!(g.encode(&mut body), Ok(()));
    assert_eq!(body, crate::grpc::frame(&[0x20, 3]));
    let mut body = br#"{"count":"three"}"#.to_vec();
    assert_eq!(g.encode(&mut body), Err(UNFIT));
    assert_eq!(body, crate::grpc::frame(&[]), "sent as an empty message");
}

#[test]
fn a_steps_timeout_is_sent_as_the_calls_deadline() {
    let mut timed = call("Unary", json!(["{}"]));
    timed["timeout_s"] = json!(0.25);
    let s = Script::from_json(&plan(json!([timed, call("Unary", json!(["{}"]))])), "h:1")
        .expect("builds");
    let deadline = |r: &crate::scenario::Request| -> Option<String> {
        let (_, t) = r.headers.iter().find(|(k, _)| k == "grpc-timeout")?;
        let mut out = Vec::new();
        let _ = t.render(
            &[],
            &mut out,
            &mut crate::scenario::template::Scratch::default(),
        );
        Some(String::from_utf8(out).expect("text"))
    };
    assert_eq!(deadline(&s.requests[0]).as_deref(), Some("250000u"));
    assert_eq!(
        deadline(&s.requests[1]),
        None,
        "no timeout=, no deadline sent"
    );
}

#[test]
fn a_calls_mistakes_name_the_scenarios_line() {
    let mut bad_proto = call("Unary", json!(["{}"]));
    bad_proto["grpc"]["proto"] = json!("/nonexistent/x.proto");
    let mut metadata = call("Unary", json!(["{}"]));
    metadata["headers"] = json!([["grpc-timeout", ["1S"]]]);
    let mut get = call("Unary", json!(["{}"]));
    get["method"] = json!("GET");
    let cases = [
        (
            "no such method",
            call("Nope", json!(["{}"])),
            "s.py:4: service redline.probe.Probe has no method Nope",
        ),
        (
            "a message that does not fit",
            call("Unary", json!([r#"{"delay": 1}"#])),
            "s.py:4: the request data does not fit redline.probe.ProbeRequest",
        ),
        (
            "no proto",
            bad_proto,
            "s.py:4: --proto /nonexistent/x.proto: no such file",
        ),
        (
            "reserved metadata",
            metadata,
            "s.py:4: gRPC metadata \"grpc-timeout\" is the call's own",
        ),
        ("a GET", get, "s.py:4: a gRPC call is a POST"),
    ];
    for (label, step, want) in cases {
        let err = Script::from_json(&plan(json!([step])), "h:1")
            .expect_err(label)
            .to_string();
        assert!(err.contains(want), "{label}: {err}");
        assert!(!err.contains('\n'), "{label}: one line: {err}");
    }
}

#[test]
fn a_reply_reads_as_json_with_the_protos_names_and_every_field() {
    let s = Script::from_json(
        &plan(json!([
            call("Unary", json!(["{}"])),
            call("Stream", json!(["{}"]))
        ])),
        "h:1",
    )
    .expect("builds");
    let (unary, stream) = (
        s.requests[0].grpc.as_ref().expect("call"),
        s.requests[1].grpc.as_ref().expect("call"),
    );
    let one = |seq: u8, payload: &[u8]| {
        let mut m = vec![0x08, seq, 0x12, payload.len() as u8];
        m.extend_from_slice(payload);
        crate::grpc::frame(&m)
    };
    let read = |g: &GrpcCall, body: Vec<u8>| {
        let mut resp = Response::default();
        resp.head(200);
        resp.payload(&body);
        g.reply(&mut resp, 5);
        assert_eq!(resp.status, 5, "the call's status, not HTTP's");
        String::from_utf8(resp.body).expect("text")
    };
    assert_eq!(read(unary, one(7, b"ab")), r#"{"seq":"7","payload":"ab"}"#);
    assert_eq!(
        read(unary, crate::grpc::frame(&[])),
        r#"{"seq":"0","payload":""}"#
    );
    assert_eq!(read(unary, Vec::new()), "", "no message: no JSON");
    let two = [one(0, b"x"), one(1, b"y")].concat();
    assert_eq!(
        read(stream, two.clone()),
        r#"[{"seq":"0","payload":"x"},{"seq":"1","payload":"y"}]"#
    );
    let cut = two[..two.len() - 1].to_vec();
    assert_eq!(
        read(stream, cut),
        r#"[{"seq":"0","payload":"x"}]"#,
        "a cut message ends it"
    );
}

/// Routed is where a case's URL goes: (https, grpc, host, port), or words of its refusal.
type Routed = Result<(bool, bool, &'static str, u16), &'static str>;

#[test]
fn urls_go_to_their_protocols_origin() {
    let base = "http://run:80";
    let o = |host, port, https, grpc| Origin {
        https,
        host,
        port,
        authority: "",
        grpc,
    };
    let cases: [(&str, &str, bool, Routed); 6] = [
        (
            "a path, called",
            "/p.S/M",
            true,
            Ok((false, true, "run", 80)),
        ),
        (
            "grpc://",
            "grpc://h:50051/p.S/M",
            true,
            Ok((false, true, "h", 50051)),
        ),
        (
            "grpcs://",
            "grpcs://h/p.S/M",
            true,
            Ok((true, true, "h", 443)),
        ),
        (
            "an HTTP URL called",
            "http://h/p.S/M",
            true,
            Err("grpc://, grpcs:// or a path"),
        ),
        (
            "a gRPC URL requested",
            "grpc://h:1/x",
            false,
            Err("is a gRPC call's (u.grpc)"),
        ),
        ("a path requested", "/x", false, Ok((false, false, "", 0))),
    ];
    for (label, url, grpc, want) in cases {
        let routed = split(url, grpc, base).map(|s| (s.origin, s.target));
        match (routed, want) {
            (Ok((Some(got), _)), Ok((https, g, host, port))) => {
                let want = o(host, port, https, g);
                assert!(got.same(&want) && got.grpc == g, "{label}: {got:?}");
            }
            (Ok((None, target)), Ok((_, _, "", _))) => assert_eq!(target, url, "{label}"),
            (Err(why), Err(want)) => assert!(why.contains(want), "{label}: {why}"),
            (got, want) => panic!("{label}: {got:?} against {want:?}"),
        }
    }
}

#[test]
fn a_failures_reason_is_its_codes_name_and_the_servers_message() {
    let answer = |fields: &[(&str, &str)]| {
        let mut r = Response::default();
        r.head(200);
        for (n, v) in fields {
            r.header(n.as_bytes(), v.as_bytes());
        }
        r
    };
    let cases = [
        ("no message", 14, answer(&[]), "gRPC UNAVAILABLE"),
        ("a code past the names", 40, answer(&[]), "gRPC status 40"),
        (
            "the message, decoded",
            5,
            answer(&[("grpc-status", "5"), ("grpc-message", "no%20user%207")]),
            "gRPC NOT_FOUND: no user 7",
        ),
        (
            "an empty message",
            13,
            answer(&[("grpc-message", " ")]),
            "gRPC INTERNAL",
        ),
    ];
    for (label, status, resp, want) in cases {
        assert_eq!(reason(status, &resp), want, "{label}");
    }
}

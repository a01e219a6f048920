use std::path::{Path, PathBuf};
use std::time::Duration;

use prost_reflect::{DescriptorPool, DynamicMessage, Value};

use super::*;

/// probe is the test server's probe file, as the docs and the Python tests use it.
fn probe() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc/probe.proto")
}

/// written writes `text` as a .proto of its own in a fresh directory and gives its path.
fn written(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redline-grpc-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{name}.proto"));
    std::fs::write(&path, text).expect("write proto");
    path
}

/// each_refused_in_one_line holds each case (label, proto, method, JSON, what the error
/// says) to a refusal of one line that says it.
fn each_refused_in_one_line(cases: &[(&str, &Path, &str, &str, &str)]) {
    for &(label, proto, method, json, want) in cases {
        let err = prepare(proto, &[], method, json)
            .expect_err(label)
            .to_string();
        assert!(err.contains(want), "{label}: {err}");
        assert!(!err.contains('\n'), "{label}: one line: {err}");
    }
}

#[test]
fn a_call_is_the_method_path_and_its_message_framed() {
    let call = prepare(
        &probe(),
        &[],
        "redline.probe.Probe/Unary",
        r#"{"delay_ms": 20, "status": 14, "payload": "hi"}"#,
    )
    .expect("prepared");
    assert_eq!(call.path, "/redline.probe.Probe/Unary");
    assert!(!call.server_streaming);
    assert_eq!(call.input, "redline.probe.ProbeRequest");
    // The frame: not compressed, then the length, then a message that decodes to the JSON.
    assert_eq!(call.body[0], 0);
    let len = u32::from_be_bytes(call.body[1..5].try_into().expect("4 bytes")) as usize;
    assert_eq!(len, call.body.len() - 5);
    let pool: DescriptorPool = compile(&probe(), &[]).expect("compiles");
    let desc = pool
        .get_message_by_name("redline.probe.ProbeRequest")
        .expect("message");
    let back = DynamicMessage::decode(desc, &call.body[5..]).expect("decodes");
    assert_eq!(
        back.get_field_by_name("delay_ms").as_deref(),
        Some(&Value::U32(20))
    );
    assert_eq!(
        back.get_field_by_name("status").as_deref(),
        Some(&Value::U32(14))
    );
    assert_eq!(
        back.get_field_by_name("payload").as_deref(),
        Some(&Value::String("hi".into()))
    );
    // grpcurl's spelling of the method, and the streaming one.
    let s = prepare(&probe(), &[], "redline.probe.Probe.Stream", "{}").expect("prepared");
    assert!(s.server_streaming);
    assert_eq!(
        s.body,
        vec![0, 0, 0, 0, 0],
        "an empty message is a bare frame"
    );
}

#[test]
fn a_client_stream_is_its_messages_framed_one_after_another() {
    // ghz's way: a JSON array is that many messages; an object is one.
    let each = |json: &str, method: &str| {
        let c = prepare(&probe(), &[], method, json).expect("prepared");
        (c.messages, c.client_streaming, c.server_streaming, c.body)
    };
    let one = frame(&[0x08, 5]); // delay_ms = 5
    let (n, client, server, body) = each(
        r#"[{"delay_ms": 5}, {}, {"delay_ms": 5}]"#,
        "redline.probe.Probe/Collect",
    );
    assert_eq!((n, client, server), (3, true, false));
    assert_eq!(body, [&one[..], &frame(&[]), &one[..]].concat());
    let (n, client, server, body) = each(r#"{"delay_ms": 5}"#, "redline.probe.Probe/Chat");
    assert_eq!((n, client, server, body), (1, true, true, one));
    let (n, _, _, body) = each("[]", "redline.probe.Probe/Chat");
    assert_eq!((n, body.len()), (0, 0), "no message: an empty body");
    let (n, client, _, _) = each("{}", "redline.probe.Probe/Unary");
    assert_eq!((n, client), (1, false));
}

#[test]
fn imports_are_found_beside_the_file_and_among_the_well_known_ones() {
    let dep = written(
        "dep",
        "syntax = \"proto3\"; package dep; message Dep { string s = 1; }",
    );
    let main = dep.with_file_name("main.proto");
    std::fs::write(
        &main,
        "syntax = \"proto3\"; package m; import \"dep.proto\"; \
         import \"google/protobuf/empty.proto\"; \
         service S { rpc Get(dep.Dep) returns (google.protobuf.Empty); }",
    )
    .expect("write");
    let call = prepare(&main, &[], "m.S/Get", r#"{"s": "x"}"#).expect("prepared");
    assert_eq!(call.body, vec![0, 0, 0, 0, 3, 0x0a, 1, b'x']);
}

#[test]
fn each_mistake_is_one_line_naming_what_does_not_fit() {
    let broken = written(
        "broken",
        "syntax = \"proto3\";\npackage x;\nmessage M { string s = 1 }\n",
    );
    let missing = PathBuf::from("/nonexistent/redline/none.proto");
    let (probe, broken) = (probe(), broken.as_path());
    let (probe, missing) = (probe.as_path(), missing.as_path());
    let cases: Vec<(&str, &Path, &str, &str, &str)> = vec![
        ("no file", missing, "a.S/M", "{}", "no such file"),
        (
            "no slash",
            probe,
            "Unary",
            "{}",
            "expected package.Service/Method",
        ),
        (
            "no service",
            probe,
            "redline.probe.Nope/Unary",
            "{}",
            "no service redline.probe.Nope (it has: redline.probe.Probe)",
        ),
        (
            "no method",
            probe,
            "redline.probe.Probe/Nope",
            "{}",
            "has no method Nope (it has: Unary, Stream, Collect, Chat)",
        ),
        (
            "unknown field",
            probe,
            "redline.probe.Probe/Unary",
            r#"{"delay": 5}"#,
            "does not fit redline.probe.ProbeRequest",
        ),
        (
            "wrong type",
            probe,
            "redline.probe.Probe/Unary",
            r#"{"delay_ms": "soon"}"#,
            "does not fit redline.probe.ProbeRequest",
        ),
        (
            "not json",
            probe,
            "redline.probe.Probe/Unary",
            "{delay_ms: 5}",
            "does not fit",
        ),
        (
            "trailing",
            probe,
            "redline.probe.Probe/Unary",
            "{} {}",
            "does not fit",
        ),
        ("syntax", broken, "x.S/M", "{}", "broken.proto:3:"),
    ];
    each_refused_in_one_line(&cases);
}

#[test]
fn a_list_of_messages_is_refused_where_one_goes_and_each_is_checked() {
    let bidi = written(
        "bidi-list",
        "syntax = \"proto3\"; package b; message M {} \
         service S { rpc Chat(stream M) returns (stream M); }",
    );
    let cases: [(&str, &Path, &str, &str, &str); 2] = [
        (
            "a list for one message",
            &probe(),
            "redline.probe.Probe/Unary",
            "[{}, {}]",
            "takes one message: a JSON array of messages goes with a client-streaming",
        ),
        (
            "a list item that does not fit",
            &bidi,
            "b.S/Chat",
            r#"[{}, {"x": 1}]"#,
            "does not fit b.M (message 2 of 2)",
        ),
    ];
    each_refused_in_one_line(&cases);
}

#[test]
fn status_values_and_http_statuses_read_as_codes() {
    let cases: &[(&[u8], Option<u16>)] = &[
        (b"0", Some(0)),
        (b"14", Some(14)),
        (b" 2 ", Some(2)),
        (b"", None),
        (b"OK", None),
        (b"-1", None),
        (b"200", None),
    ];
    for (value, want) in cases {
        assert_eq!(status(value), *want, "{value:?}");
    }
    for (http, code) in [
        (400, 13),
        (401, 16),
        (403, 7),
        (404, 12),
        (429, 14),
        (503, 14),
        (500, 2),
    ] {
        assert_eq!(from_http(http), code, "{http}");
    }
    assert_eq!(CODES[14], "UNAVAILABLE");
    assert_eq!(frame(b"ab"), vec![0, 0, 0, 0, 2, b'a', b'b']);
}

#[test]
fn a_timeout_is_written_in_the_finest_unit_that_holds_it_rounded_up() {
    let cases = [
        ("a nanosecond", Duration::from_nanos(1), "1n"),
        (
            "100 ms, in microseconds",
            Duration::from_millis(100),
            "100000u",
        ),
        (
            "under 8 digits of ns",
            Duration::from_nanos(99_999_999),
            "99999999n",
        ),
        ("1.5 s", Duration::from_millis(1500), "1500000u"),
        (
            "30 s, in microseconds",
            Duration::from_secs(30),
            "30000000u",
        ),
        ("200 s, in ms", Duration::from_secs(200), "200000m"),
        (
            "rounded up, never early",
            Duration::from_nanos(100_000_001),
            "100001u",
        ),
        (
            "two days, in seconds",
            Duration::from_secs(2 * 86_400),
            "172800S",
        ),
        (
            "5 years, in minutes",
            Duration::from_secs(5 * 365 * 86_400),
            "2628000M",
        ),
        (
            "past 8 digits of hours",
            Duration::from_secs(u64::MAX),
            "99999999H",
        ),
    ];
    for (label, timeout, want) in cases {
        assert_eq!(timeout_header(timeout), want, "{label}");
    }
}

#[test]
fn a_status_message_is_percent_decoded_and_bounded() {
    let long = "x".repeat(MAX_MESSAGE + 5);
    let cases = [
        (
            "plain",
            "probe status".to_string(),
            "probe status".to_string(),
        ),
        (
            "percent-encoded",
            "no%20such%3A user".into(),
            "no such: user".into(),
        ),
        ("UTF-8 encoded", "caf%C3%A9".into(), "caf\u{e9}".into()),
        (
            "a bare percent",
            "100% sure %zz".into(),
            "100% sure %zz".into(),
        ),
        (
            "cut short",
            long.clone(),
            format!("{}...", &long[..MAX_MESSAGE]),
        ),
    ];
    for (label, raw, want) in cases {
        assert_eq!(message_text(raw.as_bytes()), want, "{label}");
    }
}

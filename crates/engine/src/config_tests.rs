use super::*;

fn parse(json: &str) -> Result<Checked, EngineError> {
    RunConfig::from_json(json)?.check()
}

#[test]
fn accepts_good_configs_with_defaults() {
    let c = parse(r#"{"url":"http://127.0.0.1:8080/a?b=1","duration_s":2}"#).expect("valid");
    assert_eq!(c.model, Model::Closed);
    assert_eq!(c.method, "GET");
    assert_eq!(c.target.port, 8080);
    assert_eq!(c.target.path_and_query, "/a?b=1");
    assert_eq!(c.target.authority, "127.0.0.1:8080");
    assert_eq!(c.profile.peak(), 50.0);
    assert_eq!(c.timeout, Duration::from_secs(30));
    assert_eq!(c.max_connections, DEFAULT_MAX_CONNECTIONS);

    let o = parse(r#"{"url":"http://localhost/","rate":100,"requests":10,"threads":4}"#)
        .expect("valid");
    assert_eq!(o.model, Model::Open);
    assert_eq!(o.target.port, 80);
    assert_eq!(o.target.authority, "localhost");
    assert_eq!(o.threads, 4);
    assert_eq!(o.duration, None);

    let s = parse(r#"{"url":"http://[::1]:9/","stages":[{"duration_s":1,"target":10},{"duration_s":2,"target":0}],"open":true}"#)
        .expect("valid");
    assert_eq!(s.model, Model::Open);
    assert_eq!(s.duration, Some(Duration::from_secs(3)));

    let few =
        parse(r#"{"url":"http://h/","connections":2,"threads":8,"duration_s":1}"#).expect("valid");
    assert_eq!(few.threads, 2, "no more threads than VUs");

    let tls = parse(r#"{"url":"https://example.test/x","duration_s":1}"#).expect("valid");
    assert!(tls.target.https && tls.tls.is_some());
    assert_eq!(tls.target.port, 443);
    assert!(c.tls.is_none(), "plain http has no TLS settings");

    let nothing = parse(r#"{"url":"http://h/"}"#).expect("valid: every limit has a default");
    assert_eq!(
        nothing.duration,
        Some(Duration::from_secs_f64(DEFAULT_DURATION_S))
    );
    assert_eq!(nothing.profile.peak(), DEFAULT_CONNECTIONS as f64);
    let token = parse(r#"{"url":"http://h/","method":"m-search"}"#).expect("valid method");
    assert_eq!(token.method, "M-SEARCH");
    let ahead = parse(r#"{"url":"http://h/","rate":10,"send_ahead_s":0}"#).expect("no send-ahead");
    assert_eq!(ahead.send_ahead, Duration::ZERO);
    let ahead = parse(r#"{"url":"http://h/","rate":10,"send_ahead_s":0.01}"#).expect("the most");
    assert_eq!(ahead.send_ahead, Duration::from_millis(10));
    let floor = parse(r#"{"url":"http://h/","interval_s":0.05}"#).expect("interval floor");
    assert_eq!(floor.interval, Duration::from_millis(50));

    let body = parse(r#"{"url":"http://h/","method":"post","body_b64":"aGk=","duration_s":1}"#)
        .expect("valid");
    assert_eq!(
        (body.method.as_str(), body.body.as_slice()),
        ("POST", b"hi".as_slice())
    );
}

#[test]
// long: a table of cases, one bad config and its one-line error each.
fn rejects_bad_configs_with_one_line() {
    let cases = [
        (
            "unknown field",
            r#"{"url":"http://h/","duration_s":1,"bogus":1}"#,
            "unknown field",
        ),
        (
            "bad url",
            r#"{"url":"not a url","duration_s":1}"#,
            "bad URL",
        ),
        (
            "missing cacert",
            r#"{"url":"https://h/","duration_s":1,"ca_file":"/nonexistent/ca.pem"}"#,
            "cacert \"/nonexistent/ca.pem\"",
        ),
        (
            "ftp",
            r#"{"url":"ftp://h/","duration_s":1}"#,
            "unsupported scheme",
        ),
        (
            "zero rate",
            r#"{"url":"http://h/","rate":0,"duration_s":1}"#,
            "rate must be > 0 requests per second, got 0",
        ),
        (
            "negative rate",
            r#"{"url":"http://h/","rate":-5,"duration_s":1}"#,
            "rate must be > 0 requests per second, got -5",
        ),
        (
            "zero connections",
            r#"{"url":"http://h/","connections":0,"duration_s":1}"#,
            "connections must be > 0, got 0",
        ),
        (
            "negative connections",
            r#"{"url":"http://h/","connections":-3}"#,
            "connections must be > 0, got -3",
        ),
        (
            "a million and one connections",
            r#"{"url":"http://h/","connections":1000001}"#,
            "connections must be at most 1000000",
        ),
        (
            "port 0",
            r#"{"url":"http://h:0/"}"#,
            "port 0 is not a destination",
        ),
        (
            "interval under the floor",
            r#"{"url":"http://h/","interval_s":0.01}"#,
            "interval must be at least 50ms, got 10ms",
        ),
        (
            "wrong type",
            r#"{"url":"http://h/","rate":"fast"}"#,
            "bad run config: invalid type: string \"fast\", expected f64",
        ),
        (
            "both limits",
            r#"{"url":"http://h/","duration_s":1,"requests":5}"#,
            "not both",
        ),
        (
            "zero requests",
            r#"{"url":"http://h/","requests":0}"#,
            "requests must be > 0, got 0",
        ),
        (
            "negative duration",
            r#"{"url":"http://h/","duration_s":-1}"#,
            "duration must be > 0 s, got -1",
        ),
        (
            "empty stages",
            r#"{"url":"http://h/","stages":[]}"#,
            "stages must not be empty",
        ),
        (
            "bad stage",
            r#"{"url":"http://h/","stages":[{"duration_s":0,"target":5}]}"#,
            "stage 1: duration",
        ),
        (
            "all-zero stages",
            r#"{"url":"http://h/","stages":[{"duration_s":1,"target":0}]}"#,
            "at least one target",
        ),
        (
            "stages and duration",
            r#"{"url":"http://h/","duration_s":1,"stages":[{"duration_s":1,"target":5}]}"#,
            "stages set the duration",
        ),
        (
            "rate and stages",
            r#"{"url":"http://h/","rate":5,"stages":[{"duration_s":1,"target":5}]}"#,
            "either rate or stages",
        ),
        (
            "open without rate",
            r#"{"url":"http://h/","open":true,"duration_s":1}"#,
            "needs a rate",
        ),
        (
            "zero threads",
            r#"{"url":"http://h/","threads":0,"duration_s":1}"#,
            "threads must be > 0, got 0",
        ),
        (
            "zero timeout",
            r#"{"url":"http://h/","timeout_s":0,"duration_s":1}"#,
            "timeout must be > 0 s, got 0",
        ),
        (
            "warmup too long",
            r#"{"url":"http://h/","warmup_s":2,"duration_s":1}"#,
            "warmup",
        ),
        (
            "bad header",
            r#"{"url":"http://h/","headers":[["X A","1"]],"duration_s":1}"#,
            "bad header name",
        ),
        (
            "header injection",
            r#"{"url":"http://h/","headers":[["X","1\r\nY: 2"]],"duration_s":1}"#,
            "no line breaks",
        ),
        (
            "bad body",
            r#"{"url":"http://h/","body_b64":"!!","duration_s":1}"#,
            "base64",
        ),
        (
            "bad method",
            r#"{"url":"http://h/","method":"GE T","duration_s":1}"#,
            "bad HTTP method",
        ),
        (
            "huge warmup",
            r#"{"url":"http://h/","warmup_s":1e300,"requests":1}"#,
            "warmup must be >= 0 s",
        ),
        (
            "negative warmup",
            r#"{"url":"http://h/","warmup_s":-1,"requests":1}"#,
            "warmup must be >= 0 s",
        ),
        (
            "negative send-ahead",
            r#"{"url":"http://h/","rate":10,"send_ahead_s":-0.001}"#,
            "send_ahead must be from 0 to 10ms, got -1ms",
        ),
        (
            "send-ahead past 10 ms",
            r#"{"url":"http://h/","rate":10,"send_ahead_s":0.02}"#,
            "send_ahead must be from 0 to 10ms, got 20ms",
        ),
        (
            "huge stage",
            r#"{"url":"http://h/","stages":[{"duration_s":1e300,"target":5}]}"#,
            "stage 1: duration",
        ),
        (
            "huge duration",
            r#"{"url":"http://h/","duration_s":1e300}"#,
            "duration must be > 0 s",
        ),
        (
            "zero pool",
            r#"{"url":"http://h/","rate":1,"max_connections":0,"duration_s":1}"#,
            "max_connections must be > 0, got 0",
        ),
        (
            "negative start instant",
            r#"{"url":"http://h/","start_at_unix_s":-1}"#,
            "start_at_unix_s must be a Unix time in seconds, got -1",
        ),
        (
            "start instant in milliseconds",
            r#"{"url":"http://h/","start_at_unix_s":1.7e12}"#,
            "ahead of this machine's clock",
        ),
    ];
    for (label, json, want) in cases {
        match parse(json) {
            Ok(_) => panic!("{label}: accepted"),
            Err(e) => {
                let msg = e.to_string();
                assert!(matches!(e, EngineError::Config(_)), "{label}: {e:?}");
                assert!(msg.contains(want), "{label}: {msg:?} lacks {want:?}");
                assert!(!msg.contains('\n'), "{label}: not one line: {msg:?}");
                assert!(
                    !msg.contains(" at line "),
                    "{label}: JSON position: {msg:?}"
                );
            }
        }
    }
}

#[test]
fn start_instant_is_a_wall_clock_time_within_the_hour() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64();
    let cases = [
        ("soon", now + 2.0, true),
        ("past: starts at once", now - 60.0, true),
        ("59 minutes ahead", now + 3540.0, true),
        ("two hours ahead", now + 7200.0, false),
    ];
    for (label, at, ok) in cases {
        let json = format!(r#"{{"url":"http://h/","start_at_unix_s":{at}}}"#);
        match parse(&json) {
            Ok(c) => {
                assert!(ok, "{label}: accepted");
                let got = c
                    .start_at
                    .expect("start instant kept")
                    .duration_since(UNIX_EPOCH)
                    .expect("after 1970")
                    .as_secs_f64();
                assert!((got - at).abs() < 1e-6, "{label}: {got} != {at}");
            }
            Err(e) => assert!(!ok, "{label}: refused: {e}"),
        }
    }
    assert!(parse(r#"{"url":"http://h/"}"#)
        .expect("valid")
        .start_at
        .is_none());
}

#[test]
fn a_grpc_run_is_a_url_run_over_http2() {
    let ok = parse(r#"{"url":"http://h/p.S/M","grpc":true,"http2":true}"#).expect("valid");
    assert!(ok.grpc);
    assert!(!parse(r#"{"url":"http://h/"}"#).expect("valid").grpc);
    for (json, want) in [
        (
            r#"{"url":"http://h/p.S/M","grpc":true}"#,
            "grpc needs HTTP/2",
        ),
        (
            r#"{"url":"http://h/p.S/M","grpc":true,"http2":false}"#,
            "grpc needs HTTP/2",
        ),
        (
            r#"{"url":"http://h/","grpc":true,"http2":true,"plan":{}}"#,
            "a scenario does not make gRPC calls",
        ),
    ] {
        let err = parse(json).expect_err(json).to_string();
        assert!(err.contains(want), "{json}: {err}");
    }
}

//! HTTP/2 runs against the bundled target (h2c with prior knowledge, and TLS with ALPN `h2`):
//! what redline reported is compared with what the server counted, the books balance per
//! stream, and the server's HTTP/2 faults (GOAWAY, RST_STREAM, a window that never opens) are
//! counted, not crashes or hangs. Every run is bounded by a count or a short duration.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::certs::{self_signed, TempDir};
use redline_engine::{run, Report, RunConfig, RunControl};
use redline_target::{H2Faults, Target, TargetConfig};
use serde_json::json;

fn go(cfg: RunConfig) -> Report {
    run(cfg, Arc::new(RunControl::new()), &mut |_| {}).expect("run succeeds")
}

fn target(cfg: TargetConfig) -> Target {
    Target::start(TargetConfig {
        threads: Some(1),
        ..cfg
    })
    .expect("target starts")
}

fn h2c(t: &Target, path: &str) -> RunConfig {
    RunConfig {
        url: format!("{}{path}", t.url()),
        http2: Some(true),
        threads: Some(2),
        interval_s: 0.25,
        ..RunConfig::default()
    }
}

fn assert_books(r: &Report, label: &str) {
    let transport = r.errors_total - r.errors.status - r.errors.check;
    assert_eq!(
        r.requests + transport + r.unfinished + r.unsent,
        r.intended,
        "{label}: requests {} + transport {transport} + unfinished {} + unsent {} != intended {}",
        r.requests,
        r.unfinished,
        r.unsent,
        r.intended
    );
}

#[test]
fn h2c_and_tls_counts_match_what_the_server_saw() {
    let dir = TempDir::new("h2");
    let cert = self_signed(&dir.0, "server");
    let plain = target(TargetConfig::default());
    let tls = target(TargetConfig {
        tls: Some(cert.clone()),
        http2: true,
        ..TargetConfig::default()
    });
    let https = RunConfig {
        url: format!("https://127.0.0.1:{}/h2?size=3000", tls.local_addr().port()),
        // Left to the server: its ALPN chooses h2.
        http2: None,
        ca_file: Some(cert.cert.display().to_string()),
        ..h2c(&tls, "")
    };
    let cases: [(&str, &Target, RunConfig); 3] = [
        (
            "h2c closed",
            &plain,
            RunConfig {
                connections: 2,
                streams: Some(8),
                requests: Some(2000),
                ..h2c(&plain, "/h2?size=100")
            },
        ),
        (
            "tls by ALPN, closed",
            &tls,
            RunConfig {
                connections: 2,
                streams: Some(4),
                requests: Some(1000),
                ..https
            },
        ),
        (
            "h2c open",
            &plain,
            RunConfig {
                rate: Some(400.0),
                duration_s: Some(1.0),
                max_connections: Some(2),
                streams: Some(4),
                ..h2c(&plain, "/h2")
            },
        ),
    ];
    for (label, server, cfg) in cases {
        let want = cfg.requests;
        let before = server.stats().requests;
        let r = go(cfg);
        assert_eq!(r.protocol, "h2", "{label}");
        assert_eq!(r.errors_total, 0, "{label}: {:?}", r.errors);
        if let Some(n) = want {
            assert_eq!(r.requests, n as u64, "{label}");
            assert_eq!(r.connections, 2, "{label}: connections, not streams");
        } else {
            assert!(r.requests >= 350, "{label}: {}", r.requests);
        }
        assert_eq!(
            server.stats().requests - before,
            r.requests,
            "{label}: the server saw each request once"
        );
        assert_books(&r, label);
    }
    let r = go(RunConfig {
        connections: 3,
        streams: Some(5),
        requests: Some(30),
        ..h2c(&plain, "/")
    });
    assert_eq!((r.connections, r.streams), (3, 5), "connections × streams");
}

#[test]
fn a_scenario_runs_over_h2_unchanged() {
    let server = target(TargetConfig::default());
    let plan = json!({"file": "h2.py", "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "submit", "method": "POST", "path": ["/tasks/submissions"],
         "body": {"type": "json", "template": ["{\"type\": \"factorial\"}"]},
         "checks": [{"check": "status", "in": [202]}],
         "extract": [{"from": "json", "var": "id", "path": ["id"], "text": "$.id"}]},
        {"step": "poll", "interval_s": 0.005, "timeout_s": 5.0, "request":
            {"name": "status", "method": "GET", "path": ["/tasks/submissions/", {"var": "id"}]},
         "until": [{"check": "json", "path": ["status"], "op": "in", "values": ["SUCCEEDED", "FAILED"], "text": "$.status"}]},
        {"step": "request", "name": "result", "method": "GET", "path": ["/tasks/", {"var": "id"}],
         "checks": [{"check": "status", "in": [200]}]},
        {"step": "request", "name": "form", "method": "GET", "path": ["/form"]},
        {"step": "request", "name": "post", "method": "POST", "path": ["/form"], "follow_redirects": true,
         "body": {"type": "form", "fields": [["name", ["ann"]], ["rating", ["5"]]]},
         "checks": [{"check": "status", "in": [200]}, {"check": "contains", "text": "hank"}]}
    ]}]});
    let before = server.stats();
    let r = go(RunConfig {
        connections: 2,
        streams: Some(3),
        requests: Some(30),
        plan: Some(plan),
        ..h2c(&server, "/")
    });
    let after = server.stats();
    assert_eq!(r.protocol, "h2");
    assert_eq!(r.errors_total, 0, "{:?} {:?}", r.errors, r.per_name);
    assert_eq!(after.requests - before.requests, r.requests);
    // Each iteration: submit, >= 1 poll, result, form, post and its redirect.
    assert!(r.requests >= 30 * 6, "{}", r.requests);
    assert_eq!(r.per_name["submit"].requests, 30);
    assert_eq!(
        r.per_name["post"].requests, 30,
        "the cookie came back: posted"
    );
    assert_books(&r, "scenario");
}

#[test]
fn goaway_and_rst_stream_are_counted_not_crashes() {
    let server = target(TargetConfig {
        h2_faults: H2Faults {
            goaway_after: Some(40),
            window: None,
        },
        ..TargetConfig::default()
    });
    let before = server.stats().requests;
    let r = go(RunConfig {
        connections: 2,
        streams: Some(8),
        requests: Some(1000),
        timeout_s: 5.0,
        ..h2c(&server, "/?latency=1ms")
    });
    assert!(r.errors.goaway > 0, "GOAWAY cut requests: {:?}", r.errors);
    assert!(r.requests > 0 && r.requests < 1000, "{}", r.requests);
    assert!(
        r.connects > 2,
        "reconnected after each GOAWAY: {}",
        r.connects
    );
    // The server counts on arrival: the cut requests it had received count there too.
    assert!(server.stats().requests - before >= r.requests);
    assert_books(&r, "goaway");

    let reset = target(TargetConfig::default());
    let r = go(RunConfig {
        connections: 1,
        streams: Some(4),
        requests: Some(100),
        ..h2c(&reset, "/?reset=1")
    });
    assert_eq!(r.errors.rst_stream, 100, "{:?}", r.errors);
    assert_eq!(r.requests, 0);
    assert_eq!(reset.stats().requests, 100, "the server saw each");
    assert_books(&r, "rst_stream");
}

#[test]
fn a_window_that_never_opens_ends_as_unfinished_without_a_hang() {
    let server = target(TargetConfig {
        h2_faults: H2Faults {
            goaway_after: None,
            window: Some(0),
        },
        ..TargetConfig::default()
    });
    let t0 = Instant::now();
    let r = go(RunConfig {
        method: "POST".to_string(),
        body_b64: Some("aGVsbG8=".to_string()),
        connections: 2,
        streams: Some(3),
        duration_s: Some(0.5),
        timeout_s: 60.0,
        ..h2c(&server, "/")
    });
    let took = t0.elapsed();
    // A stream's first body may leave under the default window, before the server's
    // SETTINGS (window 0) arrive; after that none can.
    assert!(r.requests <= 6, "{}", r.requests);
    assert_eq!(r.unfinished, 6, "every stream's request cut off at the end");
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
    assert_eq!(
        server.stats().requests,
        r.requests,
        "the server got no other body"
    );
    assert_books(&r, "closed window");
    assert!(
        took < Duration::from_secs(10),
        "ended after the grace period, not the 60 s timeout: {took:?}"
    );
}

/// trailer_server answers every request on 127.0.0.1 with a head, `body` in one DATA frame
/// and then trailers (the END_STREAM on those), through h2's server; it runs until the test
/// process ends. Returns its URL.
fn trailer_server(body: &'static [u8]) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(tcp).await else {
                        return;
                    };
                    while let Some(Ok((_req, mut respond))) = conn.accept().await {
                        let head = http::Response::builder().status(200).body(()).unwrap();
                        let Ok(mut out) = respond.send_response(head, false) else {
                            continue;
                        };
                        let _ = out.send_data(bytes::Bytes::from_static(body), false);
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                        let _ = out.send_trailers(trailers);
                    }
                });
            }
        });
    });
    url
}

#[test]
fn a_response_that_ends_with_trailers_is_one_answer() {
    let url = trailer_server(b"hello");
    let r = go(RunConfig {
        url,
        http2: Some(true),
        threads: Some(1),
        connections: 2,
        streams: Some(4),
        requests: Some(200),
        timeout_s: 5.0,
        interval_s: 0.25,
        ..RunConfig::default()
    });
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
    assert_eq!((r.requests, r.unfinished), (200, 0));
    // Each answer's frames, 9 bytes of header each: its head (`:status: 200`, one byte of
    // HPACK), its 5 body bytes, its trailers (`grpc-status: 0`, one byte once indexed). Each
    // connection adds its SETTINGS and their acks, and its first trailers' literal.
    let frames = 200 * ((9 + 1) + (9 + 5) + (9 + 1));
    assert!(
        (frames..frames + 2 * 150).contains(&r.bytes_in),
        "{} against {frames}",
        r.bytes_in
    );
    assert_books(&r, "trailers");
}

#[test]
fn long_bodies_are_read_whole_while_their_window_goes_back_in_bulk() {
    // 3 MB each, 3 times what a stream reads before it hands the window it used back to h2
    // (http2.rs's RELEASE_AT): 8 streams read 72 MB on one connection, every byte counted.
    let server = target(TargetConfig::default());
    let size = 3_000_000u64;
    let r = go(RunConfig {
        connections: 1,
        streams: Some(8),
        requests: Some(24),
        threads: Some(1),
        timeout_s: 20.0,
        ..h2c(&server, &format!("/h2?size={size}"))
    });
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
    assert_eq!(r.requests, 24);
    // The payload, and its DATA frames' 9-byte headers (a frame of up to 16 KB: under 1 %).
    assert!(
        r.bytes_in > 24 * size && r.bytes_in < 24 * size * 101 / 100,
        "{}",
        r.bytes_in
    );
    assert_books(&r, "long bodies");
}

#[test]
fn streamed_answers_are_timed_frame_by_frame() {
    // The SSE probe (first event at 60 ms, then one every 15 ms) over h2c and over TLS, whose
    // server chooses h2 by ALPN: each DATA frame is an event, timed as it is read. The
    // bounds leave a busy machine's wake-ups: a buffered stream (all events at its end)
    // would read gaps of ~0 and a first byte of 60 + 9 × 15 ms.
    let dir = TempDir::new("h2-stream");
    let cert = self_signed(&dir.0, "server");
    let plain = target(TargetConfig::default());
    let tls = target(TargetConfig {
        tls: Some(cert.clone()),
        http2: true,
        ..TargetConfig::default()
    });
    let path = "/sse?first=60ms&every=15ms&events=10";
    let https = RunConfig {
        url: format!("https://127.0.0.1:{}{path}", tls.local_addr().port()),
        http2: None,
        ca_file: Some(cert.cert.display().to_string()),
        ..h2c(&tls, "")
    };
    for (label, server, cfg) in [("h2c", &plain, h2c(&plain, path)), ("tls", &tls, https)] {
        let before = server.stats().stream_events;
        let r = go(RunConfig {
            connections: 1,
            streams: Some(2),
            requests: Some(6),
            stream: true,
            ..cfg
        });
        assert_eq!(r.protocol, "h2", "{label}");
        assert_eq!((r.requests, r.errors_total), (6, 0), "{label}");
        let s = r.stream.expect("stream figures");
        assert_eq!(s.stream.counts.events, 60, "{label}");
        assert_eq!(server.stats().stream_events - before, 60, "{label}");
        assert_eq!(
            (s.stream.counts.responses, s.stream.counts.chunks),
            (6, 60),
            "{label}"
        );
        assert!(
            s.first_byte_ms.min >= 60.0 * 0.999,
            "{label}: {:?}",
            s.first_byte_ms
        );
        assert!(
            s.first_byte_ms.p50 < 60.0 + 5.0 * 15.0,
            "{label}: {:?}",
            s.first_byte_ms
        );
        assert!(
            (10.0..20.0).contains(&s.chunk_gap_ms.p50),
            "{label}: {:?}",
            s.chunk_gap_ms
        );
    }
}

/// Relay is a TCP relay in front of a server that counts the bytes it carries each way: the
/// truth a run's `bytes_out` and `bytes_in` are held to. It runs until the test process ends.
struct Relay {
    addr: std::net::SocketAddr,
    /// up and down: bytes carried to the server and back.
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
    /// open: the directions still carrying (two a connection).
    open: Arc<AtomicU64>,
}

impl Relay {
    /// to starts a relay to the server at `upstream`.
    fn to(upstream: std::net::SocketAddr) -> Relay {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let counts = [(); 3].map(|()| Arc::new(AtomicU64::new(0)));
        let [up, down, open] = counts.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = std::net::TcpStream::connect(upstream) else {
                    return;
                };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let (c2, s2) = (client.try_clone(), server.try_clone());
                let (Ok(c2), Ok(s2)) = (c2, s2) else { return };
                open.fetch_add(2, Ordering::SeqCst);
                for (from, into, n) in [(client, s2, up.clone()), (server, c2, down.clone())] {
                    let open = open.clone();
                    std::thread::spawn(move || carry(from, into, &n, &open));
                }
            }
        });
        let [up, down, open] = counts;
        Relay {
            addr,
            up,
            down,
            open,
        }
    }

    /// settled are the bytes carried up and down, once the client has closed its connections
    /// and the server its answers (or 10 s have passed).
    fn settled(&self) -> (u64, u64) {
        let t0 = Instant::now();
        while self.open.load(Ordering::SeqCst) > 0 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        (
            self.up.load(Ordering::SeqCst),
            self.down.load(Ordering::SeqCst),
        )
    }
}

/// carry copies `from` into `into`, counting into `n`, until `from` ends; then it ends the
/// other side's writing, as `from` did.
fn carry(
    mut from: std::net::TcpStream,
    mut into: std::net::TcpStream,
    n: &AtomicU64,
    open: &AtomicU64,
) {
    use std::io::{Read, Write};
    let mut buf = [0u8; 16 << 10];
    while let Ok(got) = from.read(&mut buf) {
        if got == 0 || into.write_all(&buf[..got]).is_err() {
            break;
        }
        n.fetch_add(got as u64, Ordering::SeqCst);
    }
    let _ = into.shutdown(std::net::Shutdown::Write);
    open.fetch_sub(1, Ordering::SeqCst);
}

#[test]
fn bytes_out_and_in_are_what_the_wire_carried() {
    // HTTP/1.1 counts its text exactly. HTTP/2 counts its frames as h2 wrote and read them,
    // so a run's sums are the connection's bytes less what it carried after its last answer
    // ended (its close's frames: 67 and 35 bytes for two connections here), not the requests'
    // HTTP/1.1 text as before (31,200 bytes out for 400 GETs whose frames took 9,845).
    let server = target(TargetConfig::default());
    let relay = Relay::to(server.local_addr());
    let body = "aGVsbG8gd29ybGQ=".to_string(); // "hello world"
    let cases = [
        ("http/1.1 GET", false, "GET", None),
        ("http/1.1 POST", false, "POST", Some(body.clone())),
        ("h2c GET", true, "GET", None),
        ("h2c POST", true, "POST", Some(body)),
    ];
    for (label, h2, method, body_b64) in cases {
        let (up0, down0) = relay.settled();
        let r = go(RunConfig {
            url: format!("http://{}/x?size=100", relay.addr),
            http2: Some(h2),
            method: method.to_string(),
            body_b64,
            connections: 2,
            streams: h2.then_some(4),
            requests: Some(400),
            ..h2c(&server, "")
        });
        assert_eq!(
            (r.requests, r.errors_total),
            (400, 0),
            "{label}: {:?}",
            r.errors
        );
        let (up, down) = relay.settled();
        let (up, down) = (up - up0, down - down0);
        eprintln!(
            "{label}: bytes out {} (relay {up}), in {} (relay {down})",
            r.bytes_out, r.bytes_in
        );
        // Two connections' closing frames, HTTP/2's.
        let slack = if h2 { 2 * 60 } else { 0 };
        assert!(
            (up.saturating_sub(slack)..=up).contains(&r.bytes_out),
            "{label}: bytes out {} against the relay's {up}",
            r.bytes_out
        );
        assert!(
            (down.saturating_sub(slack)..=down).contains(&r.bytes_in),
            "{label}: bytes in {} against the relay's {down}",
            r.bytes_in
        );
        // Each answer brought its 100 bytes of payload, and its head and framing.
        assert!(r.bytes_in > 400 * 100, "{label}: {}", r.bytes_in);
    }
}

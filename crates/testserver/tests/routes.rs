//! Routes against a real server on 127.0.0.1:0: bodies, framing, injected statuses, 400s.

mod common;

use common::{start, Client};

#[test]
fn default_body_is_tiny() {
    let target = start(1);
    let resp = Client::connect(target.local_addr()).get("/anything");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, b"ok\n");
}

#[test]
fn size_sets_the_body_length() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    for size in [0usize, 1, 100, 16 * 1024, 100_000, 3_000_000] {
        let resp = client.get(&format!("/x?size={size}"));
        assert_eq!(resp.status, 200, "size {size}");
        assert_eq!(
            resp.header("content-length"),
            Some(size.to_string().as_str())
        );
        assert_eq!(resp.body.len(), size);
        assert!(resp.body.iter().all(|b| *b == b'x'), "size {size}: filler");
    }
}

#[test]
fn chunked_bodies_are_framed_as_chunks() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    for size in [0usize, 5, 16 * 1024, 40_000] {
        let resp = client.get(&format!("/x?size={size}&chunked=1"));
        assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
        assert_eq!(resp.header("content-length"), None);
        assert_eq!(resp.body.len(), size, "decoded size {size}");
        // The client decoded every chunk header; the wire carried more than the payload.
        assert!(
            resp.raw_body.ends_with(b"0\r\n\r\n"),
            "last chunk, size {size}"
        );
        assert!(resp.raw_body.len() > size, "framing present, size {size}");
    }
    // The connection is still usable after chunked responses.
    assert_eq!(client.get("/").body, b"ok\n");
}

#[test]
fn head_requests_get_no_body() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    client.send_raw(b"HEAD /x?size=50 HTTP/1.1\r\n\r\nGET /x?size=2 HTTP/1.1\r\n\r\n");
    let mut raw = Vec::new();
    while !raw.ends_with(b"xx") {
        let mut chunk = [0u8; 1024];
        let n = std::io::Read::read(&mut client.stream, &mut chunk).expect("read");
        assert!(n > 0, "server closed");
        raw.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8(raw).expect("ascii");
    assert!(
        text.starts_with("HTTP/1.1 200 OK\r\ncontent-length: 50\r\n"),
        "{text}"
    );
    assert_eq!(text.matches("HTTP/1.1 200").count(), 2, "{text}");
    assert!(!text.contains("xxx"), "HEAD carried a body: {text}");
}

/// bounds is the 5-sigma interval of a Binomial(n, p) count: failing by chance is ~1e-6.
fn bounds(n: u64, p: f64) -> (u64, u64) {
    let mean = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    (
        (mean - 5.0 * sd).max(0.0) as u64,
        (mean + 5.0 * sd).ceil() as u64,
    )
}

fn count_statuses(target_path: &str, n: u64) -> std::collections::HashMap<u16, u64> {
    let target = start(2);
    let mut client = Client::connect(target.local_addr());
    let mut counts = std::collections::HashMap::new();
    for _ in 0..n {
        *counts.entry(client.get(target_path).status).or_insert(0) += 1;
    }
    assert_eq!(target.stats().requests, n, "server counted every request");
    counts
}

#[test]
fn status_injection_rate_is_p() {
    let n = 2000;
    let counts = count_statuses("/x?status=500&p=0.1", n);
    let (low, high) = bounds(n, 0.1);
    let got = counts.get(&500).copied().unwrap_or(0);
    assert!(
        (low..=high).contains(&got),
        "500s {got} not in [{low}, {high}]"
    );
    assert_eq!(got + counts.get(&200).copied().unwrap_or(0), n);

    assert_eq!(count_statuses("/x?status=503", 50).get(&503), Some(&50));
    assert_eq!(count_statuses("/x?status=503&p=0", 50).get(&200), Some(&50));
}

#[test]
fn work_route_is_a_flaky_upstream() {
    let n = 2000;
    let counts = count_statuses("/api/work?latency=0ms", n);
    for code in [500, 429] {
        let (low, high) = bounds(n, 0.05);
        let got = counts.get(&code).copied().unwrap_or(0);
        assert!(
            (low..=high).contains(&got),
            "{code}s {got} not in [{low}, {high}]"
        );
    }
    let target = start(1);
    let resp = Client::connect(target.local_addr()).get("/api/work?p500=0&p429=0&latency=30ms");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(resp.text(), "{\"time\": 30}\n");
}

#[test]
fn bad_parameters_get_400_with_a_reason() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    let cases = [
        ("/x?size=lots", "bad size"),
        ("/x?latency=20", "missing unit"),
        ("/x?latency=weibull:3ms", "unknown kind"),
        ("/x?status=700", "bad status"),
        ("/x?status=500&p=2", "bad p"),
        ("/x?stall=2s/1s", "bad stall"),
        ("/x?reset=yes", "bad reset"),
    ];
    for (path, want) in cases {
        let resp = client.get(path);
        assert_eq!(resp.status, 400, "{path}");
        let text = resp.text();
        assert!(text.contains(want), "{path}: {text}");
        assert_eq!(text.lines().count(), 1, "{path}: one line");
    }
    // A bad query is the client's mistake, not the connection's: it stays open.
    assert_eq!(client.get("/").status, 200);
}

#[test]
fn request_bodies_are_skipped() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    let body = vec![b'b'; 200_000];
    let head = format!("POST /x HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len());
    client.send_raw(head.as_bytes());
    client.send_raw(&body);
    assert_eq!(client.read_response().expect("response").status, 200);
    client.send_raw(
        b"POST /x?size=4 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n",
    );
    assert_eq!(client.read_response().expect("response").body, b"xxxx");
    assert_eq!(client.get("/").body, b"ok\n");
    assert_eq!(target.stats().requests, 3);
}

#[test]
fn malformed_requests_get_400_and_close() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    client.send_raw(b"BLAH\x01\x02 / HTTP/1.1\r\n\r\n");
    let resp = client.read_response().expect("response");
    assert_eq!(resp.status, 400);
    assert_eq!(resp.header("connection"), Some("close"));
    assert!(client.at_eof());
}

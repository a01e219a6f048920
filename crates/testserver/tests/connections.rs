//! Connection handling against a real server: keep-alive, pipelining, counters, close, reset,
//! hang, stop, and start-up errors.

mod common;

use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{start, Client};
use redline_target::{Target, TargetConfig, TargetError};

#[test]
fn keep_alive_and_pipelining() {
    let target = start(2);
    let mut client = Client::connect(target.local_addr());
    for _ in 0..20 {
        assert_eq!(client.get("/").status, 200);
    }
    let mut batch = Vec::new();
    for i in 0..50 {
        batch.extend_from_slice(format!("GET /p?size={i} HTTP/1.1\r\n\r\n").as_bytes());
    }
    client.send_raw(&batch);
    for i in 0..50 {
        let resp = client.read_response().expect("pipelined response");
        assert_eq!(resp.body.len(), i, "responses come back in order");
    }
    let stats = target.stats();
    assert_eq!((stats.requests, stats.connections), (70, 1));
}

#[test]
fn stats_count_what_clients_sent() {
    let target = start(2);
    let (connections, per_connection) = (7u64, 30u64);
    for _ in 0..connections {
        let mut client = Client::connect(target.local_addr());
        for _ in 0..per_connection {
            assert_eq!(client.get("/counted").status, 200);
        }
    }
    let mut probe = Client::connect(target.local_addr());
    let first = probe.get("/__stats");
    let second = probe.get("/__stats");
    assert_eq!(first.header("content-type"), Some("application/json"));
    let want = format!(
        "{{\"requests\": {}, \"connections\": {}, ",
        connections * per_connection,
        connections + 1
    );
    assert!(first.text().starts_with(&want), "{}", first.text());
    assert!(first.text().ends_with("}\n"), "{}", first.text());
    assert_eq!(
        second.text(),
        first.text(),
        "/__stats does not count itself"
    );
    let stats = target.stats();
    assert_eq!(stats.requests, connections * per_connection);
    assert_eq!(stats.connections, connections + 1);
}

#[test]
fn close_answers_then_closes() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    let resp = client.get("/x?close=1");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("connection"), Some("close"));
    assert!(client.at_eof(), "server closed after answering");

    let mut client = Client::connect(target.local_addr());
    client.send_raw(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(client.read_response().expect("response").status, 200);
    assert!(client.at_eof(), "client's Connection: close honoured");

    let mut client = Client::connect(target.local_addr());
    client.send_raw(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(client.read_response().expect("response").status, 200);
    assert!(client.at_eof(), "HTTP/1.0 closes by default");
}

#[test]
fn reset_aborts_the_connection() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    client.send_get("/x?reset=1");
    let mut buf = [0u8; 256];
    let err = client
        .stream
        .read(&mut buf)
        .expect_err("no answer, a reset");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
    assert_eq!(target.stats().requests, 1, "the reset request was seen");
}

#[test]
fn hang_never_answers_until_the_client_leaves() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    client.send_get("/x?hang=1");
    client
        .stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let mut buf = [0u8; 256];
    let err = client.stream.read(&mut buf).expect_err("no answer");
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err}"
    );
    assert_eq!(target.stats().requests, 1);
    drop(client);
    // Stopping with a hung connection open must not wait for it.
    let mut other = Client::connect(target.local_addr());
    other.send_get("/x?hang=1");
    assert!(
        common::wait_until(Duration::from_secs(5), || target.stats().requests == 2),
        "second hang request seen"
    );
    let stopping = Instant::now();
    target.stop();
    assert!(
        stopping.elapsed() < Duration::from_secs(1),
        "stop took {:?}",
        stopping.elapsed()
    );
    assert!(other.at_eof(), "hung connection closed by stop");
}

#[test]
fn stop_closes_the_port() {
    let target = start(2);
    let addr = target.local_addr();
    assert_eq!(Client::connect(addr).get("/").status, 200);
    let mut delayed = Client::connect(addr);
    delayed.send_get("/x?latency=30s");
    assert!(
        common::wait_until(Duration::from_secs(5), || target.stats().requests == 2),
        "delayed request seen"
    );
    let stopping = Instant::now();
    target.stop();
    assert!(stopping.elapsed() < Duration::from_millis(500));
    let refused = TcpStream::connect(addr).expect_err("nothing listens after stop");
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
    assert!(delayed.at_eof(), "delayed connection closed by stop");
}

#[test]
fn url_and_addr_agree() {
    let target = start(1);
    assert!(target.local_addr().port() != 0);
    assert_eq!(
        target.url(),
        format!("http://127.0.0.1:{}", target.local_addr().port())
    );
}

#[test]
fn threads_share_one_port_and_the_load() {
    let target = start(4);
    let clients: Vec<Client> = (0..32)
        .map(|_| Client::connect(target.local_addr()))
        .collect();
    for mut client in clients {
        assert_eq!(client.get("/").status, 200);
    }
    assert_eq!(target.stats().connections, 32);
}

#[test]
fn start_errors_are_one_line() {
    let taken = start(1);
    let busy = Target::start(TargetConfig {
        port: taken.local_addr().port(),
        threads: Some(2),
        ..TargetConfig::default()
    })
    .expect_err("port is taken");
    assert!(matches!(busy, TargetError::Bind { .. }), "{busy:?}");
    let text = busy.to_string();
    assert!(text.starts_with("cannot bind 127.0.0.1:"), "{text}");
    assert!(text.contains("in use"), "{text}");
    assert!(!text.contains('\n') && !text.contains("os error"), "{text}");

    let zero = Target::start(TargetConfig {
        threads: Some(0),
        ..TargetConfig::default()
    })
    .expect_err("zero threads");
    assert_eq!(
        zero.to_string(),
        "threads must be between 1 and 1024, got 0"
    );

    let unknown = Target::start(TargetConfig {
        host: "no such host.invalid".to_string(),
        ..TargetConfig::default()
    })
    .expect_err("bad host");
    assert!(unknown
        .to_string()
        .starts_with("cannot resolve host no such host.invalid: "));
    let no_cert = Target::start(TargetConfig {
        tls: Some(redline_target::TlsFiles {
            cert: "/nonexistent/cert.pem".into(),
            key: "/nonexistent/key.pem".into(),
        }),
        ..TargetConfig::default()
    })
    .expect_err("missing certificate");
    let text = no_cert.to_string();
    assert!(
        text.starts_with("TLS: certificate /nonexistent/cert.pem: "),
        "{text}"
    );
    assert!(!text.contains('\n'), "{text}");
}

#[test]
fn target_can_move_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Target>();
    assert_send_sync::<TargetError>();
}

#[test]
fn ipv6_loopback_is_served_where_available() {
    let Ok(target) = Target::start(TargetConfig {
        host: "::1".to_string(),
        threads: Some(1),
        ..TargetConfig::default()
    }) else {
        return; // no IPv6 on this host
    };
    assert!(
        target.url().starts_with("http://[::1]:"),
        "{}",
        target.url()
    );
    assert_eq!(Client::connect(target.local_addr()).get("/").status, 200);
}

#[test]
fn an_idle_timeout_closes_a_connection_that_waits_for_its_next_request() {
    let target = Target::start(TargetConfig {
        threads: Some(1),
        idle_timeout: Some(Duration::from_millis(50)),
        ..TargetConfig::default()
    })
    .expect("target starts");
    let mut client = Client::connect(target.local_addr());
    for _ in 0..5 {
        assert_eq!(
            client.get("/").status,
            200,
            "answered while it keeps asking"
        );
    }
    // The read blocks (READ_TIMEOUT at most) until the server's timeout closes the connection.
    assert!(client.at_eof(), "closed after 50 ms without a request");
    let stats = target.stats();
    assert_eq!((stats.requests, stats.idle_closed), (5, 1));

    let zero = Target::start(TargetConfig {
        idle_timeout: Some(Duration::ZERO),
        ..TargetConfig::default()
    })
    .expect_err("a zero idle timeout is refused");
    assert!(matches!(zero, TargetError::Idle(_)), "{zero:?}");
}

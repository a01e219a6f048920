//! End to end: responses with many headers count as successes, and a head over the size
//! bound as protocol errors, against a server on 127.0.0.1:0 that counts what it answered.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use redline_engine::http::MAX_HEAD;
use redline_engine::{run, Report, RunConfig, RunControl};

/// serve answers every request head on 127.0.0.1:0 with `response`, one thread per
/// connection; it returns the URL and the count of requests answered.
fn serve(response: Vec<u8>) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    let answered = Arc::new(AtomicU64::new(0));
    let (response, count) = (Arc::new(response), answered.clone());
    std::thread::spawn(move || {
        for sock in listener.incoming().flatten() {
            let (response, count) = (response.clone(), count.clone());
            std::thread::spawn(move || answer(sock, &response, &count));
        }
    });
    (url, answered)
}

fn answer(mut sock: TcpStream, response: &[u8], count: &AtomicU64) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            count.fetch_add(1, Ordering::SeqCst);
            if sock.write_all(response).is_err() {
                return;
            }
        }
        match sock.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// response is a 200 with `cookies` Set-Cookie lines, one `X-Pad` header of `pad` bytes and
/// a two-byte body.
fn response(cookies: usize, pad: usize) -> Vec<u8> {
    let mut head = String::from("HTTP/1.1 200 OK\r\n");
    for i in 0..cookies {
        head.push_str(&format!(
            "Set-Cookie: session{i}=abcdef; Path=/; HttpOnly\r\n"
        ));
    }
    head.push_str(&format!("X-Pad: {}\r\n", "p".repeat(pad)));
    head.push_str("Content-Length: 2\r\n\r\nok");
    head.into_bytes()
}

fn go(url: String, requests: u32) -> Report {
    let cfg = RunConfig {
        url,
        connections: 2,
        threads: Some(1),
        requests: Some(requests.into()),
        timeout_s: 5.0,
        ..RunConfig::default()
    };
    run(cfg, Arc::new(RunControl::new()), &mut |_| {}).expect("run succeeds")
}

#[test]
fn a_response_with_200_set_cookie_lines_is_a_success() {
    let (url, answered) = serve(response(200, 1));
    let r = go(url, 50);
    assert_eq!((r.requests, r.errors_total), (50, 0), "{:?}", r.errors);
    assert_eq!(r.status_codes.get("200"), Some(&50));
    assert_eq!(
        answered.load(Ordering::SeqCst),
        50,
        "the server answered each once"
    );
}

#[test]
fn a_head_over_the_size_bound_is_a_protocol_error() {
    let (url, answered) = serve(response(0, MAX_HEAD));
    let r = go(url, 4);
    assert_eq!((r.requests, r.errors.protocol), (0, 4), "{:?}", r.errors);
    assert_eq!(answered.load(Ordering::SeqCst), 4);
}

//! HTTP/2 servers that break the protocol: a frame that is not allowed (DATA on stream 0), a
//! frame longer than the maximum frame size, a header block that does not decode, and a
//! flood of SETTINGS frames. Each is a raw TCP listener on 127.0.0.1 that speaks just enough
//! HTTP/2 to be that server (the test server answers through the `h2` crate, which will not
//! send a bad frame). The run must count each request as a transport failure or as
//! unfinished, never as an answer, balance its books, and end on its own clock: no panic, no
//! hang. Every listener stops with its test (a flag, and a bounded accept loop).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use redline_engine::{run, Report, RunConfig, RunControl};

/// PREFACE: what an HTTP/2 client sends first (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// frame is one HTTP/2 frame: a 9-byte header (length, type, flags, stream) and the payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// Misbehaviour: what the server writes after the client's preface and its own SETTINGS.
#[derive(Clone, Copy)]
enum Misbehaviour {
    /// DataOnStreamZero: a DATA frame on stream 0 (a connection error, PROTOCOL_ERROR).
    DataOnStreamZero,
    /// Oversized: a frame header announcing 16 MiB - 1, over the 16 KiB default maximum
    /// (FRAME_SIZE_ERROR), and then not the bytes it announced.
    Oversized,
    /// BadHeaderBlock: an answer to stream 1 whose header block is not valid HPACK
    /// (COMPRESSION_ERROR).
    BadHeaderBlock,
    /// SettingsFlood: 50,000 SETTINGS frames in a row, and never an answer.
    SettingsFlood,
}

/// BadServer accepts connections on 127.0.0.1 until dropped and misbehaves on each.
struct BadServer {
    url: String,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl BadServer {
    fn start(how: Misbehaviour) -> BadServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}/", listener.local_addr().expect("addr"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, done) = (accepted.clone(), stop.clone());
        let acceptor = thread::spawn(move || {
            // Bounded in time as well: a test that forgets to drop it still ends.
            let deadline = Instant::now() + Duration::from_secs(60);
            while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((conn, _)) => {
                        count.fetch_add(1, Ordering::Relaxed);
                        let done = done.clone();
                        thread::spawn(move || serve(conn, how, &done));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        BadServer {
            url,
            accepted,
            stop,
            acceptor: Some(acceptor),
        }
    }
}

impl Drop for BadServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
    }
}

/// serve plays the bad server on one connection, then reads what the client sends until it
/// closes (or 3 s pass, or the test ends), so the client is never blocked writing to it.
fn serve(mut conn: TcpStream, how: Misbehaviour, stop: &AtomicBool) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(100)));
    let mut preface = [0u8; 24];
    let started = Instant::now();
    let mut got = 0;
    while got < preface.len() && started.elapsed() < Duration::from_secs(3) {
        match conn.read(&mut preface[got..]) {
            Ok(0) => return,
            Ok(n) => got += n,
            Err(_) => continue,
        }
    }
    if &preface[..got] != PREFACE {
        return;
    }
    let mut out = frame(SETTINGS, 0, 0, &[]);
    match how {
        Misbehaviour::DataOnStreamZero => out.extend(frame(DATA, 0, 0, b"x")),
        Misbehaviour::Oversized => {
            out.extend_from_slice(&[0xff, 0xff, 0xff, DATA, 0, 0, 0, 0, 1]);
            out.extend_from_slice(&[0u8; 64]);
        }
        Misbehaviour::BadHeaderBlock => {
            // Let the request arrive first, so stream 1 exists when its answer comes.
            thread::sleep(Duration::from_millis(50));
            let block = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
            out.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1, &block));
        }
        Misbehaviour::SettingsFlood => {
            for _ in 0..50_000 {
                out.extend(frame(SETTINGS, 0, 0, &[]));
            }
        }
    }
    let writer = conn.try_clone().expect("clone");
    let flood = thread::spawn(move || {
        let mut w = writer;
        let _ = w.write_all(&out);
    });
    let mut sink = [0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(3) {
        match conn.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    let _ = conn.shutdown(std::net::Shutdown::Both);
    let _ = flood.join();
}

fn against(server: &BadServer, streams: i64) -> (Report, Duration) {
    let t0 = Instant::now();
    let r = run(
        RunConfig {
            url: server.url.clone(),
            http2: Some(true),
            threads: Some(1),
            connections: 2,
            streams: Some(streams),
            duration_s: Some(1.0),
            timeout_s: 2.0,
            interval_s: 0.25,
            ..RunConfig::default()
        },
        Arc::new(RunControl::new()),
        &mut |_| {},
    )
    .expect("the run itself succeeds: the server's faults are counted");
    (r, t0.elapsed())
}

/// assert_counted: nothing answered, every request a transport failure or unfinished, the
/// books balanced, and the run over within its second plus the 2 s timeout and a margin.
fn assert_counted(r: &Report, took: Duration, label: &str) {
    eprintln!(
        "{label}: intended {} errors {:?} unfinished {} unsent {} connects {} in {took:?}",
        r.intended, r.errors, r.unfinished, r.unsent, r.connects
    );
    assert_eq!(
        r.requests, 0,
        "{label}: a bad server answered nothing: {r:?}"
    );
    assert_eq!(
        r.errors.status + r.errors.check,
        0,
        "{label}: {:?}",
        r.errors
    );
    assert!(r.intended > 0, "{label}: requests were sent");
    assert_eq!(
        r.errors_total + r.unfinished + r.unsent,
        r.intended,
        "{label}: errors {} + unfinished {} + unsent {} != intended {}",
        r.errors_total,
        r.unfinished,
        r.unsent,
        r.intended
    );
    assert!(
        took < Duration::from_secs(8),
        "{label}: ended on its own clock, took {took:?}"
    );
}

#[test]
fn bad_frames_are_counted_as_failures_not_answers_or_crashes() {
    for (how, label) in [
        (Misbehaviour::DataOnStreamZero, "DATA on stream 0"),
        (Misbehaviour::Oversized, "a frame over the maximum size"),
        (
            Misbehaviour::BadHeaderBlock,
            "a header block that does not decode",
        ),
    ] {
        let server = BadServer::start(how);
        let (r, took) = against(&server, 4);
        assert_counted(&r, took, label);
        // Each connection the server broke failed its requests as protocol errors (h2's own
        // GOAWAY on seeing the bad frame, not the server's), and the lanes reconnected.
        assert!(r.errors_total > 0, "{label}: {:?}", r.errors);
        assert_eq!(r.errors.protocol, r.errors_total, "{label}: {:?}", r.errors);
        assert!(
            server.accepted.load(Ordering::Relaxed) >= 2,
            "{label}: both connections were made"
        );
    }
}

#[test]
fn a_settings_flood_ends_the_run_on_time_with_every_request_counted() {
    let server = BadServer::start(Misbehaviour::SettingsFlood);
    let (r, took) = against(&server, 4);
    assert_counted(&r, took, "SETTINGS flood");
    // The server never answers: the requests in flight (2 connections x 4 streams) time out
    // after the 2 s timeout (the client's memory under the flood is not measured here).
    assert_eq!(r.errors.timeout, r.errors_total, "{:?}", r.errors);
    assert!(r.errors_total >= 1, "{:?}", r.errors);
}

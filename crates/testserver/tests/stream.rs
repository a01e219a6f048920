//! Streamed answers against a real server: `/sse` and the OpenAI-compatible completions, their
//! pace (never early; late within a busy box's slack) and what `/__stats` counted.

mod common;

use std::time::{Duration, Instant};

use common::{start, Client, Response};

/// SLACK is how late a stream may end on a busy 2-core CI box.
const SLACK: Duration = Duration::from_millis(250);

fn post(client: &mut Client, path: &str, body: &str) -> Response {
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    client.send_raw(req.as_bytes());
    client.read_response().expect("response")
}

/// events splits an SSE body into its events (each ends with a blank line).
fn events(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8(body.to_vec()).expect("utf-8");
    assert!(text.ends_with("\n\n"), "{text:?}");
    text.split_terminator("\n\n").map(str::to_string).collect()
}

#[test]
fn sse_events_keep_their_pace_and_are_counted() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    let sent = Instant::now();
    let resp = client.get("/sse?first=100ms&every=20ms&events=5");
    let took = sent.elapsed();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    let got = events(&resp.body);
    assert_eq!(got.len(), 5);
    assert_eq!(got[4], "id: 4\ndata: {\"n\":4}");
    // Each event is its own chunk, then the last, empty one.
    let raw = String::from_utf8_lossy(&resp.raw_body).into_owned();
    assert_eq!(raw.matches("\n\n\r\n").count(), 5, "{raw:?}");
    assert!(
        raw.starts_with("15\r\nid: 0\n") && raw.ends_with("\n\n\r\n0\r\n\r\n"),
        "{raw:?}"
    );
    let last = Duration::from_millis(100 + 4 * 20);
    assert!(took >= last, "early: {took:?}");
    assert!(took < last + SLACK, "late: {took:?}");
    // The connection stays usable, and the counts are the server's.
    assert_eq!(client.get("/sse?events=0").status, 200);
    let stats = target.stats();
    assert_eq!((stats.stream_responses, stats.stream_events), (2, 5));
    assert_eq!(stats.completion_tokens, 0);
}

#[test]
fn first_event_waits_for_its_time() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    let sent = Instant::now();
    client.send_get("/sse?first=150ms&every=1ms&events=1");
    let resp = client.read_response().expect("response");
    assert!(sent.elapsed() >= Duration::from_millis(150));
    assert_eq!(events(&resp.body).len(), 1);
}

#[test]
fn chat_completions_stream_tokens_then_done() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    let sent = Instant::now();
    let body = r#"{"model":"m","messages":[],"stream":true,"max_tokens":4}"#;
    let resp = post(
        &mut client,
        "/v1/chat/completions?first=30ms&every=10ms",
        body,
    );
    let took = sent.elapsed();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let got = events(&resp.body);
    assert_eq!(got.len(), 4 + 2, "{got:?}");
    assert_eq!(got[5], "data: [DONE]");
    let mut text = String::new();
    for event in &got[..5] {
        let json = event.strip_prefix("data: ").expect("data");
        let v: serde_json::Value = serde_json::from_str(json).expect("json");
        text.push_str(v["choices"][0]["delta"]["content"].as_str().unwrap_or(""));
    }
    assert_eq!(text, "lorem ipsum dolor sit");
    assert!(
        took >= Duration::from_millis(30 + 3 * 10),
        "early: {took:?}"
    );
    let stats = target.stats();
    assert_eq!(stats.stream_events, 6);
    assert_eq!(stats.completion_tokens, 4);
}

#[test]
fn completions_without_stream_answer_whole() {
    let target = start(1);
    let mut client = Client::connect(target.local_addr());
    let resp = post(
        &mut client,
        "/v1/completions?first=1ms&every=1ms",
        r#"{"max_tokens":3}"#,
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_slice(&resp.body).expect("json");
    assert_eq!(v["choices"][0]["text"], "lorem ipsum dolor");
    assert_eq!(v["usage"]["completion_tokens"], 3);
    let bad = post(&mut client, "/v1/completions", "{not json");
    assert_eq!(bad.status, 400);
    assert!(
        bad.text().starts_with("bad completion request"),
        "{}",
        bad.text()
    );
    // A completion without a body streams (the probe's own default, for plain GETs).
    let plain = client.get("/v1/completions?tokens=2&first=1ms&every=1ms");
    assert_eq!(events(&plain.body).len(), 2 + 2);
    let stats = target.stats();
    assert_eq!(stats.completion_tokens, 3 + 2);
    assert_eq!((stats.stream_responses, stats.stream_events), (1, 4));
}

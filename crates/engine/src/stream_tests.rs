use std::time::Duration;

use super::*;
use crate::http::ResponseReader;

/// pair is what a take completed, without its tokens.
fn pair(t: Taken) -> (u32, bool) {
    (t.pieces, t.events)
}

/// taken is `pieces` completed, events or not, none a token.
fn taken(pieces: u32, events: bool) -> Taken {
    Taken {
        pieces,
        events,
        tokens: 0,
    }
}

/// events_of feeds `body` to an event-stream body in pieces of `split` bytes and counts the
/// events taken.
fn events_of(body: &[u8], split: usize) -> u32 {
    let mut p = Pieces::default();
    p.begin(true, false);
    let mut n = 0;
    for part in body.chunks(split) {
        p.feed(part);
        let (got, events) = pair(p.take());
        assert!(events);
        n += got;
    }
    n
}

#[test]
fn sse_events_are_counted_however_split() {
    // (label, body, events)
    let cases: &[(&str, &[u8], u32)] = &[
        ("one", b"data: a\n\n", 1),
        ("two", b"data: a\n\ndata: b\n\n", 2),
        ("unfinished", b"data: a\n\ndata: b\n", 1),
        ("crlf", b"data: a\r\n\r\ndata: b\r\n\r\n", 2),
        ("cr", b"data: a\r\rdata: b\r\r", 2),
        (
            "multi-line event",
            b"id: 1\nevent: x\ndata: a\ndata: b\n\n",
            1,
        ),
        ("comment only", b": keep-alive\n\n", 0),
        ("comment then event", b": ping\n\ndata: a\n\n", 1),
        ("blank lines alone", b"\n\n\n", 0),
        ("done marker", b"data: {}\n\ndata: [DONE]\n\n", 2),
    ];
    for (label, body, want) in cases {
        for split in [1, 2, 3, 7, body.len().max(1)] {
            assert_eq!(events_of(body, split), *want, "{label}, split {split}");
        }
    }
}

#[test]
fn other_bodies_are_cut_by_chunk_or_read() {
    let mut p = Pieces::default();
    p.begin(false, true);
    p.feed(b"abc");
    assert_eq!(pair(p.take()), (0, false), "a chunk not yet complete");
    p.chunk_done();
    p.feed(b"d");
    p.chunk_done();
    assert_eq!(pair(p.take()), (2, false), "two chunks in one read");
    p.begin(false, false);
    p.feed(b"abc");
    p.feed(b"def");
    assert_eq!(pair(p.take()), (1, false), "a read is one piece");
    assert_eq!(pair(p.take()), (0, false));
    p.feed(b"");
    assert_eq!(pair(p.take()), (0, false), "no bytes, no piece");
}

/// reader_events parses a whole response (head and body) split into `split`-byte reads and
/// counts the pieces each read completed.
fn reader_pieces(raw: &[u8], split: usize) -> (u32, bool, u64) {
    let mut r = ResponseReader::new(false).watching(true);
    let mut held: Vec<u8> = Vec::new();
    let (mut n, mut events) = (0, false);
    for part in raw.chunks(split) {
        held.extend_from_slice(part);
        let p = r.advance(&held).expect("valid");
        held.drain(..p.consumed);
        let (got, ev) = pair(r.pieces.take());
        n += got;
        events |= ev;
        if p.complete {
            break;
        }
    }
    (n, events, r.body_bytes)
}

#[test]
fn the_reader_cuts_bodies_as_its_head_says() {
    let sse = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n\
                15\r\nid: 0\ndata: {\"n\":0}\n\n\r\n\
                6\r\ndata: \r\n3\r\nx\n\n\r\n0\r\n\r\n";
    let chunked =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let length = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    // (label, response, pieces whole, events)
    let cases: &[(&str, &[u8], u32, bool)] = &[
        ("sse", sse, 2, true),
        ("chunked", chunked, 2, false),
        ("length", length, 1, false),
    ];
    for (label, raw, whole, events) in cases {
        let (n, ev, _) = reader_pieces(raw, raw.len());
        assert_eq!((n, ev), (*whole, *events), "{label}, whole");
        for split in [1, 5, 16] {
            let (n, ev, _) = reader_pieces(raw, split);
            assert_eq!(ev, *events, "{label}, split {split}");
            if *events || *label == "chunked" {
                assert_eq!(n, *whole, "{label}, split {split}");
            } else {
                assert!(n >= 1, "{label}, split {split}: one piece a read");
            }
        }
    }
    let (_, _, bytes) = reader_pieces(sse, 4);
    assert_eq!(bytes, 0x15 + 6 + 3);
    // Not watching: no pieces.
    let mut r = ResponseReader::new(false);
    r.advance(sse).expect("valid");
    assert_eq!(pair(r.pieces.take()), (0, false));
}

#[test]
fn a_watch_times_gaps_from_arrivals() {
    let sink: Sink = Rc::new(RefCell::new(StreamBooks::new(1)));
    let mut w = Watch::new(sink.clone());
    let t0 = Instant::now();
    let ms = |n: u64| t0 + Duration::from_millis(n);
    w.begin(true, t0);
    w.arrived(ms(1));
    w.progress(0, false, taken(0, false)); // the head alone: no first byte yet
    assert_eq!(w.first, None);
    w.arrived(ms(200));
    w.progress(10, false, taken(1, true));
    w.arrived(ms(220));
    w.progress(20, false, taken(2, true)); // two events in one read: gaps 20 ms and 0
    w.arrived(ms(250));
    w.progress(30, true, taken(1, true));
    assert_eq!(w.first, Some(ms(200)));
    {
        let books = sink.borrow();
        let s = &books.run;
        assert_eq!((s.events, s.chunks), (4, 4));
        assert_eq!(s.chunk_gap.len(), 3, "one gap fewer than pieces");
        assert_eq!(s.chunk_gap.min(), 1);
        assert_eq!(s.chunk_gap.max() / 1000, 30);
    }
    sink.borrow_mut().answered(&w, t0, t0, ms(250));
    let books = sink.borrow();
    let s = &books.run;
    assert_eq!((s.responses, s.body_bytes), (1, 30));
    assert_eq!(s.first_byte.max() / 1000, 200);
    drop(books);
    // The interval's books saw the same, and start again once taken.
    let iv = sink.borrow_mut().take_interval();
    assert_eq!((iv.events, iv.responses, iv.chunk_gap.len()), (4, 1, 3));
    assert_eq!(iv.first_byte.max() / 1000, 200);
    assert_eq!(sink.borrow().interval.events, 0);
    // Warm-up: the pieces are not counted, but the next gap still starts from them.
    w.begin(false, ms(300));
    w.arrived(ms(310));
    w.progress(5, false, taken(1, true));
    assert_eq!(sink.borrow().run.events, 4);
    assert_eq!(sink.borrow().interval.events, 0);
}

#[test]
fn reports_merge_and_summarise() {
    let mut a = StreamTotals::new(1);
    let mut b = StreamTotals::new(1);
    a.events = 3;
    b.events = 4;
    b.first_byte.saturating_record(200_000);
    a.merge(&b);
    let r = StreamReport::new(&a, 2.0);
    assert_eq!(r.stream.counts.events, 7);
    assert!((r.stream.counts.events_per_s - 3.5).abs() < 1e-9);
    assert!((r.first_byte_ms.p50 - 200.0).abs() < 0.2);
    let json = serde_json::to_value(&r).expect("json");
    assert!(json.get("first_byte_ms").is_some() && json.get("chunk_gap_ms").is_some());
    assert!(!StreamHistograms::new(&a).first_byte.is_empty());
}

#[test]
fn a_watch_times_frames_as_pieces() {
    // (label, content is SSE, frames as (ms, payload), end ms, pieces, events, first ms, gaps)
    type Case<'a> = (
        &'a str,
        bool,
        &'a [(u64, &'a [u8])],
        u64,
        u64,
        u64,
        Option<u64>,
        u64,
    );
    let cases: &[Case] = &[
        (
            "an event a frame",
            true,
            &[(200, b"data: 0\n\n"), (220, b"data: 1\n\n"), (240, b"")],
            241,
            2,
            2,
            Some(200),
            1,
        ),
        (
            "an event split over two frames, then two in one",
            true,
            &[
                (100, b"data: 0"),
                (110, b"\n\n"),
                (130, b"data: 1\n\ndata: 2\n\n"),
            ],
            130,
            3,
            3,
            Some(100),
            2,
        ),
        (
            "frames of a plain body",
            false,
            &[(50, b"ab"), (60, b"c")],
            61,
            2,
            0,
            Some(50),
            1,
        ),
        (
            "no body: the end is the first byte",
            false,
            &[],
            70,
            0,
            0,
            Some(70),
            0,
        ),
    ];
    for (label, sse, frames, end, pieces, events, first, gaps) in cases {
        let sink: Sink = Rc::new(RefCell::new(StreamBooks::new(1)));
        let mut w = Watch::new(sink.clone());
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        w.begin(true, t0);
        w.head(ms(1), *sse, false);
        let mut bytes = 0;
        for (at, payload) in frames.iter() {
            bytes += payload.len() as u64;
            w.frame(payload, ms(*at), bytes);
        }
        w.end(ms(*end));
        assert_eq!(w.first, first.map(ms), "{label}");
        let books = sink.borrow();
        let s = &books.run;
        assert_eq!((s.chunks, s.events), (*pieces, *events), "{label}");
        assert_eq!(s.chunk_gap.len(), *gaps, "{label}");
    }
}

#[test]
fn a_head_that_ends_the_stream_is_the_first_byte() {
    let sink: Sink = Rc::new(RefCell::new(StreamBooks::new(1)));
    let mut w = Watch::new(sink);
    let t0 = Instant::now();
    w.begin(true, t0);
    w.head(t0 + Duration::from_millis(5), false, true);
    w.end(t0 + Duration::from_millis(9));
    assert_eq!(w.first, Some(t0 + Duration::from_millis(5)));
}

#[test]
fn the_scanner_finds_tokens_however_split() {
    let body = b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n\
        data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\n\
        : keep-alive\n\n\
        data: {\"choices\":[{\"delta\":\ndata: {\"content\":\"b\"}}]}\n\n\
        data: {\"choices\":[],\"usage\":{}}\n\ndata: [DONE]\n\n";
    for split in [1, 2, 7, body.len()] {
        let mut p = Pieces::default();
        p.begin(true, true);
        let (mut events, mut tokens) = (0, 0);
        for part in body.chunks(split) {
            p.feed(part);
            let t = p.take();
            events += t.pieces;
            tokens += t.tokens;
        }
        // The comment is no event; the data of two lines, joined by LF, is one token.
        assert_eq!((events, tokens), (5, 2), "split {split}");
    }
}

#[test]
fn a_watch_counts_grpc_messages_however_framed() {
    // Two messages of 3 bytes and one empty one, framed as gRPC frames them.
    let body: Vec<u8> = [
        crate::grpc::frame(b"abc"),
        crate::grpc::frame(b""),
        crate::grpc::frame(b"xyz"),
    ]
    .concat();
    // (label, frame sizes, messages per frame)
    let cases: &[(&str, &[usize], &[u64])] = &[
        ("a message a frame", &[8, 5, 8], &[1, 1, 1]),
        ("all in one", &[21], &[3]),
        ("split inside a prefix", &[2, 6, 13], &[0, 1, 2]),
        ("byte by byte", &[1; 21], &[]),
    ];
    for (label, sizes, per_frame) in cases {
        let sink: Sink = Rc::new(RefCell::new(StreamBooks::new(1)));
        let mut w = Watch::new(sink.clone());
        w.grpc(true);
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        w.begin(true, t0);
        w.head(ms(1), false, false);
        let (mut at, mut bytes, mut first) = (0usize, 0u64, None);
        for (k, size) in sizes.iter().enumerate() {
            let before = sink.borrow().run.chunks;
            bytes += *size as u64;
            w.frame(&body[at..at + size], ms(10 + k as u64), bytes);
            at += size;
            let got = sink.borrow().run.chunks - before;
            if let Some(want) = per_frame.get(k) {
                assert_eq!(got, *want, "{label}: frame {k}");
            }
            if got > 0 && first.is_none() {
                first = Some(ms(10 + k as u64));
            }
        }
        w.end(ms(100));
        assert_eq!(sink.borrow().run.chunks, 3, "{label}");
        assert_eq!(sink.borrow().run.events, 0, "{label}");
        assert_eq!(w.first, first, "{label}: the first whole message");
    }
}

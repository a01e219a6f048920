use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::*;

/// frame is one HTTP/2 frame's bytes: its header and `payload`.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// noted is what `arrivals` holds, in order: (connection, stream, part, at).
fn noted(arrivals: &Arrivals) -> Vec<(u64, u32, Part, Instant)> {
    let q = arrivals.queue.borrow();
    q.iter()
        .map(|a| (a.connection, a.stream, a.part, a.at))
        .collect()
}

#[test]
fn frames_are_noted_with_the_read_that_brought_their_last_byte() {
    /// Note is what a frame notes: its stream and part, or nothing.
    type Note = Option<(u32, Part)>;
    let frames: Vec<(Vec<u8>, Note)> = vec![
        (frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]), None), // SETTINGS
        (
            frame(HEADERS, END_HEADERS, 1, b"\x88"),
            Some((1, Part::Head)),
        ),
        (frame(DATA, 0, 1, b"id: 0\n\n"), Some((1, Part::Data))),
        (frame(DATA, PADDED, 3, b"\x02ab\0\0"), Some((3, Part::Data))),
        (frame(DATA, PADDED, 3, b"\x03\0\0\0"), None), // padding only: no payload
        (frame(HEADERS, 0, 5, b"\x88"), None),         // a header block goes on...
        (
            frame(CONTINUATION, END_HEADERS, 5, b""),
            Some((5, Part::Head)),
        ), // ...and ends
        (frame(0x8, 0, 0, &[0, 0, 1, 0]), None),       // WINDOW_UPDATE
        (frame(DATA, 0x1, 1, b""), None),              // END_STREAM alone
        (frame(DATA, 0x1, 3, b"z"), Some((3, Part::Data))),
    ];
    let mut wire = Vec::new();
    let mut ends = Vec::new(); // (offset of the frame's last byte, what it notes)
    for (bytes, note) in &frames {
        wire.extend_from_slice(bytes);
        if let Some(n) = note {
            ends.push((wire.len() - 1, *n));
        }
    }
    let t0 = Instant::now();
    let read_at = |k: usize| t0 + Duration::from_millis(k as u64);
    // Every way of cutting the bytes in two reads, and one read a byte.
    let mut cuts: Vec<Vec<usize>> = (0..=wire.len()).map(|c| vec![c, wire.len()]).collect();
    cuts.push((1..=wire.len()).collect());
    for cut in cuts {
        let arrivals = Arrivals::new();
        let mut f = Frames::default();
        let mut from = 0;
        for (k, &to) in cut.iter().enumerate() {
            f.feed(&wire[from..to], read_at(k), 7, &arrivals);
            from = to;
        }
        let want: Vec<_> = ends
            .iter()
            .map(|&(last, (stream, part))| {
                let k = cut.iter().position(|&to| last < to).expect("a read");
                (7, stream, part, read_at(k))
            })
            .collect();
        assert_eq!(noted(&arrivals), want, "reads ending at {cut:?}");
    }
}

#[test]
fn a_stream_claims_its_own_frames_in_order_never_after_now() {
    let t0 = Instant::now();
    let ms = |n: u64| t0 + Duration::from_millis(n);
    let a = Arrivals::new();
    a.note(1, 1, Part::Head, ms(1));
    a.note(1, 1, Part::Data, ms(2));
    a.note(1, 3, Part::Data, ms(3));
    a.note(1, 1, Part::Data, ms(4));
    a.note(2, 1, Part::Data, ms(5)); // the next connection's stream 1
                                     // Trailers: nobody claims them.
    a.note(1, 1, Part::Head, ms(6));
    // (label, connection, stream, part, now, want)
    let cases = [
        ("the head", 1, 1, Part::Head, ms(50), ms(1)),
        ("the first frame", 1, 1, Part::Data, ms(50), ms(2)),
        (
            "the second, past the other stream's",
            1,
            1,
            Part::Data,
            ms(50),
            ms(4),
        ),
        ("none left: now", 1, 1, Part::Data, ms(50), ms(50)),
        ("the other connection's", 2, 1, Part::Data, ms(50), ms(5)),
        ("never after now", 1, 3, Part::Data, ms(2), ms(2)),
    ];
    for (label, connection, stream, part, now, want) in cases {
        assert_eq!(a.claim(connection, stream, part, now), want, "{label}");
    }
    assert_eq!(noted(&a), vec![(1, 1, Part::Head, ms(6))]);
    a.forget(1, 1);
    assert!(noted(&a).is_empty());
    // Bounded: the oldest go first, the queue's memory stays what it was given.
    let room = a.queue.borrow().capacity();
    for k in 0..KEPT as u32 + 3 {
        a.note(1, k, Part::Data, ms(u64::from(k)));
    }
    let q = noted(&a);
    assert_eq!((q.len(), q[0].1), (KEPT, 3));
    assert_eq!(a.queue.borrow().capacity(), room);
    let clock = Clock::of(None, 1);
    let before = Instant::now();
    assert!(
        clock.at(Part::Data) >= before,
        "unnoted: the clock at hand-over"
    );
}

/// A real socket: frames written 30 ms before the read are noted about 30 ms before it, each
/// with its own read's stamp, and the bytes reach the reader unchanged.
#[test]
fn a_stamped_socket_notes_when_frames_arrived_not_when_they_were_read() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let client = TcpStream::connect(addr).await.expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        let arrivals = Rc::new(Arrivals::new());
        let mut io = Stamped::new(client, Some(arrivals.clone()), 9);
        assert!(io.clock.is_some(), "SO_TIMESTAMPNS");
        let data = frame(DATA, 0, 1, b"data: 1\n\n");
        // The kernel turns stamping on a moment after the first socket asks (a deferred
        // static key), so the first frames may come unstamped: try a few, boundedly.
        let mut stamped = None;
        for _ in 0..50 {
            server.writable().await.expect("writable");
            let before = Instant::now();
            assert_eq!(server.try_write(&data).expect("write"), data.len());
            let after = Instant::now();
            std::thread::sleep(Duration::from_millis(30));
            let mut buf = vec![0u8; data.len()];
            io.read_exact(&mut buf).await.expect("read");
            let read = Instant::now();
            assert_eq!(buf, data);
            let at = arrivals.claim(9, 1, Part::Data, read);
            if read.duration_since(at) >= Duration::from_millis(29) {
                stamped = Some((before, at, after));
                break;
            }
        }
        let (before, at, after) = stamped.expect("no frame was noted with the kernel's stamp");
        // Within the write's own bracket (1 ms of slack for the two clocks the conversion
        // reads), however late the thread ran.
        assert!(
            at + Duration::from_millis(1) >= before,
            "noted before it was written"
        );
        assert!(
            at <= after + Duration::from_millis(1),
            "noted {:?} after the write returned",
            at.duration_since(after)
        );
    });
}

//! Tests of the transmit stamps on real loopback sockets.

use super::*;

/// pair is a connected client (with transmit stamps) and its server end.
async fn pair() -> (TcpStream, TcpStream) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let client = TcpStream::connect(addr).await.expect("connect");
    let (server, _) = listener.accept().await.expect("accept");
    // As the engine's connections: Nagle would hold a small write back (and its stamp says so).
    client.set_nodelay(true).expect("nodelay");
    enable(&client).expect("SO_TIMESTAMPING");
    (client, server)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// write writes one request as the engine does: stamped when its request asks.
fn write(client: &TcpStream, sends: &mut Sends, bytes: &[u8]) {
    let n = if sends.begin() {
        send_stamped(client, bytes).expect("write with a stamp asked")
    } else {
        client.try_write(bytes).expect("write")
    };
    assert_eq!(n, bytes.len());
    sends.wrote(n);
}

/// drain reads what reached the server end, as a server would (so TCP keeps sending at once).
fn drain(server: &TcpStream) {
    let mut buf = [0u8; 4096];
    while matches!(server.try_read(&mut buf), Ok(n) if n > 0) {}
}

/// A write bracketed wide (as by a preemption: the bracket opened 20 ms before the write and
/// closed 20 ms after) is timed by the kernel's stamp, within 5 ms of the write's own bracket,
/// not by the bracket's start 20 ms earlier; after a hundred narrow brackets (their stamps
/// drained in batches, never read one by one) the stamp found is still the right write's.
#[test]
fn a_wide_bracket_reads_the_kernels_stamp_of_its_own_write() {
    runtime().block_on(async {
        let (client, server) = pair().await;
        let mut sends = Sends {
            every: true,
            ..Sends::default()
        };
        for round in 0..2 {
            if round == 1 {
                for _ in 0..100 {
                    let from = Instant::now();
                    write(&client, &mut sends, b"narrow");
                    let to = from; // a bracket of zero width
                    assert_eq!(sends.left(&client, from, to), Some(from));
                    std::thread::sleep(Duration::from_micros(200));
                    drain(&server);
                }
                assert!(sends.unread < DRAIN, "{} stamps left unread", sends.unread);
            }
            let before = Instant::now();
            std::thread::sleep(Duration::from_millis(20));
            let written = Instant::now();
            write(&client, &mut sends, b"GET / HTTP/1.1\r\n\r\n");
            // The write's own bracket: a thread preempted between `written` and the syscall
            // (a busy CI box) moves the kernel's stamp, and this with it.
            let wrote_by = Instant::now();
            std::thread::sleep(Duration::from_millis(20));
            let left = sends
                .left(&client, before, Instant::now())
                .expect("the kernel stamped the write");
            // (5 ms of slack: the conversion reads two clocks, and a thread preempted between
            // them moves the stamp earlier by as much; the bracket's start is 20 ms earlier)
            assert!(
                left + Duration::from_millis(5) >= written,
                "round {round}: stamped {:?} before the write",
                written - left
            );
            assert!(
                left.saturating_duration_since(wrote_by) < Duration::from_millis(5),
                "round {round}: stamped {:?} after the write returned",
                left.saturating_duration_since(wrote_by)
            );
            assert_eq!(sends.unread, 0, "a read drains the queue");
        }
    });
}

/// A narrow bracket is the send time itself: no syscall, the bracket's start.
#[test]
fn a_narrow_bracket_is_its_own_start() {
    runtime().block_on(async {
        let (client, _server) = pair().await;
        let mut sends = Sends {
            every: true,
            ..Sends::default()
        };
        let from = Instant::now();
        write(&client, &mut sends, b"x");
        assert_eq!(sends.left(&client, from, from + SLACK), Some(from));
        assert_eq!(sends.unread, 1, "one stamp waits for the next batch");
    });
}

/// One request in SAMPLE asks for a stamp, and only its stamps are counted unread; a wide
/// bracket without one is left to user space (None). A sampled stamp a scheduler slice after
/// its syscall began (the kernel preempted the thread before the bytes left: here the
/// bracket opened 20 ms before the write) makes the connection stamp every request after it.
#[test]
fn one_request_in_a_sample_asks_and_a_late_stamp_asks_for_all() {
    runtime().block_on(async {
        let (client, server) = pair().await;
        let mut sends = Sends::default();
        for _ in 0..SAMPLE - 1 {
            let from = Instant::now();
            write(&client, &mut sends, b"unstamped");
            let wide = from + SLACK + Duration::from_millis(1);
            assert_eq!(sends.left(&client, from, wide), None, "no stamp was asked");
            drain(&server);
        }
        assert_eq!(sends.unread, 0, "unstamped writes leave nothing to read");
        let from = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        write(&client, &mut sends, b"sampled");
        assert_eq!(sends.unread, 1, "the sampled request asked");
        let left = sends
            .left(&client, from, Instant::now())
            .expect("the sampled request's stamp");
        assert!(
            left >= from + Duration::from_millis(19),
            "{:?}",
            left - from
        );
        for _ in 0..3 {
            let from = Instant::now();
            write(&client, &mut sends, b"after");
            assert_eq!(sends.unread, 1, "every request asks now");
            assert!(sends
                .left(&client, from, from + SLACK + Duration::from_millis(1))
                .is_some());
            drain(&server);
        }
    });
}

/// A loopback connect is timed by the kernel at its handshake, well under a millisecond,
/// however late the thread comes back to it: here 30 ms late, and the handshake still reads
/// the kernel's round trip, not the 30 ms (the rest of a connect's span is the generator's).
#[test]
fn a_connect_is_timed_by_the_kernels_handshake() {
    runtime().block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        std::thread::sleep(Duration::from_millis(30));
        let hs = handshake(&client).expect("TCP_INFO gives the handshake's round trip");
        // Loopback: tens of microseconds; 10 ms is far under the 30 ms the thread slept and
        // holds on a loaded machine (the kernel answers a SYN in softirq, not in a thread).
        assert!(
            hs > Duration::ZERO && hs < Duration::from_millis(10),
            "{hs:?}"
        );
    });
}

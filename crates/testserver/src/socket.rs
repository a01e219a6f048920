//! The WebSocket echo probe, the truth a WebSocket client is held to: `GET /ws` upgraded, each
//! text or binary message sent back `delay=` after it arrived (so a client reads a round trip
//! of `delay`), on an absolute schedule per message (a late write does not move the next one)
//! and in arrival order. `drop=N` drops the socket (no close frame; an RST) right after its
//! N-th echo; `close_after=N&code=C` closes it with close code C after its N-th echo. The
//! server counts what it did in `/__stats`: `ws_sockets` upgraded, `ws_received` and `ws_sent`
//! messages, `ws_dropped` and `ws_closed` sockets it ended on purpose.
//!
//! Framing is tokio-websockets' (the crate the engine's client uses too, see
//! `crates/engine/src/socket/`); the HTTP upgrade is answered by the connection's own parser,
//! which has already read the request head, hence [`accept`] here.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use sha1::{Digest, Sha1};
use tokio_websockets::{CloseCode, Message};

use crate::latency::parse_duration;
use crate::sleep;
use crate::stats::Counters;
use crate::tls::Io;

/// GUID is RFC 6455's constant appended to the client's key in the handshake.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// MAX_DELAY caps `delay=`: a probe answers within a test's time.
const MAX_DELAY: Duration = Duration::from_secs(60);

/// Probe is what one upgraded socket does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Probe {
    /// delay: from a message's arrival to its echo (`delay=`, default 0).
    pub(crate) delay: Duration,
    /// drop: drop the socket after this many echoes (`drop=N`).
    pub(crate) drop: Option<u64>,
    /// close: close with this code after this many echoes (`close_after=N`, `code=C`).
    pub(crate) close: Option<(u64, u16)>,
}

impl Probe {
    /// parse reads `/ws`'s query (None: no query); the error is a 400's one-line reason.
    pub(crate) fn parse(query: Option<&str>) -> Result<Probe, String> {
        let mut probe = Probe::default();
        let (mut after, mut code) = (None, 1000u16);
        for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let count = || {
                value.parse::<u64>().ok().filter(|n| *n > 0).ok_or(format!(
                    "bad {key} {value:?}: expected a count of messages > 0"
                ))
            };
            match key.as_ref() {
                "delay" => {
                    probe.delay = parse_duration(&value)?;
                    if probe.delay > MAX_DELAY {
                        return Err(format!("bad delay {value:?}: at most 60s"));
                    }
                }
                "drop" => probe.drop = Some(count()?),
                "close_after" => after = Some(count()?),
                "code" => {
                    code = value
                        .parse::<u16>()
                        .ok()
                        .filter(|c| CloseCode::try_from(*c).is_ok_and(|c| !c.is_reserved()))
                        .ok_or(format!("bad code {value:?}: expected a close code to send"))?
                }
                _ => {}
            }
        }
        probe.close = after.map(|n| (n, code));
        Ok(probe)
    }
}

/// accept is the `Sec-WebSocket-Accept` answering `key` (RFC 6455, 4.2.2): base64 of the
/// SHA-1 of the key and [`GUID`], always 28 bytes.
pub(crate) fn accept(key: &[u8]) -> [u8; 28] {
    let mut sha = Sha1::new();
    sha.update(key.trim_ascii());
    sha.update(GUID);
    let mut out = [0u8; 28];
    // 20 bytes encode to exactly 28 base64 characters.
    let _ = base64::engine::general_purpose::STANDARD.encode_slice(sha.finalize(), &mut out);
    out
}

/// switching is the 101 answer to an upgrade whose accept value is `accept`.
pub(crate) fn switching(accept: &[u8; 28]) -> Vec<u8> {
    let mut head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
Connection: Upgrade\r\nSec-WebSocket-Accept: "
        .to_vec();
    head.extend_from_slice(accept);
    head.extend_from_slice(b"\r\n\r\n");
    head
}

/// Ending is how an echo loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Left: the client closed or went away (or the socket failed).
    Left,
    /// Dropped: `drop=N` was reached and the TCP connection aborted (an RST).
    Dropped,
}

/// echo serves one upgraded socket until the client leaves or the probe ends it.
pub(crate) async fn echo<S: Io>(stream: S, probe: Probe, counters: &Counters) -> Ending {
    counters.add_socket();
    let mut ws = tokio_websockets::ServerBuilder::new().serve(stream);
    let mut due: VecDeque<(Instant, Message)> = VecDeque::new();
    let mut echoed = 0u64;
    loop {
        let next = due.front().map(|(at, _)| *at);
        tokio::select! {
            biased;
            _ = sleep::until(next.unwrap_or_else(Instant::now)), if next.is_some() => {
                let Some((_, message)) = due.pop_front() else { continue };
                if ws.send(message).await.is_err() {
                    return Ending::Left;
                }
                counters.add_socket_messages(0, 1);
                echoed += 1;
                if probe.drop == Some(echoed) {
                    counters.add_socket_end(true);
                    if let Some(tcp) = ws.get_ref().tcp() {
                        let _ = socket2::SockRef::from(tcp).set_linger(Some(Duration::ZERO));
                    }
                    return Ending::Dropped;
                }
                if let Some((_, code)) = probe.close.filter(|(after, _)| *after == echoed) {
                    let code = CloseCode::try_from(code).unwrap_or(CloseCode::NORMAL_CLOSURE);
                    let _ = ws.send(Message::close(Some(code), "probe")).await;
                    counters.add_socket_end(false);
                    // The client's close frame answers ours (or it leaves): wait for either.
                    while let Some(Ok(_)) = ws.next().await {}
                    return Ending::Left;
                }
            }
            message = ws.next() => match message {
                Some(Ok(m)) if m.is_text() || m.is_binary() => {
                    counters.add_socket_messages(1, 0);
                    due.push_back((Instant::now() + probe.delay, m));
                }
                // Pings are answered by the crate; a close is answered as the stream ends.
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return Ending::Left,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_value_is_rfc_6455s_example() {
        // RFC 6455, section 1.3.
        let got = accept(b"dGhlIHNhbXBsZSBub25jZQ==");
        assert_eq!(&got, b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn queries_parse() {
        let ms = Duration::from_millis;
        let cases: Vec<(&str, Option<&str>, Probe)> = vec![
            ("none", None, Probe::default()),
            (
                "delay",
                Some("delay=50ms"),
                Probe {
                    delay: ms(50),
                    ..Probe::default()
                },
            ),
            (
                "drop",
                Some("drop=3"),
                Probe {
                    drop: Some(3),
                    ..Probe::default()
                },
            ),
            (
                "close with a code",
                Some("close_after=2&code=1011"),
                Probe {
                    close: Some((2, 1011)),
                    ..Probe::default()
                },
            ),
            (
                "close default code",
                Some("close_after=2"),
                Probe {
                    close: Some((2, 1000)),
                    ..Probe::default()
                },
            ),
        ];
        for (label, query, want) in cases {
            assert_eq!(Probe::parse(query), Ok(want), "{label}");
        }
        for (query, want) in [
            ("delay=5", "missing unit"),
            ("drop=0", "bad drop"),
            ("close_after=x", "bad close_after"),
            ("close_after=1&code=1005", "bad code"),
            ("delay=61s", "at most 60s"),
        ] {
            let err = Probe::parse(Some(query)).expect_err(query);
            assert!(err.contains(want), "{query}: {err}");
        }
    }
}

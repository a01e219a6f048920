//! What one thread's sockets counted: messages both ways, round trips, socket ends by class.
//! Each thread keeps its own [`Tally`] (its sockets share it, one at a time); the run merges
//! them at the end.

use std::collections::BTreeMap;
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::hdr;
use crate::socket::books::SocketBooks;

/// End is why a socket stopped before the run asked it to: each is an error class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Connect: the TCP connection could not be made (refused, unreachable, timed out).
    Connect,
    /// Handshake: the server refused the upgrade (an HTTP status, a bad accept value).
    Handshake,
    /// Dropped: the connection ended without a close frame (EOF, reset, a broken pipe).
    Dropped,
    /// Closed: the server sent a close frame with this code.
    Closed(u16),
    /// Timeout: a message waited longer than the timeout for its reply.
    Timeout,
    /// Protocol: the server broke the WebSocket protocol (a frame the crate refused).
    Protocol,
}

impl End {
    /// class is the error class's name in the report: `connect`, `handshake`, `dropped`,
    /// `close_CODE`, `timeout`, `protocol`.
    pub(crate) fn class(self) -> String {
        match self {
            End::Connect => "connect".into(),
            End::Handshake => "handshake".into(),
            End::Dropped => "dropped".into(),
            End::Closed(code) => format!("close_{code}"),
            End::Timeout => "timeout".into(),
            End::Protocol => "protocol".into(),
        }
    }
}

/// Tally is one thread's counts.
#[derive(Debug)]
pub(crate) struct Tally {
    /// books: sockets opened, and data messages written (their send completed), read,
    /// answered (each timed into `latency`), unmatched and lost.
    pub(crate) books: SocketBooks,
    /// bytes_out: the payload bytes of the data messages sent.
    pub(crate) bytes_out: u64,
    /// bytes_in: the payload bytes of the data messages read.
    pub(crate) bytes_in: u64,
    /// clamped: round trips above the histogram's top.
    pub(crate) clamped: u64,
    /// errors: socket ends by class.
    pub(crate) errors: BTreeMap<String, u64>,
    /// last_send: when this thread's last message left.
    pub(crate) last_send: Option<Instant>,
    /// latency: round trips in microseconds.
    pub(crate) latency: Histogram<u64>,
}

impl Tally {
    /// new is an empty tally whose histogram reaches at least `highest_us`.
    pub(crate) fn new(highest_us: u64) -> Tally {
        Tally {
            books: SocketBooks::default(),
            bytes_out: 0,
            bytes_in: 0,
            clamped: 0,
            errors: BTreeMap::new(),
            last_send: None,
            latency: hdr::new_histogram(highest_us),
        }
    }

    /// sent_one counts a message of `bytes` that left at `at`.
    pub(crate) fn sent_one(&mut self, bytes: usize, at: Instant) {
        self.books.messages.sent += 1;
        self.bytes_out += bytes as u64;
        self.last_send = Some(at);
    }

    /// received_one counts a data message of `bytes`; `start` is the message it answers
    /// (its round trip ends `now`), or None for an unmatched one.
    pub(crate) fn received_one(&mut self, bytes: usize, start: Option<Instant>, now: Instant) {
        self.books.messages.read(start.is_some());
        self.bytes_in += bytes as u64;
        if let Some(start) = start {
            let us = hdr::micros(now.saturating_duration_since(start));
            if hdr::record(&mut self.latency, us) {
                self.clamped += 1;
            }
        }
    }

    /// ended counts a socket's end as an error of its class, with the `lost` messages it took.
    pub(crate) fn ended(&mut self, end: End, lost: u64) {
        let class = end.class();
        self.books.messages.lose(&class, lost);
        *self.errors.entry(class).or_default() += 1;
    }

    /// merge adds another thread's tally.
    pub(crate) fn merge(&mut self, other: &Tally) {
        self.books.merge(&other.books);
        self.bytes_out += other.bytes_out;
        self.bytes_in += other.bytes_in;
        self.clamped += other.clamped;
        for (class, n) in &other.errors {
            *self.errors.entry(class.clone()).or_default() += n;
        }
        self.last_send = self.last_send.max(other.last_send);
        // Both histograms have the same bounds (one run, one timeout): adding cannot fail.
        let _ = self.latency.add(&other.latency);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_message_is_answered_or_lost() {
        let t0 = Instant::now();
        let mut a = Tally::new(1_000_000);
        a.sent_one(5, t0);
        a.sent_one(5, t0);
        a.received_one(5, Some(t0), t0 + Duration::from_millis(50));
        a.received_one(3, None, t0);
        a.ended(End::Closed(1011), 1);
        let mut b = Tally::new(1_000_000);
        b.sent_one(5, t0 + Duration::from_secs(1));
        b.ended(End::Dropped, 1);
        b.ended(End::Connect, 0);
        a.merge(&b);
        let m = &a.books.messages;
        assert_eq!((m.sent, m.received, m.answered, m.unmatched), (3, 2, 1, 1));
        assert_eq!(m.sent, m.answered + m.lost.values().sum::<u64>());
        assert_eq!(m.lost_total, 2);
        let classes: Vec<(&str, u64)> = a.errors.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(classes, [("close_1011", 1), ("connect", 1), ("dropped", 1)]);
        assert_eq!(
            a.books.messages.lost.get("connect"),
            None,
            "a socket that never opened lost nothing"
        );
        assert_eq!(a.latency.len(), 1);
        assert_eq!(a.last_send, Some(t0 + Duration::from_secs(1)));
    }
}

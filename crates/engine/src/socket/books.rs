//! A WebSocket's books, kept alike by a socket run (in each thread's
//! [`crate::socket::tally::Tally`]) and by a flow's WebSocket step (per step name, in
//! [`crate::scenario::stats::FlowTotals`]): sockets opened, data messages both ways, and
//! every message sent answered or lost.

use std::collections::BTreeMap;

use serde::Serialize;

/// MessageBooks counts a WebSocket's data messages (text or binary) both ways: every message
/// sent is answered or lost (`sent = answered + lost_total`), but one still out when the run
/// was cut short (the run's `unfinished`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MessageBooks {
    /// sent: messages written.
    pub sent: u64,
    /// received: data messages read.
    pub received: u64,
    /// answered: sent messages whose reply came (each timed).
    pub answered: u64,
    /// unmatched: data messages read that answered no message sent (the rule did not match
    /// them).
    pub unmatched: u64,
    /// lost: sent messages that had no reply, by the class of the socket end that lost them
    /// (`dropped`, `close_CODE`, `timeout`, `protocol`).
    pub lost: BTreeMap<String, u64>,
    /// lost_total: the sum of `lost`.
    pub lost_total: u64,
}

impl MessageBooks {
    /// read counts a data message read: the reply to a message sent (`answers`), or unmatched.
    pub fn read(&mut self, answers: bool) {
        self.received += 1;
        if answers {
            self.answered += 1;
        } else {
            self.unmatched += 1;
        }
    }

    /// lose counts `n` sent messages lost when their socket ended as `class` (none: no entry).
    pub fn lose(&mut self, class: &str, n: u64) {
        if n == 0 {
            return;
        }
        match self.lost.get_mut(class) {
            Some(c) => *c += n,
            None => {
                self.lost.insert(class.to_string(), n);
            }
        }
        self.lost_total += n;
    }

    /// merge adds another thread's books.
    pub fn merge(&mut self, o: &MessageBooks) {
        self.sent += o.sent;
        self.received += o.received;
        self.answered += o.answered;
        self.unmatched += o.unmatched;
        for (class, n) in &o.lost {
            *self.lost.entry(class.clone()).or_default() += n;
        }
        self.lost_total += o.lost_total;
    }
}

/// SocketBooks is the sockets opened and their messages: a flow's WebSocket step's books, as
/// the report's `scenario.sockets` gives them (`opened` beside the messages' counts).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SocketBooks {
    /// opened: sockets whose upgrade succeeded.
    pub opened: u64,
    /// messages: their data messages, flattened beside `opened`.
    #[serde(flatten)]
    pub messages: MessageBooks,
}

impl SocketBooks {
    /// merge adds another thread's books.
    pub fn merge(&mut self, o: &SocketBooks) {
        self.opened += o.opened;
        self.messages.merge(&o.messages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn books_balance_merge_and_keep_their_json_shape() {
        let mut a = SocketBooks::default();
        a.opened += 1;
        a.messages.sent += 3;
        a.messages.read(true);
        a.messages.read(true);
        a.messages.read(false);
        a.messages.lose("close_1011", 1);
        a.messages.lose("connect", 0);
        let mut b = SocketBooks::default();
        b.messages.sent += 2;
        b.messages.lose("dropped", 1);
        b.messages.lose("close_1011", 1);
        a.merge(&b);
        let m = &a.messages;
        assert_eq!((m.sent, m.received, m.answered, m.unmatched), (5, 3, 2, 1));
        assert_eq!(m.sent, m.answered + m.lost_total);
        let lost: Vec<(&str, u64)> = m.lost.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            lost,
            [("close_1011", 2), ("dropped", 1)],
            "nothing lost: no entry"
        );
        // The report's `scenario.sockets` shape: `opened`, then the messages' counts.
        let json = serde_json::to_string(&a).expect("serialises");
        assert_eq!(
            json,
            r#"{"opened":1,"sent":5,"received":3,"answered":2,"unmatched":1,"lost":{"close_1011":2,"dropped":1},"lost_total":3}"#
        );
    }
}

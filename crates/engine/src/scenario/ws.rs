//! A flow's WebSocket step (`u.websocket`, docs/protocols.md): a socket opened to a URL, its
//! messages sent one after another, each when the last one's reply came (the reply matched by
//! a rule: the next message, or a JSON field equal to the one sent), each round trip a request
//! of the step's name, and the socket closed. [`super::spec::SocketSpec`] is the plan's JSON,
//! [`SocketStep`] the resolved step; the executor renders it per iteration and its transport
//! (the lane: `lane_socket.rs`) does the network and the books.

use std::time::Duration;

use serde_json::Value;

use super::template::Template;

/// SocketStep is a resolved WebSocket step.
#[derive(Debug, Clone)]
pub struct SocketStep {
    /// stat: the index of its name in [`super::Script::names`]: each message is a request of it.
    pub stat: usize,
    /// url: the templated URL (a path, or a ws:// or wss:// URL; variables escaped as path text).
    pub url: Template,
    /// messages: the templated messages, in order.
    pub messages: Vec<Template>,
    /// count: rounds of the messages.
    pub count: u32,
    /// field: the JSON field a reply is matched by (None: the next message answers).
    pub field: Option<String>,
    /// timeout: its own timeout (the run's when None).
    pub timeout: Option<Duration>,
}

/// Matcher tells whether a reply answers the message just sent.
#[derive(Debug)]
pub struct Matcher<'a> {
    field: Option<&'a str>,
    /// want: the sent message's field value (None: it has none, so no reply can match).
    want: Option<Value>,
}

impl<'a> Matcher<'a> {
    /// new reads the field of `sent` that replies are matched by (no work without a field).
    pub fn new(field: Option<&'a str>, sent: &[u8]) -> Matcher<'a> {
        let want = field.and_then(|f| field_of(sent, f));
        Matcher { field, want }
    }

    /// answers: `reply` is the answer (any message under the next-message rule; under a
    /// field rule, one whose field equals the sent one's).
    pub fn answers(&self, reply: &[u8]) -> bool {
        match self.field {
            None => true,
            Some(f) => self.want.is_some() && field_of(reply, f) == self.want,
        }
    }
}

/// field_of is the value of field `name` of a JSON object message (None: not JSON, not an
/// object, or no such field).
fn field_of(message: &[u8], name: &str) -> Option<Value> {
    match serde_json::from_slice::<Value>(message).ok()? {
        Value::Object(mut fields) => fields.remove(name),
        _ => None,
    }
}

/// ws_base is the origin a socket step's path goes to: the run's (`http://h:p`, `https://h:p`)
/// with the WebSocket scheme (`ws://h:p`, `wss://h:p`).
pub fn ws_base(base: &str) -> String {
    match base.split_once("://") {
        Some(("https", rest)) => format!("wss://{rest}"),
        Some((_, rest)) => format!("ws://{rest}"),
        None => format!("ws://{base}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_answers_by_the_rule() {
        let next = Matcher::new(None, b"hi");
        assert!(next.answers(b"anything"));
        let by_id = Matcher::new(Some("id"), br#"{"id": 7, "text": "hi"}"#);
        let cases: [(&str, &[u8], bool); 5] = [
            ("same id", br#"{"id": 7, "echo": true}"#, true),
            ("another id", br#"{"id": 8}"#, false),
            ("a string id", br#"{"id": "7"}"#, false),
            ("no id", br#"{"text": "hi"}"#, false),
            ("not JSON", b"7", false),
        ];
        for (label, reply, want) in cases {
            assert_eq!(by_id.answers(reply), want, "{label}");
        }
        let none = Matcher::new(Some("id"), b"no json");
        assert!(
            !none.answers(br#"{"id": null}"#),
            "a message without the field matches nothing"
        );
    }

    #[test]
    fn a_path_goes_to_the_runs_origin_as_a_socket() {
        assert_eq!(ws_base("http://127.0.0.1:8080"), "ws://127.0.0.1:8080");
        assert_eq!(ws_base("https://h:8443"), "wss://h:8443");
    }
}

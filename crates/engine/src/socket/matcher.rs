//! Which reply answers which message: [`Rule`] (the next message, or a JSON field equal to
//! one sent) and a socket's [`Outstanding`] messages, oldest first.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::error::EngineError;

/// Rule is how a reply is matched to the message it answers.
#[derive(Debug, Clone)]
pub(crate) enum Rule {
    /// Next: every data message a socket receives answers its oldest unanswered message
    /// (an echo, a request/response protocol); `message` is sent as it is.
    Next { message: Bytes },
    /// Field: a reply answers the message whose field `name` it carries; each message is
    /// `template` with `name` set to a number unique on its socket.
    Field {
        name: String,
        template: Map<String, Value>,
    },
}

impl Rule {
    /// new checks the message against the rule: a field to match needs a JSON object.
    pub(crate) fn new(message: &str, field: Option<&str>) -> Result<Rule, EngineError> {
        let Some(name) = field else {
            return Ok(Rule::Next {
                message: Bytes::copy_from_slice(message.as_bytes()),
            });
        };
        if name.is_empty() {
            return Err(EngineError::config(
                "the field to match replies by is empty",
            ));
        }
        match serde_json::from_str::<Value>(message) {
            Ok(Value::Object(template)) => Ok(Rule::Field {
                name: name.to_string(),
                template,
            }),
            _ => Err(EngineError::config(format!(
                "matching replies by field {name:?} needs the message to be a JSON object, \
                 got {message:?}"
            ))),
        }
    }

    /// name is the rule as the report shows it: `next`, or `field:NAME`.
    pub(crate) fn name(&self) -> String {
        match self {
            Rule::Next { .. } => "next".into(),
            Rule::Field { name, .. } => format!("field:{name}"),
        }
    }

    /// message is the text of message `id` of a socket.
    pub(crate) fn message(&mut self, id: u64) -> Bytes {
        match self {
            Rule::Next { message } => message.clone(),
            Rule::Field { name, template } => {
                template.insert(name.clone(), Value::from(id));
                // A map of JSON values always serialises.
                Bytes::from(serde_json::to_string(template).unwrap_or_default())
            }
        }
    }

    /// id_of is the message id a reply carries (Field only): its field `name`, a whole number.
    fn id_of(&self, reply: &[u8]) -> Option<u64> {
        let Rule::Field { name, .. } = self else {
            return None;
        };
        match serde_json::from_slice::<Value>(reply).ok()? {
            Value::Object(mut fields) => fields.remove(name)?.as_u64(),
            _ => None,
        }
    }
}

/// Outstanding is a socket's messages without a reply yet: (id, the instant its round trip
/// is timed from), in the order sent.
#[derive(Debug, Default)]
pub(crate) struct Outstanding {
    sent: VecDeque<(u64, Instant)>,
}

impl Outstanding {
    /// push notes message `id`, timed from `start`.
    pub(crate) fn push(&mut self, id: u64, start: Instant) {
        self.sent.push_back((id, start));
    }

    /// answer finds the message `reply` answers under `rule` and takes it: its start, or None
    /// for a reply that answers nothing outstanding (counted as unmatched).
    pub(crate) fn answer(&mut self, rule: &Rule, reply: &[u8]) -> Option<Instant> {
        match rule {
            Rule::Next { .. } => self.sent.pop_front().map(|(_, start)| start),
            Rule::Field { .. } => {
                let id = rule.id_of(reply)?;
                let at = self.sent.iter().position(|(sent, _)| *sent == id)?;
                self.sent.remove(at).map(|(_, start)| start)
            }
        }
    }

    /// oldest is the start of the longest-waiting message.
    pub(crate) fn oldest(&self) -> Option<Instant> {
        self.sent.front().map(|(_, start)| *start)
    }

    /// len is how many messages wait.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.sent.len()
    }

    /// is_empty: every message sent has its reply.
    pub(crate) fn is_empty(&self) -> bool {
        self.sent.is_empty()
    }

    /// clear forgets every waiting message (the socket is gone): how many there were.
    pub(crate) fn clear(&mut self) -> u64 {
        let n = self.sent.len() as u64;
        self.sent.clear();
        n
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn next_answers_the_oldest_whatever_the_reply_says() {
        let rule = Rule::new("hi", None).expect("valid");
        let t0 = Instant::now();
        let mut out = Outstanding::default();
        assert_eq!(out.answer(&rule, b"hi"), None, "nothing sent: unmatched");
        out.push(0, t0);
        out.push(1, t0 + Duration::from_millis(1));
        assert_eq!(out.answer(&rule, b"anything"), Some(t0));
        assert_eq!(out.oldest(), Some(t0 + Duration::from_millis(1)));
        assert_eq!(out.clear(), 1);
        assert!(out.is_empty());
    }

    #[test]
    fn field_answers_the_message_with_that_id() {
        let mut rule = Rule::new(r#"{"id": 0, "text": "hi"}"#, Some("id")).expect("valid");
        assert_eq!(rule.name(), "field:id");
        let m = rule.message(7);
        let sent: Value = serde_json::from_slice(&m).expect("json");
        assert_eq!(sent["id"], 7);
        assert_eq!(sent["text"], "hi");
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(1);
        let mut out = Outstanding::default();
        out.push(6, t0);
        out.push(7, t1);
        let cases: [(&str, &[u8], Option<Instant>); 5] = [
            ("not json", b"id 7", None),
            ("no field", br#"{"n": 7}"#, None),
            ("an id never sent", br#"{"id": 9}"#, None),
            ("out of order", br#"{"id": 7, "text": "hi"}"#, Some(t1)),
            ("answered once", br#"{"id": 7}"#, None),
        ];
        for (label, reply, want) in cases {
            assert_eq!(out.answer(&rule, reply), want, "{label}");
        }
        assert_eq!((out.len(), out.oldest()), (1, Some(t0)));
    }

    #[test]
    fn a_field_needs_a_json_object() {
        for message in ["hi", "[1]", "7"] {
            let err = Rule::new(message, Some("id")).expect_err(message);
            assert!(err.to_string().contains("JSON object"), "{message}: {err}");
        }
        assert!(Rule::new("{}", Some("")).is_err());
    }
}

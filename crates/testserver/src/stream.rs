//! Streamed answers, the truth probes of a streaming client: server-sent events (`/sse`) and
//! OpenAI-compatible completions (`/v1/completions`, `/v1/chat/completions`, streamed when
//! the request body says `"stream": true`).
//!
//! A stream's first piece leaves `first` after its request arrived and piece k at
//! `first + k * every`, on an absolute schedule (a write that ran late does not move the
//! next one), so a client reads a time to first byte of `first` and gaps of `every`. In
//! capacity mode (`--capacity N --service-time S`) the schedule starts when the request's
//! service ended instead: the slot is its prefill, so N streams are begun at once, each S,
//! and the rest wait their turn: the time to first byte is the wait plus S plus `first`,
//! and grows with the load past the concurrency N streams sustain. Each
//! piece is one SSE event in one HTTP chunk, written and flushed on its own. The server
//! counts what it wrote: `stream_responses`, `stream_events` (a completion's closing event
//! and its `data: [DONE]` included) and `completion_tokens`.

use std::io::Write as _;
use std::time::{Duration, Instant};

use crate::latency::parse_duration;

/// MAX_PIECES caps `events=` and `tokens=`: a stream is a test's, not an endless one.
pub(crate) const MAX_PIECES: u32 = 1_000_000;

/// WORDS are the tokens a completion streams, in turn.
const WORDS: [&str; 8] = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
];

/// Kind is what a stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Sse is `/sse`: events `id: K` / `data: {"n":K}`.
    Sse,
    /// Chat is `/v1/chat/completions`: one token a chunk in `choices[0].delta.content`.
    Chat,
    /// Text is `/v1/completions`: one token a chunk in `choices[0].text`.
    Text,
}

/// Stream is a streamed answer's shape: what it carries and its pace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stream {
    /// kind: SSE events or completion tokens.
    pub(crate) kind: Kind,
    /// first: from the request's arrival to the first piece (`first=`).
    pub(crate) first: Duration,
    /// every: between two pieces (`every=`).
    pub(crate) every: Duration,
    /// count: how many pieces (`events=`, `tokens=`; a completion's `max_tokens` wins).
    pub(crate) count: u32,
}

impl Stream {
    /// sse is `/sse`'s default: 10 events, the first at once, then one every 100 ms.
    pub(crate) const fn sse() -> Stream {
        Stream {
            kind: Kind::Sse,
            first: Duration::ZERO,
            every: Duration::from_millis(100),
            count: 10,
        }
    }

    /// completion is a completion endpoint's default: 16 tokens, the first after 50 ms, then
    /// one every 20 ms.
    pub(crate) const fn completion(kind: Kind) -> Stream {
        Stream {
            kind,
            first: Duration::from_millis(50),
            every: Duration::from_millis(20),
            count: 16,
        }
    }

    /// set applies one query parameter; false when `key` is not a stream's.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        match key {
            "first" => self.first = parse_duration(value)?,
            "every" => self.every = parse_duration(value)?,
            "events" | "tokens" => self.count = parse_count(key, value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// is_completion says whether this is a completion endpoint's (its request body decides
    /// whether it streams).
    pub(crate) fn is_completion(&self) -> bool {
        self.kind != Kind::Sse
    }

    /// due is when piece `k` leaves, for a request that arrived at `arrived`.
    pub(crate) fn due(&self, arrived: Instant, k: u32) -> Instant {
        arrived + self.first + self.every * k
    }

    /// piece appends piece `k` as one SSE event (a completion's token `k`).
    pub(crate) fn piece(&self, k: u32, out: &mut Vec<u8>) {
        let word = WORDS[k as usize % WORDS.len()];
        // Writing into a Vec cannot fail.
        let _ = match self.kind {
            Kind::Sse => write!(out, "id: {k}\ndata: {{\"n\":{k}}}\n\n"),
            Kind::Chat if k == 0 => write!(
                out,
                "data: {{{CHUNK},\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"{word}\"}},\"finish_reason\":null}}]}}\n\n"
            ),
            Kind::Chat => write!(
                out,
                "data: {{{CHUNK},\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" {word}\"}},\"finish_reason\":null}}]}}\n\n"
            ),
            Kind::Text => write!(
                out,
                "data: {{{TEXT_CHUNK},\"choices\":[{{\"index\":0,\"text\":\"{}{word}\",\"finish_reason\":null}}]}}\n\n",
                if k == 0 { "" } else { " " }
            ),
        };
    }

    /// closing appends the events after the last piece (a completion's last chunk, with its
    /// finish reason and usage, then `data: [DONE]`), and returns how many.
    pub(crate) fn closing(&self, out: &mut Vec<u8>) -> u64 {
        let n = self.count;
        let _ = match self.kind {
            Kind::Sse => return 0,
            Kind::Chat => write!(
                out,
                "data: {{{CHUNK},\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"length\"}}],{}}}\n\n",
                usage(n)
            ),
            Kind::Text => write!(
                out,
                "data: {{{TEXT_CHUNK},\"choices\":[{{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}}],{}}}\n\n",
                usage(n)
            ),
        };
        out.extend_from_slice(b"data: [DONE]\n\n");
        2
    }

    /// whole appends the answer of a completion asked for without `stream` (all its tokens
    /// in one JSON body, sent when the last would have been).
    pub(crate) fn whole(&self, out: &mut Vec<u8>) {
        let mut text = String::new();
        for k in 0..self.count {
            if k > 0 {
                text.push(' ');
            }
            text.push_str(WORDS[k as usize % WORDS.len()]);
        }
        let usage = usage(self.count);
        let _ = match self.kind {
            Kind::Chat => write!(
                out,
                "{{\"id\":\"chatcmpl-redline\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"redline-probe\",\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"{text}\"}},\"finish_reason\":\"length\"}}],{usage}}}"
            ),
            _ => write!(
                out,
                "{{\"id\":\"cmpl-redline\",\"object\":\"text_completion\",\"created\":0,\"model\":\"redline-probe\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"finish_reason\":\"length\"}}],{usage}}}"
            ),
        };
    }
}

/// CHUNK and TEXT_CHUNK open every chunk of a chat and a text completion.
const CHUNK: &str =
    "\"id\":\"chatcmpl-redline\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"redline-probe\"";
const TEXT_CHUNK: &str =
    "\"id\":\"cmpl-redline\",\"object\":\"text_completion\",\"created\":0,\"model\":\"redline-probe\"";

fn usage(tokens: u32) -> String {
    format!("\"usage\":{{\"prompt_tokens\":0,\"completion_tokens\":{tokens},\"total_tokens\":{tokens}}}")
}

fn parse_count(key: &str, value: &str) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(n) if n <= MAX_PIECES => Ok(n),
        _ => Err(format!(
            "bad {key} {value:?}: expected a count from 0 to {MAX_PIECES}"
        )),
    }
}

/// Ask is what a completion's request body asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Ask {
    /// stream: `"stream": true`.
    pub(crate) stream: bool,
    /// max_tokens: `"max_tokens"` (or `"max_completion_tokens"`), if given.
    pub(crate) max_tokens: Option<u32>,
}

/// ask reads a completion's request body; the error is a one-line reason for a 400.
pub(crate) fn ask(body: &[u8]) -> Result<Ask, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("bad completion request: {e}"))?;
    let stream = v.get("stream").and_then(serde_json::Value::as_bool) == Some(true);
    let max = v
        .get("max_tokens")
        .or_else(|| v.get("max_completion_tokens"));
    let max_tokens = match max {
        None | Some(serde_json::Value::Null) => None,
        Some(m) => match m.as_u64() {
            Some(n) if n <= u64::from(MAX_PIECES) => Some(n as u32),
            _ => {
                return Err(format!(
                    "bad completion request: max_tokens must be a count from 0 to {MAX_PIECES}"
                ))
            }
        },
    };
    Ok(Ask { stream, max_tokens })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_absolute() {
        let s = Stream {
            kind: Kind::Sse,
            first: Duration::from_millis(200),
            every: Duration::from_millis(20),
            count: 50,
        };
        let t0 = Instant::now();
        assert_eq!(s.due(t0, 0), t0 + Duration::from_millis(200));
        assert_eq!(s.due(t0, 49), t0 + Duration::from_millis(200 + 49 * 20));
    }

    #[test]
    fn pieces_are_sse_events() {
        // (label, stream, piece index, text)
        let cases: &[(&str, Kind, u32, &str)] = &[
            ("sse", Kind::Sse, 3, "id: 3\ndata: {\"n\":3}\n\n"),
            (
                "chat first",
                Kind::Chat,
                0,
                "\"delta\":{\"role\":\"assistant\",\"content\":\"lorem\"}",
            ),
            (
                "chat next",
                Kind::Chat,
                1,
                "\"delta\":{\"content\":\" ipsum\"}",
            ),
            ("text", Kind::Text, 2, "\"text\":\" dolor\""),
        ];
        for (label, kind, k, want) in cases {
            let mut out = Vec::new();
            Stream::completion(*kind).piece(*k, &mut out);
            let text = String::from_utf8(out).expect("utf-8");
            assert!(text.contains(want), "{label}: {text}");
            assert!(text.ends_with("\n\n"), "{label}: one event");
            assert_eq!(text.matches("\n\n").count(), 1, "{label}: one event");
            if *kind != Kind::Sse {
                let json = text.trim().strip_prefix("data: ").expect("data line");
                serde_json::from_str::<serde_json::Value>(json).expect(label);
            }
        }
    }

    #[test]
    fn completions_close_with_done() {
        let mut out = Vec::new();
        let n = Stream::completion(Kind::Chat).closing(&mut out);
        let text = String::from_utf8(out).expect("utf-8");
        assert_eq!(n, 2);
        assert_eq!(text.matches("\n\n").count(), 2);
        assert!(text.ends_with("data: [DONE]\n\n"));
        assert!(text.contains("\"completion_tokens\":16"));
        assert_eq!(Stream::sse().closing(&mut Vec::new()), 0);
        let mut whole = Vec::new();
        Stream::completion(Kind::Text).whole(&mut whole);
        let v: serde_json::Value = serde_json::from_slice(&whole).expect("json");
        assert_eq!(v["usage"]["completion_tokens"], 16);
    }

    #[test]
    fn parameters_and_bodies_parse() {
        let mut s = Stream::sse();
        assert_eq!(s.set("first", "200ms"), Ok(true));
        assert_eq!(s.set("every", "20ms"), Ok(true));
        assert_eq!(s.set("events", "50"), Ok(true));
        assert_eq!(s.set("size", "1"), Ok(false));
        assert_eq!(
            (s.first, s.every, s.count),
            (Duration::from_millis(200), Duration::from_millis(20), 50)
        );
        assert!(s.set("events", "-1").is_err());
        assert!(s.set("tokens", "1000001").is_err());
        assert!(s.set("every", "20").is_err());
        let cases: &[(&str, Result<Ask, &str>)] = &[
            ("{}", Ok(Ask::default())),
            (
                r#"{"stream": true, "max_tokens": 8}"#,
                Ok(Ask {
                    stream: true,
                    max_tokens: Some(8),
                }),
            ),
            (
                r#"{"stream": false, "max_completion_tokens": 3}"#,
                Ok(Ask {
                    stream: false,
                    max_tokens: Some(3),
                }),
            ),
            (r#"{"max_tokens": -2}"#, Err("max_tokens")),
            ("not json", Err("bad completion request")),
        ];
        for (body, want) in cases {
            match (ask(body.as_bytes()), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{body}"),
                (Err(got), Err(want)) => {
                    assert!(got.contains(want), "{body}: {got}");
                    assert!(!got.contains('\n'), "{body}: one line");
                }
                (got, want) => panic!("{body}: {got:?} against {want:?}"),
            }
        }
    }
}

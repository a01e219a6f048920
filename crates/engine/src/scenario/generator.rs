//! Generators: values a `set` step draws when the flow reaches it (a UUID, a random integer
//! or string, the time), kept in a variable so that every use of it within the iteration
//! (a header, and the signed text that holds it) sees the same value. A deterministic
//! function of other values is a template part instead ([`super::function`]).

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::rng::Rng;

/// ALPHANUMERIC: `random_string`'s alphabet unless one is given.
const ALPHANUMERIC: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// TimeFormat is how `now` writes the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFormat {
    /// Unix: whole seconds since 1970.
    Unix,
    /// UnixMs: milliseconds since 1970.
    UnixMs,
    /// Rfc3339: `2026-11-28T06:30:00Z`.
    Rfc3339,
    /// Rfc3339Ms: `2026-11-28T06:30:00.123Z`.
    Rfc3339Ms,
}

/// Generator is what a `set` step draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Generator {
    /// Uuid4: a random (version 4) UUID, lower-case and hyphenated.
    Uuid4,
    /// RandomInt: an integer uniform in `low..=high`.
    RandomInt {
        /// low: the least value.
        low: i64,
        /// high: the greatest value.
        high: i64,
    },
    /// RandomString: `len` characters drawn uniformly from `alphabet`.
    RandomString {
        /// len: how many characters.
        len: usize,
        /// alphabet: the characters drawn from.
        alphabet: Vec<char>,
    },
    /// Now: the wall-clock time.
    Now(TimeFormat),
}

impl Generator {
    /// parse reads a set step's `fn` and `args`; the error is a one-line reason.
    pub fn parse(func: &str, args: &[Value]) -> Result<Generator, String> {
        let int = |i: usize| args.get(i).and_then(Value::as_i64);
        let text = |i: usize| args.get(i).and_then(Value::as_str);
        Ok(match (func, args.len()) {
            ("uuid4", 0) => Generator::Uuid4,
            ("random_int", 2) => match (int(0), int(1)) {
                (Some(low), Some(high)) if low <= high => Generator::RandomInt { low, high },
                _ => return Err("random_int needs two integers, low <= high".into()),
            },
            ("random_string", 1 | 2) => {
                let alphabet: Vec<char> = match args.get(1) {
                    None => ALPHANUMERIC.chars().collect(),
                    Some(_) => text(1).unwrap_or("").chars().collect(),
                };
                match int(0) {
                    Some(len) if (1..=4096).contains(&len) && !alphabet.is_empty() => {
                        Generator::RandomString {
                            len: len as usize,
                            alphabet,
                        }
                    }
                    _ => {
                        return Err(
                            "random_string needs a length from 1 to 4096 and a non-empty alphabet"
                                .into(),
                        )
                    }
                }
            }
            ("now", 1) => Generator::Now(match text(0) {
                Some("unix") => TimeFormat::Unix,
                Some("unix_ms") => TimeFormat::UnixMs,
                Some("rfc3339") => TimeFormat::Rfc3339,
                Some("rfc3339_ms") => TimeFormat::Rfc3339Ms,
                _ => return Err("now's format must be unix, unix_ms, rfc3339 or rfc3339_ms".into()),
            }),
            ("uuid4" | "random_int" | "random_string" | "now", n) => {
                return Err(format!("{func} does not take {n} arguments"))
            }
            _ => return Err(format!("unknown generator {func:?}")),
        })
    }

    /// draw writes a fresh value into `out` (cleared first; no allocation once it has grown).
    pub fn draw(&self, rng: &mut Rng, now: SystemTime, out: &mut String) {
        out.clear();
        match self {
            Generator::Uuid4 => {
                let mut bytes = [0u8; 16];
                bytes[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
                bytes[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
                let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
                let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
                out.push_str(id.hyphenated().encode_lower(&mut buf));
            }
            Generator::RandomInt { low, high } => {
                let span = (i128::from(*high) - i128::from(*low) + 1) as u128;
                let draw = if span > u128::from(u64::MAX) {
                    rng.next_u64()
                } else {
                    rng.below(span as u64)
                };
                let v = (i128::from(*low) + i128::from(draw)) as i64;
                let _ = write!(out, "{v}");
            }
            Generator::RandomString { len, alphabet } => {
                for _ in 0..*len {
                    out.push(alphabet[rng.below(alphabet.len() as u64) as usize]);
                }
            }
            Generator::Now(format) => {
                let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
                let _ = match format {
                    TimeFormat::Unix => write!(out, "{}", since.as_secs()),
                    TimeFormat::UnixMs => write!(out, "{}", since.as_millis()),
                    TimeFormat::Rfc3339 => {
                        write!(out, "{}", humantime::format_rfc3339_seconds(now))
                    }
                    TimeFormat::Rfc3339Ms => {
                        write!(out, "{}", humantime::format_rfc3339_millis(now))
                    }
                };
            }
        }
    }
}

/// entropy_seed: a seed from the operating system, so that the UUIDs and random strings of
/// VUs with the same number in other processes (a cluster's injectors) differ.
pub fn entropy_seed(vu: u64) -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        t ^ vu.rotate_left(32) ^ u64::from(std::process::id())
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn gen(func: &str, args: Value) -> Result<Generator, String> {
        Generator::parse(func, args.as_array().expect("a list"))
    }

    #[test]
    fn draws_have_their_shape() {
        let mut rng = Rng::new(entropy_seed(0));
        let at = UNIX_EPOCH + Duration::from_millis(1_764_311_400_123);
        let mut out = String::new();
        let mut seen = HashSet::new();
        let uuid = gen("uuid4", json!([])).unwrap();
        for _ in 0..10_000 {
            uuid.draw(&mut rng, at, &mut out);
            let b = out.as_bytes();
            assert_eq!(b.len(), 36, "{out}");
            assert_eq!(
                (b[8], b[13], b[14], b[18], b[23]),
                (b'-', b'-', b'4', b'-', b'-')
            );
            assert!(matches!(b[19], b'8' | b'9' | b'a' | b'b'), "{out}");
            assert!(seen.insert(out.clone()), "a repeated UUID");
        }
        let dice = gen("random_int", json!([-3, 3])).unwrap();
        let mut faces = HashSet::new();
        for _ in 0..1_000 {
            dice.draw(&mut rng, at, &mut out);
            let v: i64 = out.parse().unwrap();
            assert!((-3..=3).contains(&v));
            faces.insert(v);
        }
        assert_eq!(faces.len(), 7);
        gen("random_string", json!([12, "ab"]))
            .unwrap()
            .draw(&mut rng, at, &mut out);
        assert!(
            out.len() == 12 && out.chars().all(|c| c == 'a' || c == 'b'),
            "{out}"
        );
        let cases = [
            ("unix", "1764311400"),
            ("unix_ms", "1764311400123"),
            ("rfc3339", "2025-11-28T06:30:00Z"),
            ("rfc3339_ms", "2025-11-28T06:30:00.123Z"),
        ];
        for (format, want) in cases {
            gen("now", json!([format]))
                .unwrap()
                .draw(&mut rng, at, &mut out);
            assert_eq!(out, want, "{format}");
        }
    }

    #[test]
    fn bad_generators_are_reasons() {
        for (func, args, words) in [
            ("uuid5", json!([]), "unknown generator"),
            ("random_int", json!([3, 1]), "low <= high"),
            ("random_string", json!([0]), "length from 1"),
            ("now", json!(["iso"]), "format must be"),
            ("uuid4", json!([1]), "does not take 1"),
        ] {
            let err = gen(func, args).unwrap_err();
            assert!(err.contains(words), "{err}");
        }
    }
}

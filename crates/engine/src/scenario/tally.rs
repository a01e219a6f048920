//! Tallies: what the service said, counted. A request written with `tally="$.status"` counts
//! the value at that JSON path in each answer that ends it (QUEUED, RUNNING, SUCCEEDED,
//! FAILED), per interval and over the run, under the request's name: seed 000's author
//! logged exactly this to watch the service's queue fill and drain.
//!
//! A [`Tally`] is bounded: at most [`MAX_VALUES`] distinct values per name, the rest under
//! [`OTHER`] (an id or a timestamp at the path must not grow memory without end), and a
//! value longer than [`MAX_LEN`] bytes is counted as [`LONG`]. An interval's tally is cleared
//! by zeroing its counts, keeping its keys, so a warmed-up run allocates nothing for it.

use std::collections::BTreeMap;

use super::json::{find_into, Text};
use super::spec::PathSeg;

/// MAX_VALUES bounds the distinct values kept per request name.
pub const MAX_VALUES: usize = 32;

/// MAX_LEN bounds the length of a value counted as itself.
pub const MAX_LEN: usize = 40;

/// OTHER counts the values past [`MAX_VALUES`].
pub const OTHER: &str = "(other)";

/// MISSING counts answers whose JSON has no value at the path.
pub const MISSING: &str = "(missing)";

/// NOT_JSON counts answers whose body is not JSON (an error page, an empty body).
pub const NOT_JSON: &str = "(not JSON)";

/// LONG counts values longer than [`MAX_LEN`].
pub const LONG: &str = "(a long value)";

/// Tally counts values, bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally(BTreeMap<String, u64>);

impl Tally {
    /// add counts `n` more of `value` (under [`OTHER`] once [`MAX_VALUES`] are kept).
    pub fn add(&mut self, value: &str, n: u64) {
        if let Some(c) = self.0.get_mut(value) {
            *c += n;
            return;
        }
        let key = if self.0.len() < MAX_VALUES {
            value
        } else {
            OTHER
        };
        *self.0.entry(key.to_string()).or_insert(0) += n;
    }

    /// merge adds another tally's counts to these.
    pub fn merge(&mut self, o: &Tally) {
        for (value, &n) in &o.0 {
            if n > 0 {
                self.add(value, n);
            }
        }
    }

    /// reset zeroes every count, keeping the values seen (no allocation when they recur).
    pub fn reset(&mut self) {
        for c in self.0.values_mut() {
            *c = 0;
        }
    }

    /// counts returns the values counted at least once, with their counts.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.0
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (k.clone(), n))
            .collect()
    }

    /// total is the number of answers counted.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

/// value_of writes into `out` what a tally counts for `body`: the string at `path` as itself,
/// any other JSON value as its JSON text, else [`MISSING`], [`NOT_JSON`] or [`LONG`]. A
/// scalar at the path is written straight from the body into `out` (no `Value`, no
/// allocation once `out` has grown to the values' length).
pub fn value_of(body: &[u8], path: &[PathSeg], out: &mut String) {
    out.clear();
    let mut text = Text {
        out: &mut *out,
        found: false,
    };
    let read = find_into(body, path, &mut text);
    let found = text.found;
    match read {
        Err(_) => {
            out.clear();
            out.push_str(NOT_JSON);
        }
        Ok(()) if !found => {
            out.clear();
            out.push_str(MISSING);
        }
        Ok(()) => {}
    }
    if out.len() > MAX_LEN {
        out.clear();
        out.push_str(LONG);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(keys: &[&str]) -> Vec<PathSeg> {
        keys.iter()
            .map(|k| PathSeg::Key((*k).to_string()))
            .collect()
    }

    #[test]
    fn values_are_read_as_a_user_would_name_them() {
        let status = path(&["status"]);
        let cases: &[(&str, &[u8], &str)] = &[
            ("a string", br#"{"status":"RUNNING","id":"a"}"#, "RUNNING"),
            ("a number", br#"{"status":3}"#, "3"),
            ("null", br#"{"status":null}"#, "null"),
            ("a bool", br#"{"status":true}"#, "true"),
            ("missing", br#"{"state":"x"}"#, MISSING),
            ("not JSON", b"<html>busy</html>", NOT_JSON),
            ("empty", b"", NOT_JSON),
            (
                "long",
                br#"{"status":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#,
                LONG,
            ),
        ];
        let mut out = String::new();
        for (label, body, want) in cases {
            value_of(body, &status, &mut out);
            assert_eq!(out, *want, "{label}");
        }
    }

    #[test]
    fn a_tally_is_bounded_keeps_its_values_when_reset_and_merges() {
        let mut a = Tally::default();
        for i in 0..(MAX_VALUES + 5) {
            a.add(&format!("v{i}"), 1);
        }
        a.add("v0", 2);
        let c = a.counts();
        assert_eq!(c.len(), MAX_VALUES + 1);
        assert_eq!((c["v0"], c[OTHER]), (3, 5));
        assert_eq!(a.total(), (MAX_VALUES + 5 + 2) as u64);
        a.reset();
        assert!(a.counts().is_empty() && a.total() == 0);
        a.add("v1", 1);
        assert_eq!(a.counts(), BTreeMap::from([("v1".to_string(), 1)]));
        let mut b = Tally::default();
        b.add("v1", 4);
        b.add("new", 1);
        b.merge(&a);
        assert_eq!(b.counts()["v1"], 5);
        // Merged into a full tally, an unseen value counts as OTHER.
        let mut full = Tally::default();
        for i in 0..MAX_VALUES {
            full.add(&format!("v{i}"), 1);
        }
        full.merge(&b);
        assert_eq!(full.counts()[OTHER], 1);
        assert_eq!(full.total(), MAX_VALUES as u64 + 6);
    }
}

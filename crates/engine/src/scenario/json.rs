//! JSON paths in response bodies, looked up without building the document.
//!
//! A check or an extraction wants one value (`$.status`, `$.id`) of a body that holds many.
//! Parsing the body into a `serde_json::Value` allocates a map node and a string per field
//! and frees them all again: on the seed-000 flow (a status poll of ten fields, ten thousand
//! times a second) that was a quarter of the executor's user time. [`find`] instead walks
//! the body once with serde_json's deserializer, skipping every field not on the path
//! (`IgnoredAny` reads strings and numbers without allocating) and comparing keys in place;
//! only the value at the path is materialised. The whole body is still read and validated,
//! trailing bytes included, so what counts as JSON is what `serde_json::from_slice` accepts
//! (same recursion limit) with one difference: a lone UTF-16 surrogate escape (`"\ud800"`,
//! which the JSON grammar allows but a Rust string cannot hold) is refused only in the value
//! at the path, not in fields skipped over. A duplicated key is found as a map would keep
//! it: the last occurrence wins.

use std::fmt::{self, Write as _};

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::spec::PathSeg;

/// NotJson: the body is not a JSON document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotJson;

/// find returns the value at `path` in the JSON document `body` (None: no such value), or
/// [`NotJson`].
pub fn find(body: &[u8], path: &[PathSeg]) -> Result<Option<Value>, NotJson> {
    let mut out = None;
    find_into(body, path, &mut out)?;
    Ok(out)
}

/// find_into reads the document `body` and hands the value at `path`, if any, to `leaf`.
pub fn find_into<L: Leaf>(body: &[u8], path: &[PathSeg], leaf: &mut L) -> Result<(), NotJson> {
    let mut de = serde_json::Deserializer::from_slice(body);
    Find { path, out: leaf }
        .deserialize(&mut de)
        .map_err(|_| NotJson)?;
    de.end().map_err(|_| NotJson)
}

/// Leaf is what receives the value at the path: the value itself (`Option<Value>`, for checks
/// and extractions, which compare or keep it) or only its text ([`Text`], for tallies).
pub trait Leaf {
    /// forget drops what an earlier occurrence of a duplicated key left.
    fn forget(&mut self);
    /// read takes the value at the path from the document.
    fn read<'de, D: Deserializer<'de>>(&mut self, d: D) -> Result<(), D::Error>;
    /// keep takes the value at the path already parsed (after a negative index).
    fn keep(&mut self, v: &Value);
}

impl Leaf for Option<Value> {
    fn forget(&mut self) {
        *self = None;
    }
    fn read<'de, D: Deserializer<'de>>(&mut self, d: D) -> Result<(), D::Error> {
        *self = Some(Value::deserialize(d)?);
        Ok(())
    }
    fn keep(&mut self, v: &Value) {
        *self = Some(v.clone());
    }
}

/// Text writes the value at the path as text into a buffer the caller keeps: a string as
/// itself, any other value as its JSON text (what `Value::to_string` gives). A string,
/// number, boolean or null is written without building a `Value`, so a tally counts the
/// status of ten thousand answers a second without allocating; an object or array at the
/// path (rare) is parsed to be written. `found` says whether the path held a value.
pub struct Text<'a> {
    /// out receives the text.
    pub out: &'a mut String,
    /// found: the path held a value.
    pub found: bool,
}

impl Leaf for Text<'_> {
    fn forget(&mut self) {
        self.out.clear();
        self.found = false;
    }
    fn read<'de, D: Deserializer<'de>>(&mut self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(Write(self.out))?;
        self.found = true;
        Ok(())
    }
    fn keep(&mut self, v: &Value) {
        match v {
            Value::String(s) => self.out.push_str(s),
            v => {
                let _ = write!(self.out, "{v}");
            }
        }
        self.found = true;
    }
}

/// Write writes the value it visits into a string, as [`Text`] says.
struct Write<'a>(&'a mut String);

impl<'de> Visitor<'de> for Write<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.0.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        let _ = write!(self.0, "{v}");
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        let _ = write!(self.0, "{v}");
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // serde_json writes a parsed (so finite) float as its Number does.
        match serde_json::Number::from_f64(v) {
            Some(n) => {
                let _ = write!(self.0, "{n}");
            }
            None => self.0.push_str("null"),
        }
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push_str(v);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.push_str("null");
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let v = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        let _ = write!(self.0, "{v}");
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        let v = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        let _ = write!(self.0, "{v}");
        Ok(())
    }
}

/// Find reads one value, handing the part of it at `path` (if any) to `out`.
struct Find<'p, L> {
    path: &'p [PathSeg],
    out: &'p mut L,
}

impl<'de, L: Leaf> DeserializeSeed<'de> for Find<'_, L> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.path.split_first() {
            None => self.out.read(d),
            Some((seg, rest)) => d.deserialize_any(Walk {
                seg,
                rest,
                out: self.out,
            }),
        }
    }
}

/// Walk visits a value that path segment `seg` (then `rest`) must enter; a value the segment
/// does not fit (a key into an array, anything into a scalar) holds nothing at the path.
struct Walk<'p, L> {
    seg: &'p PathSeg,
    rest: &'p [PathSeg],
    out: &'p mut L,
}

impl<'de, L: Leaf> Visitor<'de> for Walk<'_, L> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let want = match self.seg {
            PathSeg::Key(k) => Some(k.as_str()),
            PathSeg::Index(_) => None,
        };
        while let Some(hit) = map.next_key_seed(KeyIs(want))? {
            if hit {
                // A later duplicate replaces an earlier one, as in a parsed map.
                self.out.forget();
                map.next_value_seed(Find {
                    path: self.rest,
                    out: &mut *self.out,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let i = match self.seg {
            PathSeg::Index(i) => *i,
            PathSeg::Key(_) => {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(());
            }
        };
        if i < 0 {
            // Counting from the end needs the length: keep the elements (rare; the path's
            // remainder is then followed in the parsed element).
            let mut items = Vec::new();
            while let Some(v) = seq.next_element::<Value>()? {
                items.push(v);
            }
            let at = items.len() as i64 + i;
            if let Some(v) = usize::try_from(at)
                .ok()
                .and_then(|at| items.get(at))
                .and_then(|v| lookup(v, self.rest))
            {
                self.out.keep(v);
            }
            return Ok(());
        }
        let mut n = 0i64;
        loop {
            if n == i {
                if seq
                    .next_element_seed(Find {
                        path: self.rest,
                        out: &mut *self.out,
                    })?
                    .is_none()
                {
                    return Ok(());
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            n += 1;
        }
    }
}

/// KeyIs reads an object key and says whether it is the wanted one, comparing in place.
struct KeyIs<'p>(Option<&'p str>);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, k: &str) -> Result<bool, E> {
        Ok(self.0 == Some(k))
    }
}

/// lookup follows `path` into an already parsed value.
pub fn lookup<'a>(doc: &'a Value, path: &[PathSeg]) -> Option<&'a Value> {
    let mut v = doc;
    for seg in path {
        v = match (seg, v) {
            (PathSeg::Key(k), Value::Object(m)) => m.get(k)?,
            (PathSeg::Index(i), Value::Array(a)) => {
                let len = a.len() as i64;
                let at = if *i < 0 { len + i } else { *i };
                a.get(usize::try_from(at).ok()?)?
            }
            _ => return None,
        };
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &[&str]) -> Vec<PathSeg> {
        p.iter()
            .map(|s| match s.parse::<i64>() {
                Ok(i) => PathSeg::Index(i),
                Err(_) => PathSeg::Key(s.to_string()),
            })
            .collect()
    }

    const DOCS: &[&str] = &[
        r#"{"id":"ab","n":[1,2,{"k":[true,null]}],"o":{"k":true},"s":"x\"y\u00e9"}"#,
        r#"{"a":1,"a":{"b":2}}"#,
        r#"{"a":{"b":2},"a":1}"#,
        r#"[10,[20,21],{"x":"y"}]"#,
        r#"  {"\u0069d": 7, "e": 1e3, "neg": -4, "big": 18446744073709551615}  "#,
        r#"{"e":1.5,"neg":-0.0,"big":123456789012345678901234567890,"id":false}"#,
        r#""just a string""#,
        "42",
        "null",
        r#"{"a":1} trailing"#,
        r#"{"a":1"#,
        r#"{"a":[1,2,]}"#,
        "",
        "not json",
    ];

    const PATHS: &[&[&str]] = &[
        &[],
        &["id"],
        &["n"],
        &["n", "0"],
        &["n", "-1"],
        &["n", "-1", "k", "1"],
        &["n", "2", "k", "-2"],
        &["n", "3"],
        &["n", "-4"],
        &["o", "k"],
        &["o", "k", "z"],
        &["s"],
        &["a"],
        &["a", "b"],
        &["0"],
        &["1", "1"],
        &["-1", "x"],
        &["2", "x"],
        &["e"],
        &["neg"],
        &["big"],
        &["zz"],
    ];

    /// Every case must agree with parsing the whole document and following the path in it
    /// (the behaviour this module replaces), including what is not JSON.
    #[test]
    fn agrees_with_the_parsed_document() {
        let mut checked = 0;
        for doc in DOCS {
            let parsed: Result<Value, _> = serde_json::from_str(doc);
            for p in PATHS {
                let p = path(p);
                let want = match &parsed {
                    Ok(v) => Ok(lookup(v, &p).cloned()),
                    Err(_) => Err(NotJson),
                };
                assert_eq!(find(doc.as_bytes(), &p), want, "{doc} {p:?}");
                checked += 1;
            }
        }
        assert_eq!(checked, DOCS.len() * PATHS.len());
    }

    /// Text, which writes a scalar without building a Value, must say what the Value would:
    /// a string as itself, anything else as `Value::to_string`.
    #[test]
    fn text_agrees_with_the_value_it_does_not_build() {
        let mut out = String::from("stale");
        for doc in DOCS {
            for p in PATHS {
                let p = path(p);
                let want = find(doc.as_bytes(), &p).map(|v| {
                    v.map(|v| match v {
                        Value::String(s) => s,
                        v => v.to_string(),
                    })
                });
                out.clear();
                let mut text = Text {
                    out: &mut out,
                    found: false,
                };
                let got = find_into(doc.as_bytes(), &p, &mut text).map(|()| text.found);
                let got = got.map(|found| found.then(|| out.clone()));
                assert_eq!(got, want, "{doc} {p:?}");
            }
        }
    }

    #[test]
    fn a_lone_surrogate_matters_only_at_the_path() {
        let doc = br#"{"a":"\ud800","b":1}"#;
        assert_eq!(find(doc, &path(&["b"])), Ok(Some(Value::from(1))));
        assert_eq!(find(doc, &path(&["a"])), Err(NotJson));
    }

    #[test]
    fn too_deep_is_not_json_as_in_serde_json() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert_eq!(find(deep.as_bytes(), &path(&["0"])), Err(NotJson));
    }
}

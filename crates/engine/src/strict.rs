//! strict: serde readers that take a flag only as a boolean.
//!
//! A config crosses from Python as the dict it is (pythonize), and pythonize reads a `bool`
//! field by the value's truthiness: `{"insecure": 1}` or `{"open": "no"}` would be taken as
//! true. These read the value as whatever it is (`deserialize_any`) and accept only a
//! boolean, so such a value is refused with the field named (serde_path_to_error), as JSON
//! would refuse it. Used with `#[serde(deserialize_with = ...)]` on the configs' flags.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// Flag is the visitor that takes a boolean (and, for an optional flag, None) and nothing else.
struct Flag;

impl<'de> Visitor<'de> for Flag {
    type Value = Option<bool>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("true or false")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// flag reads a required boolean: true or false, nothing else (None/null is refused too).
pub(crate) fn flag<'de, D: Deserializer<'de>>(input: D) -> Result<bool, D::Error> {
    input
        .deserialize_any(Flag)?
        .ok_or_else(|| de::Error::invalid_type(de::Unexpected::Unit, &"true or false"))
}

/// optional_flag reads an optional boolean: true, false, or None/null.
pub(crate) fn optional_flag<'de, D: Deserializer<'de>>(input: D) -> Result<Option<bool>, D::Error> {
    input.deserialize_any(Flag)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Flags {
        #[serde(default, deserialize_with = "super::flag")]
        on: bool,
        #[serde(default, deserialize_with = "super::optional_flag")]
        maybe: Option<bool>,
    }

    #[test]
    fn only_a_boolean_is_a_flag() {
        let read = |json: &str| serde_json::from_str::<Flags>(json).map_err(|e| e.to_string());
        let cases = [
            (
                "both",
                r#"{"on": true, "maybe": false}"#,
                Ok((true, Some(false))),
            ),
            ("absent", "{}", Ok((false, None))),
            ("null optional", r#"{"maybe": null}"#, Ok((false, None))),
            (
                "one",
                r#"{"on": 1}"#,
                Err("integer `1`, expected true or false"),
            ),
            (
                "string",
                r#"{"maybe": "yes"}"#,
                Err("string \"yes\", expected true or false"),
            ),
            (
                "null required",
                r#"{"on": null}"#,
                Err("null, expected true or false"),
            ),
        ];
        for (label, json, want) in cases {
            match (read(json), want) {
                (Ok(got), Ok((on, maybe))) => assert_eq!(got, Flags { on, maybe }, "{label}"),
                (Err(e), Err(want)) => assert!(e.contains(want), "{label}: {e}"),
                (got, want) => panic!("{label}: got {got:?}, want {want:?}"),
            }
        }
    }
}

//! Conditions: what a flow's `when`, `until` and `stop_iteration` decide on, per VU, during
//! the run: a comparison of a variable's value with a constant or another variable, a
//! value in a set, a variable matching a regular expression, a check on the response the VU
//! received last, and their combinations. Deciding one reads the VU's variables in place
//! (numbers are parsed from their text on the stack): no allocation, except where a JSON
//! check parses the one value it looks at (see [`super::json`]).

use std::cmp::Ordering;

use regex::bytes::Regex;

use super::check::{Check, Seen};
use super::extract::as_text;

/// Operand is one side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// Slot: a variable's value.
    Slot(usize),
    /// Lit: a constant, as text, and as a number when it is one.
    Lit {
        /// text: the constant's text (a JSON string as itself, another value as JSON).
        text: String,
        /// num: its value when the text is a finite number.
        num: Option<f64>,
    },
}

impl Operand {
    /// lit makes the constant of a JSON value, as an extraction would have written it.
    pub fn lit(v: &serde_json::Value) -> Operand {
        let mut text = String::new();
        as_text(v, &mut text);
        Operand::Lit {
            num: number(&text),
            text,
        }
    }

    fn text<'a>(&'a self, vars: &'a [String]) -> &'a str {
        match self {
            Operand::Slot(i) => vars.get(*i).map_or("", String::as_str),
            Operand::Lit { text, .. } => text,
        }
    }

    fn num(&self, vars: &[String]) -> Option<f64> {
        match self {
            Operand::Slot(i) => number(vars.get(*i).map_or("", String::as_str)),
            Operand::Lit { num, .. } => *num,
        }
    }
}

/// number reads a text as a number when it is one (finite: `inf` and `NaN` stay text).
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// CmpOp is a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// Eq: `==`.
    Eq,
    /// Ne: `!=`.
    Ne,
    /// Lt: `<`.
    Lt,
    /// Le: `<=`.
    Le,
    /// Gt: `>`.
    Gt,
    /// Ge: `>=`.
    Ge,
}

impl CmpOp {
    /// parse reads `==`, `!=`, `<`, `<=`, `>` or `>=`.
    pub fn parse(op: &str) -> Option<CmpOp> {
        Some(match op {
            "==" => CmpOp::Eq,
            "!=" => CmpOp::Ne,
            "<" => CmpOp::Lt,
            "<=" => CmpOp::Le,
            ">" => CmpOp::Gt,
            ">=" => CmpOp::Ge,
            _ => return None,
        })
    }

    fn holds(self, o: Ordering) -> bool {
        match self {
            CmpOp::Eq => o == Ordering::Equal,
            CmpOp::Ne => o != Ordering::Equal,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::Le => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::Ge => o != Ordering::Less,
        }
    }
}

/// Cond is a condition, resolved (variables to slots, regexes compiled).
#[derive(Debug, Clone)]
pub enum Cond {
    /// Cmp: `left op right`.
    Cmp {
        /// left: the left side.
        left: Operand,
        /// op: the comparison.
        op: CmpOp,
        /// right: the right side.
        right: Operand,
    },
    /// In: `left` equals one of `values` (`negate`: none of them).
    In {
        /// left: the value tested.
        left: Operand,
        /// values: the set.
        values: Vec<Operand>,
        /// negate: "not in".
        negate: bool,
    },
    /// Match: variable `slot` matches `re`.
    Match {
        /// slot: the variable.
        slot: usize,
        /// re: the expression.
        re: Regex,
    },
    /// Check: a check holds on the last response.
    Check(Check),
    /// All: every condition holds.
    All(Vec<Cond>),
    /// Any: one condition holds.
    Any(Vec<Cond>),
    /// Not: the condition does not hold.
    Not(Box<Cond>),
}

/// Facts is what a condition looks at: the VU's variables and its last response.
pub struct Facts<'a> {
    /// vars: the variables, by slot.
    pub vars: &'a [String],
    /// seen: the last response.
    pub seen: Seen<'a>,
}

/// order compares two operands: as numbers when both are numbers, else as text (bytes).
fn order(a: &Operand, b: &Operand, vars: &[String]) -> Ordering {
    match (a.num(vars), b.num(vars)) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        _ => a.text(vars).cmp(b.text(vars)),
    }
}

impl Cond {
    /// holds decides the condition.
    pub fn holds(&self, f: &Facts<'_>) -> bool {
        match self {
            Cond::Cmp { left, op, right } => op.holds(order(left, right, f.vars)),
            Cond::In {
                left,
                values,
                negate,
            } => {
                let found = values
                    .iter()
                    .any(|v| order(left, v, f.vars) == Ordering::Equal);
                found != *negate
            }
            Cond::Match { slot, re } => {
                re.is_match(f.vars.get(*slot).map_or("", String::as_str).as_bytes())
            }
            Cond::Check(c) => c.holds(&f.seen),
            Cond::All(all) => all.iter().all(|c| c.holds(f)),
            Cond::Any(any) => any.iter().any(|c| c.holds(f)),
            Cond::Not(c) => !c.holds(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn lit(v: serde_json::Value) -> Operand {
        Operand::lit(&v)
    }

    fn cmp(left: Operand, op: &str, right: Operand) -> Cond {
        Cond::Cmp {
            left,
            op: CmpOp::parse(op).unwrap(),
            right,
        }
    }

    #[test]
    fn comparisons_are_numeric_where_both_sides_are_numbers() {
        // Slots: 0 "10", 1 "9", 2 "FAILED", 3 "", 4 "1e1", 5 "true".
        let vars: Vec<String> = ["10", "9", "FAILED", "", "1e1", "true"]
            .map(String::from)
            .to_vec();
        let s = Operand::Slot;
        let cases: Vec<(&str, Cond, bool)> = vec![
            ("10 > 9 as numbers", cmp(s(0), ">", s(1)), true),
            ("10 == 1e1", cmp(s(0), "==", s(4)), true),
            (
                "10 == 10.0 constant",
                cmp(s(0), "==", lit(json!(10.0))),
                true,
            ),
            ("10 != \"10\"", cmp(s(0), "!=", lit(json!("10"))), false),
            ("10 < 9 false", cmp(s(0), "<", s(1)), false),
            ("10 <= 10", cmp(s(0), "<=", lit(json!(10))), true),
            ("10 >= 11 false", cmp(s(0), ">=", lit(json!(11))), false),
            ("text ==", cmp(s(2), "==", lit(json!("FAILED"))), true),
            ("text !=", cmp(s(2), "!=", lit(json!("SUCCEEDED"))), true),
            ("text order", cmp(s(2), "<", lit(json!("G"))), true),
            ("number vs text is text", cmp(s(1), ">", s(2)), false),
            ("empty == \"\"", cmp(s(3), "==", lit(json!(""))), true),
            ("json true", cmp(s(5), "==", lit(json!(true))), true),
            (
                "in",
                Cond::In {
                    left: s(2),
                    values: vec![lit(json!("SUCCEEDED")), lit(json!("FAILED"))],
                    negate: false,
                },
                true,
            ),
            (
                "not in",
                Cond::In {
                    left: s(0),
                    values: vec![lit(json!(10))],
                    negate: true,
                },
                false,
            ),
            (
                "match",
                Cond::Match {
                    slot: 2,
                    re: Regex::new("^FAIL").unwrap(),
                },
                true,
            ),
            (
                "and",
                Cond::All(vec![cmp(s(0), ">", s(1)), cmp(s(3), "==", s(3))]),
                true,
            ),
            (
                "or",
                Cond::Any(vec![cmp(s(0), "<", s(1)), cmp(s(2), "==", s(2))]),
                true,
            ),
            ("not", Cond::Not(Box::new(cmp(s(0), ">", s(1)))), false),
            ("empty and", Cond::All(vec![]), true),
            ("empty or", Cond::Any(vec![]), false),
        ];
        let resp = crate::http::read_whole(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
        for (label, c, want) in cases {
            let f = Facts {
                vars: &vars,
                seen: Seen {
                    status: 200,
                    latency: Duration::ZERO,
                    resp: &resp,
                },
            };
            assert_eq!(c.holds(&f), want, "{label}");
        }
    }

    #[test]
    fn checks_judge_the_last_response() {
        let resp = crate::http::read_whole(
            b"HTTP/1.1 200 OK\r\nContent-Length: 19\r\n\r\n{\"status\":\"FAILED\"}",
        );
        let json_in = |vals: &[&str], negate: bool| {
            Cond::Check(Check::Json {
                path: vec![crate::scenario::spec::PathSeg::Key("status".into())],
                text: "$.status".into(),
                values: vals.iter().map(|v| json!(v)).collect(),
                negate,
            })
        };
        let cases: Vec<(&str, Cond, bool)> = vec![
            ("status", Cond::Check(Check::Status(vec![200])), true),
            ("status no", Cond::Check(Check::Status(vec![201])), false),
            ("json eq", json_in(&["FAILED"], false), true),
            ("json not in", json_in(&["FAILED"], true), false),
            (
                "contains",
                Cond::Check(Check::Contains("FAIL".into())),
                true,
            ),
            (
                "latency",
                Cond::Check(Check::Latency(Duration::from_millis(1))),
                false,
            ),
        ];
        for (label, c, want) in cases {
            let f = Facts {
                vars: &[],
                seen: Seen {
                    status: 200,
                    latency: Duration::from_millis(5),
                    resp: &resp,
                },
            };
            assert_eq!(c.holds(&f), want, "{label}");
        }
    }
}

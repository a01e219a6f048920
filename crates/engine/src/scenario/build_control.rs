//! The builder's control flow: `when` branches, `repeat` and `until` loops and `stop`
//! become jumps in the flow's one list of [`Op`]s, and their conditions are resolved
//! ([`Cond`]: variables to slots, regexes compiled, constants parsed once). Also the
//! declaration of every variable the steps set, wherever the steps sit.

use regex::bytes::Regex;

use super::Builder;
use crate::error::EngineError;
use crate::scenario::cond::{CmpOp, Cond, Operand};
use crate::scenario::spec::{BranchSpec, CondSpec, CountSpec, ExtractSpec, OperandSpec, StepSpec};
use crate::scenario::{Count, Op};

/// MAX_UNTIL_LIMIT bounds an until loop's rounds: a loop bounded in count.
pub const MAX_UNTIL_LIMIT: u32 = 1_000_000;

impl Builder<'_> {
    /// control flattens a control step (a loop, a when, an until, a stop) into `ops`.
    pub(super) fn control(
        &mut self,
        s: &StepSpec,
        ops: &mut Vec<Op>,
        depth: usize,
    ) -> Result<(), EngineError> {
        match s {
            StepSpec::Loop { count, steps, line } => {
                if *count == 0 {
                    return Err(self.err(*line, "loop count must be >= 1"));
                }
                self.repeat(&CountSpec::Fixed(*count), steps, *line, ops, depth)
            }
            StepSpec::Repeat { count, steps, line } => self.repeat(count, steps, *line, ops, depth),
            StepSpec::When {
                branches,
                otherwise,
                line,
            } => self.when(branches, otherwise.as_deref(), *line, ops, depth),
            StepSpec::Until {
                cond,
                limit,
                steps,
                line,
            } => self.until(cond, *limit, steps, *line, ops, depth),
            StepSpec::Stop { cond, line } => {
                let cond = match cond {
                    Some(c) => Some(self.cond(c, *line)?),
                    None => None,
                };
                ops.push(Op::Stop(cond));
                Ok(())
            }
            _ => self.steps(std::slice::from_ref(s), ops, depth),
        }
    }

    /// cond resolves a condition; `line` places its errors.
    fn cond(&self, c: &CondSpec, line: Option<u32>) -> Result<Cond, EngineError> {
        Ok(match c {
            CondSpec::Cmp { left, op, right } => Cond::Cmp {
                left: self.operand(left, line)?,
                op: CmpOp::parse(op)
                    .ok_or_else(|| self.err(line, format!("unknown comparison {op:?}")))?,
                right: self.operand(right, line)?,
            },
            CondSpec::In {
                left,
                values,
                negate,
            } => Cond::In {
                left: self.operand(left, line)?,
                values: values.iter().map(Operand::lit).collect(),
                negate: *negate,
            },
            CondSpec::Match { var, pattern } => Cond::Match {
                slot: self.var_slot(var, line)?,
                re: Regex::new(pattern)
                    .map_err(|e| self.err(line, format!("bad regex {pattern:?}: {e}")))?,
            },
            CondSpec::Check { check } => Cond::Check(self.check(check, line)?),
            CondSpec::All { of } => Cond::All(self.conds(of, line)?),
            CondSpec::Any { of } => Cond::Any(self.conds(of, line)?),
            CondSpec::Not { of } => Cond::Not(Box::new(self.cond(of, line)?)),
        })
    }

    fn conds(&self, cs: &[CondSpec], line: Option<u32>) -> Result<Vec<Cond>, EngineError> {
        cs.iter().map(|c| self.cond(c, line)).collect()
    }

    fn operand(&self, o: &OperandSpec, line: Option<u32>) -> Result<Operand, EngineError> {
        Ok(match o {
            OperandSpec::Var { var } => Operand::Slot(self.var_slot(var, line)?),
            OperandSpec::Value { value } => Operand::lit(value),
        })
    }

    fn var_slot(&self, var: &str, line: Option<u32>) -> Result<usize, EngineError> {
        self.slots
            .get(var)
            .copied()
            .ok_or_else(|| self.err(line, format!("variable {var:?} is used before it is set")))
    }

    /// when flattens a `when`: each branch is `Unless(cond) -> next branch`, its steps and
    /// a jump past the rest; the `else` steps come last.
    fn when(
        &mut self,
        branches: &[BranchSpec],
        otherwise: Option<&[StepSpec]>,
        line: Option<u32>,
        ops: &mut Vec<Op>,
        depth: usize,
    ) -> Result<(), EngineError> {
        if branches.is_empty() {
            return Err(self.err(line, "when needs a condition"));
        }
        let mut exits = Vec::new();
        for (i, b) in branches.iter().enumerate() {
            let cond = self.cond(&b.cond, b.line.or(line))?;
            let test = ops.len();
            ops.push(Op::Unless { cond, to: 0 });
            self.steps(&b.steps, ops, depth)?;
            if i + 1 < branches.len() || otherwise.is_some() {
                exits.push(ops.len());
                ops.push(Op::Jump(0));
            }
            let next = ops.len();
            if let Some(Op::Unless { to, .. }) = ops.get_mut(test) {
                *to = next;
            }
        }
        if let Some(steps) = otherwise {
            self.steps(steps, ops, depth)?;
        }
        let end = ops.len();
        for i in exits {
            ops[i] = Op::Jump(end);
        }
        Ok(())
    }

    /// repeat flattens a counted loop: `LoopStart`, the steps, `LoopEnd`.
    fn repeat(
        &mut self,
        count: &CountSpec,
        steps: &[StepSpec],
        line: Option<u32>,
        ops: &mut Vec<Op>,
        depth: usize,
    ) -> Result<(), EngineError> {
        let count = match count {
            CountSpec::Fixed(n) => Count::Fixed(*n),
            CountSpec::Var { var } => Count::Slot(self.var_slot(var, line)?),
        };
        self.depth = self.depth.max(depth + 1);
        let start = ops.len();
        ops.push(Op::LoopStart {
            count,
            depth,
            end: 0,
        });
        self.steps(steps, ops, depth + 1)?;
        ops.push(Op::LoopEnd { start, depth });
        let end = ops.len();
        if let Some(Op::LoopStart { end: e, .. }) = ops.get_mut(start) {
            *e = end;
        }
        Ok(())
    }

    /// until flattens a loop that ends when its condition holds after a round:
    /// `UntilStart`, the steps, `UntilEnd`. Its block must send a request (the failure at
    /// the limit is booked on the last one sent, as a poll's timeout is).
    fn until(
        &mut self,
        cond: &CondSpec,
        limit: u32,
        steps: &[StepSpec],
        line: Option<u32>,
        ops: &mut Vec<Op>,
        depth: usize,
    ) -> Result<(), EngineError> {
        if !(1..=MAX_UNTIL_LIMIT).contains(&limit) {
            return Err(self.err(
                line,
                format!("until: the limit must be between 1 and {MAX_UNTIL_LIMIT} rounds"),
            ));
        }
        if !sends(steps) {
            return Err(self.err(line, "until: its block sends no request"));
        }
        let cond = self.cond(cond, line)?;
        self.depth = self.depth.max(depth + 1);
        let start = ops.len();
        ops.push(Op::UntilStart { depth });
        self.steps(steps, ops, depth + 1)?;
        let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
        ops.push(Op::UntilEnd {
            start,
            depth,
            cond,
            limit,
            reason: format!("until{at} still false after {limit} rounds"),
        });
        Ok(())
    }

    /// declare makes the slots of the variables the steps extract or set: they exist from
    /// the start (their slots are known before the steps that read them); the compiler has
    /// checked the order of use.
    pub(super) fn declare(&mut self, steps: &[StepSpec]) {
        for s in steps {
            match s {
                StepSpec::Request(r) | StepSpec::Poll { request: r, .. } => {
                    for x in &r.extract {
                        let (ExtractSpec::Json { var, .. }
                        | ExtractSpec::Header { var, .. }
                        | ExtractSpec::Regex { var, .. }
                        | ExtractSpec::Status { var, .. }) = x;
                        self.slot(var);
                    }
                }
                StepSpec::Set { var, .. } => {
                    self.slot(var);
                }
                StepSpec::Python { outputs, .. } => {
                    for o in outputs {
                        self.slot(o);
                    }
                }
                StepSpec::Loop { steps, .. }
                | StepSpec::Group { steps, .. }
                | StepSpec::Repeat { steps, .. }
                | StepSpec::Until { steps, .. } => self.declare(steps),
                StepSpec::When {
                    branches,
                    otherwise,
                    ..
                } => {
                    for b in branches {
                        self.declare(&b.steps);
                    }
                    self.declare(otherwise.as_deref().unwrap_or_default());
                }
                StepSpec::Think { .. } | StepSpec::Stop { .. } | StepSpec::Socket(_) => {}
            }
        }
    }
}

/// sends says whether `steps` hold a request, at any depth.
fn sends(steps: &[StepSpec]) -> bool {
    steps.iter().any(|s| match s {
        StepSpec::Request(_) | StepSpec::Poll { .. } | StepSpec::Socket(_) => true,
        StepSpec::Loop { steps, .. }
        | StepSpec::Group { steps, .. }
        | StepSpec::Repeat { steps, .. }
        | StepSpec::Until { steps, .. } => sends(steps),
        StepSpec::When {
            branches,
            otherwise,
            ..
        } => branches.iter().any(|b| sends(&b.steps)) || otherwise.as_deref().is_some_and(sends),
        StepSpec::Think { .. }
        | StepSpec::Set { .. }
        | StepSpec::Python { .. }
        | StepSpec::Stop { .. } => false,
    })
}

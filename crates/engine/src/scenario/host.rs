//! The seam to the host language: a scenario's Python steps (`u.python(fn, ...)`) run on a
//! [`Host`] the binding crate (crates/py) implements, calling Python on a thread of its own
//! with the GIL; the engine stays pure Rust. A lane sends a [`Call`] with a oneshot for the
//! answer and awaits it, so its thread runs its other lanes meanwhile.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::oneshot;

/// Answer is a call's outputs, in the step's order, or why it failed (an exception).
pub type Answer = Result<Vec<String>, String>;

/// Call is one Python step to run: function `func` on `args`, answered on `answer`.
#[derive(Debug)]
pub struct Call {
    /// func: the function's index in the plan's `python` list.
    pub func: usize,
    /// args: the step's templated arguments, rendered.
    pub args: Vec<String>,
    /// answer: where the outputs go.
    pub answer: oneshot::Sender<Answer>,
    /// queued: when the lane asked (the host's wait before the call is its queue).
    pub queued: std::time::Instant,
}

/// Host runs a run's Python steps.
pub trait Host: Send + Sync {
    /// functions: the names of the functions it can call, by index.
    fn functions(&self) -> Vec<String>;
    /// submit queues `call`; a host that is gone drops it (the caller reads the dropped
    /// sender as a failure).
    fn submit(&self, call: Call);
    /// usage: its figures so far.
    fn usage(&self) -> HostUsage;
}

/// HostUsage is what a host's calls cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostUsage {
    /// calls: calls answered, per function.
    pub calls: Vec<u64>,
    /// errors: calls that raised, per function.
    pub errors: Vec<u64>,
    /// busy: time spent inside the calls (holding the GIL), per function.
    pub busy: Vec<Duration>,
    /// cpu: CPU time of the host's thread.
    pub cpu: Duration,
    /// reasons: the first reasons calls failed for, with their counts.
    pub reasons: Vec<(String, u64)>,
    /// queued: the time calls waited for the host's thread before they began, all calls.
    pub queued: Duration,
}

/// HostRef is a run's host, as the configuration and the script hold it.
#[derive(Clone)]
pub struct HostRef(pub Arc<dyn Host>);

impl std::fmt::Debug for HostRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("HostRef").field(&self.0.functions()).finish()
    }
}

/// ask sends `func(args)` to `host` and awaits the answer.
pub async fn ask(host: &dyn Host, func: usize, args: Vec<String>) -> Answer {
    let (tx, rx) = oneshot::channel();
    host.submit(Call {
        func,
        args,
        answer: tx,
        queued: std::time::Instant::now(),
    });
    rx.await
        .unwrap_or_else(|_| Err("the Python host is gone".to_string()))
}

/// FunctionReport is one Python function's figures in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionReport {
    /// calls: calls answered.
    pub calls: u64,
    /// errors: calls that raised (each failed its iteration).
    pub errors: u64,
    /// us_per_call: mean time inside a call, µs (wall, holding the GIL).
    pub us_per_call: f64,
}

/// PythonReport is the report's `scenario.python`: what the Python steps cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PythonReport {
    /// calls: calls answered, all functions.
    pub calls: u64,
    /// errors: calls that raised.
    pub errors: u64,
    /// us_per_call: mean time inside a call, µs.
    pub us_per_call: f64,
    /// queue_us_per_call: mean time a call waited for the thread before it began, µs.
    pub queue_us_per_call: f64,
    /// cpu_s: CPU time of the Python thread.
    pub cpu_s: f64,
    /// cpu_share: that CPU's share of the process's over the run.
    pub cpu_share: f64,
    /// busy_ratio: the share of the run's wall time the Python thread spent in calls (near
    /// 1: one GIL is the limit of the rate).
    pub busy_ratio: f64,
    /// functions: per function name.
    pub functions: std::collections::BTreeMap<String, FunctionReport>,
    /// reasons: why calls failed (exception type and message), with counts.
    pub reasons: std::collections::BTreeMap<String, u64>,
}

impl PythonReport {
    /// from_usage is the report of `u` over a run of `wall_s` seconds that took
    /// `process_cpu_s` of the process's CPU.
    pub fn from_usage(names: &[String], u: &HostUsage, wall_s: f64, process_cpu_s: f64) -> Self {
        let calls: u64 = u.calls.iter().sum();
        let busy: Duration = u.busy.iter().sum();
        let mean = |b: Duration, n: u64| {
            if n > 0 {
                b.as_secs_f64() * 1e6 / n as f64
            } else {
                0.0
            }
        };
        let ratio = |a: f64, b: f64| if b > 0.0 { (a / b).min(1.0) } else { 0.0 };
        let functions = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let n = u.calls.get(i).copied().unwrap_or(0);
                let b = u.busy.get(i).copied().unwrap_or_default();
                let report = FunctionReport {
                    calls: n,
                    errors: u.errors.get(i).copied().unwrap_or(0),
                    us_per_call: mean(b, n),
                };
                (name.clone(), report)
            })
            .collect();
        PythonReport {
            calls,
            errors: u.errors.iter().sum(),
            us_per_call: mean(busy, calls),
            queue_us_per_call: mean(u.queued, calls),
            cpu_s: u.cpu.as_secs_f64(),
            cpu_share: ratio(u.cpu.as_secs_f64(), process_cpu_s),
            busy_ratio: ratio(busy.as_secs_f64(), wall_s),
            functions,
            reasons: u.reasons.iter().cloned().collect(),
        }
    }
}

impl super::PyStep {
    /// render_args renders the step's arguments (as they are, no escaping); None when a
    /// function in one cannot be computed.
    pub fn render_args(
        &self,
        vars: &[String],
        scratch: &mut super::template::Scratch,
    ) -> Option<Vec<String>> {
        let mut args = Vec::with_capacity(self.args.len());
        for tpl in &self.args {
            let mut b = Vec::new();
            tpl.render(vars, &mut b, scratch).ok()?;
            args.push(
                String::from_utf8(b)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            );
        }
        Some(args)
    }
}

impl PartialEq for HostRef {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(
            Arc::as_ptr(&self.0).cast::<()>(),
            Arc::as_ptr(&other.0).cast::<()>(),
        )
    }
}

impl PythonReport {
    /// limits says whether the Python steps held the iterations back: their thread was in
    /// calls most of the run and calls waited in its queue longer than they ran.
    pub fn limits(&self) -> bool {
        self.busy_ratio > 0.5 && self.queue_us_per_call > self.us_per_call
    }

    /// verdict says how the Python steps held the run back: their one thread was busy for
    /// `busy_ratio` of the run, and the iterations queued behind it.
    pub fn verdict(&self) -> String {
        let slowest = self
            .functions
            .iter()
            .max_by(|a, b| {
                (a.1.us_per_call * a.1.calls as f64)
                    .total_cmp(&(b.1.us_per_call * b.1.calls as f64))
            })
            .map_or("", |(name, _)| name.as_str());
        format!(
            "limited by the Python step {slowest}: its thread was in calls {:.0}% of the run, \
             {:.0} µs a call, one call at a time under the GIL ({:.0}% of the process's CPU), \
             and each call waited {:.0} µs in its queue first; the iterations waited for it, \
             not for the server: make it cheaper, or use the engine's functions",
            100.0 * self.busy_ratio,
            self.us_per_call,
            100.0 * self.cpu_share,
            self.queue_us_per_call
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_reads_the_usage_and_limits_only_a_queued_busy_thread() {
        let ms = Duration::from_millis;
        // (label, calls, busy, queued, wall s, limits)
        let cases = [
            ("idle thread", 100, ms(10), ms(5), 10.0, false),
            ("busy, no queue", 1000, ms(8000), ms(100), 10.0, false),
            ("busy and queued", 1000, ms(8000), ms(40_000), 10.0, true),
        ];
        for (label, calls, busy, queued, wall, limits) in cases {
            let u = HostUsage {
                calls: vec![calls],
                errors: vec![0],
                busy: vec![busy],
                cpu: busy,
                reasons: Vec::new(),
                queued,
            };
            let r =
                PythonReport::from_usage(&["f".to_string()], &u, wall, 2.0 * busy.as_secs_f64());
            assert_eq!(r.calls, calls, "{label}");
            let us = busy.as_secs_f64() * 1e6 / calls as f64;
            assert!((r.us_per_call - us).abs() < 1e-6, "{label}");
            assert!((r.cpu_share - 0.5).abs() < 1e-9, "{label}");
            assert_eq!(r.limits(), limits, "{label}: {r:?}");
            assert_eq!(r.functions["f"].calls, calls, "{label}");
        }
    }
}

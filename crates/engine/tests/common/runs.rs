//! Helpers for the end-to-end runs (`run.rs`, `pacing.rs`): a run to its end, its
//! defaults, its answers by status.

use std::sync::Arc;

use redline_engine::{run, IntervalSnapshot, Report, RunConfig, RunControl};

/// go runs `cfg` to the end and returns its report and snapshots.
pub fn go(cfg: RunConfig) -> (Report, Vec<IntervalSnapshot>) {
    let mut snaps = Vec::new();
    let report = run(cfg, Arc::new(RunControl::new()), &mut |s| {
        snaps.push(s.clone())
    })
    .expect("run succeeds");
    (report, snaps)
}

/// codes adds up the snapshots' answers by status code.
pub fn codes(snaps: &[IntervalSnapshot]) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for (code, f) in snaps.iter().flat_map(|s| s.statuses.iter()) {
        *out.entry(code.clone()).or_insert(0) += f.count;
    }
    out
}

/// cfg is a run of `url` on 2 threads with a 0.25 s interval, the rest defaults.
pub fn cfg(url: String) -> RunConfig {
    RunConfig {
        url,
        threads: Some(2),
        interval_s: 0.25,
        ..RunConfig::default()
    }
}

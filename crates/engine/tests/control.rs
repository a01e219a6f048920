//! Live runs: the load changes through `RunControl::load()` while the run goes on, and the
//! server sees the new load. Each run is bounded by its duration; waits are on snapshots.

mod common;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use common::{start, Mode};
use redline_engine::{run, IntervalSnapshot, Report, RunConfig, RunControl};

/// Live is a run on its own thread with its snapshots on a channel.
struct Live {
    control: Arc<RunControl>,
    snaps: mpsc::Receiver<IntervalSnapshot>,
    thread: std::thread::JoinHandle<Report>,
}

fn go(cfg: RunConfig) -> Live {
    let control = Arc::new(RunControl::new());
    let (tx, snaps) = mpsc::channel();
    let c = control.clone();
    let thread = std::thread::spawn(move || {
        run(cfg, c, &mut |s| {
            let _ = tx.send(s.clone());
        })
        .expect("run succeeds")
    });
    Live {
        control,
        snaps,
        thread,
    }
}

impl Live {
    fn next(&self, n: usize) -> Vec<IntervalSnapshot> {
        (0..n)
            .map(|_| {
                self.snaps
                    .recv_timeout(Duration::from_secs(10))
                    .expect("a snapshot each interval")
            })
            .collect()
    }

    fn finish(self) -> Report {
        self.control.stop();
        self.thread.join().expect("run thread")
    }
}

fn live(url: String) -> RunConfig {
    RunConfig {
        url,
        threads: Some(2),
        interval_s: 0.25,
        duration_s: Some(30.0),
        live: true,
        ..RunConfig::default()
    }
}

#[test]
fn open_model_rate_follows_the_target() {
    let server = start(Mode::Ok {
        delay: Duration::ZERO,
    });
    let run = go(RunConfig {
        rate: Some(200.0),
        ..live(server.url("/"))
    });
    run.next(4);
    let at = run
        .control
        .load()
        .set_target(1000.0, Duration::ZERO)
        .expect("live run takes a target");
    let after = run.next(8);
    let report = run.finish();
    // Intervals that started after the change: the schedule and the sends are at 1000/s.
    let steady: Vec<_> = after.iter().filter(|s| s.t_s - 0.25 >= at).collect();
    assert!(steady.len() >= 5, "{} steady intervals", steady.len());
    for s in &steady {
        let intended = s.intended_rate.expect("open model has an intended rate");
        assert!(
            (intended - 1000.0).abs() < 1.0,
            "intended {intended} at {}",
            s.t_s
        );
        assert!(
            (s.achieved_rate - 1000.0).abs() < 100.0,
            "achieved {} at {}",
            s.achieved_rate,
            s.t_s
        );
    }
    // The server saw the schedule: 200/s before the change, 1000/s after, nothing lost.
    let end: f64 = report.timeseries.last().map_or(0.0, |s| s.t_s);
    let expected = 200.0 * at + 1000.0 * (end - at);
    let seen = server.requests() as f64;
    assert!(
        (seen - expected).abs() < 0.05 * expected,
        "server saw {seen}, schedule {expected:.0}"
    );
}

#[test]
fn closed_model_vus_follow_the_target_up_and_down() {
    let server = start(Mode::Ok {
        delay: Duration::from_millis(10),
    });
    // One VU on two threads: the second thread starts with no lane and must not end early.
    let run = go(RunConfig {
        connections: 1,
        max_vus: Some(8),
        ..live(server.url("/"))
    });
    let low = run.next(4);
    run.control
        .load()
        .set_target(8.0, Duration::ZERO)
        .expect("up");
    run.next(2);
    let high = run.next(4);
    run.control
        .load()
        .set_target(1.0, Duration::ZERO)
        .expect("down");
    run.next(2);
    let back = run.next(4);
    let report = run.finish();
    let mean = |v: &[IntervalSnapshot]| v.iter().map(|s| s.achieved_rate).sum::<f64>() / 4.0;
    let (lo, hi, bk) = (mean(&low[1..]) * 4.0 / 3.0, mean(&high), mean(&back));
    // 10 ms per request: about 100 req/s per VU; eight times the VUs, about eight times the rate.
    assert!(hi > 6.0 * lo, "8 VUs {hi:.0}/s vs 1 VU {lo:.0}/s");
    assert!(bk < 0.2 * hi, "back at 1 VU {bk:.0}/s vs 8 VUs {hi:.0}/s");
    assert!(high.iter().all(|s| s.active_connections == 8), "{high:?}");
    assert!(back.iter().all(|s| s.active_connections == 1), "{back:?}");
    // Stopping may cut off the one request the last VU has in flight.
    let seen = server.requests();
    assert!(
        report.requests <= seen && seen <= report.requests + 1,
        "engine {} vs server {seen}",
        report.requests
    );
}

#[test]
fn a_run_that_is_not_live_refuses_a_target() {
    let server = start(Mode::Ok {
        delay: Duration::ZERO,
    });
    let run = go(RunConfig {
        connections: 1,
        live: false,
        ..live(server.url("/"))
    });
    run.next(1);
    let err = run.control.load().set_target(5.0, Duration::ZERO);
    run.finish();
    assert!(err.is_err(), "{err:?}");
    // Bad targets are refused with a message, never a panic.
    let bad = RunControl::new();
    assert!(bad.load().set_target(f64::NAN, Duration::ZERO).is_err());
    assert!(bad.load().set_target(-1.0, Duration::ZERO).is_err());
}

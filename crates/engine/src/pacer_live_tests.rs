//! The pacer in a live run: profiles retargeted while they run, and the lanes of both
//! models idling (not stopping) while the run may still rise again.

use super::tests::{close, secs, stages, ONE};
use super::*;

fn live(initial: f64, changes: &[(f64, f64, f64)]) -> Profile {
    let mut p = Profile::constant(initial);
    for &(at, to, ramp) in changes {
        p.retarget(at, to, ramp);
    }
    p
}

#[test]
// long: a table of cases, one retargeted profile and instant each.
fn retargeted_profiles_continue_from_the_cut() {
    // label, profile, t, value, cumulative
    let cases = [
        (
            "before a step up",
            live(100.0, &[(10.0, 200.0, 0.0)]),
            5.0,
            100.0,
            500.0,
        ),
        (
            "at a step up",
            live(100.0, &[(10.0, 200.0, 0.0)]),
            10.0,
            200.0,
            1000.0,
        ),
        (
            "after a step up",
            live(100.0, &[(10.0, 200.0, 0.0)]),
            12.0,
            200.0,
            1400.0,
        ),
        (
            "midway up a ramp",
            live(100.0, &[(10.0, 300.0, 4.0)]),
            12.0,
            200.0,
            1300.0,
        ),
        (
            "held after a ramp",
            live(100.0, &[(10.0, 300.0, 4.0)]),
            20.0,
            300.0,
            1800.0 + 1800.0,
        ),
        (
            "a step down",
            live(100.0, &[(10.0, 50.0, 0.0)]),
            14.0,
            50.0,
            1200.0,
        ),
        (
            "cut mid-ramp, ramp back",
            // 100 -> 300 over 4 s from 10 s, cut at 12 s (200/s, 1300 hits), ramp to 0 over 2 s.
            live(100.0, &[(10.0, 300.0, 4.0), (12.0, 0.0, 2.0)]),
            13.0,
            100.0,
            1300.0 + 150.0,
        ),
        (
            "retarget at zero replaces the start",
            live(100.0, &[(0.0, 40.0, 0.0)]),
            10.0,
            40.0,
            400.0,
        ),
        (
            "many retargets",
            live(
                10.0,
                &[
                    (1.0, 20.0, 0.0),
                    (2.0, 30.0, 0.0),
                    (3.0, 40.0, 0.0),
                    (4.0, 50.0, 0.0),
                ],
            ),
            5.0,
            50.0,
            10.0 + 20.0 + 30.0 + 40.0 + 50.0,
        ),
    ];
    for (label, p, t, v, c) in cases {
        assert!(close(p.value(t), v), "{label}: value {} != {v}", p.value(t));
        assert!(
            close(p.cumulative(t), c),
            "{label}: cumulative {} != {c}",
            p.cumulative(t)
        );
        assert_eq!(
            p.end(),
            None,
            "{label}: a live profile never ends by itself"
        );
    }
}

#[test]
fn retargeting_an_ended_profile_leaves_a_gap() {
    let mut p = stages(&[(10.0, 100.0)]);
    p.retarget(15.0, 100.0, 0.0);
    assert!(close(p.cumulative(15.0), 500.0), "nothing due in the gap");
    assert!(close(p.cumulative(16.0), 600.0));
    assert!(close(p.value(16.0), 100.0));
}

#[test]
fn open_pacer_stays_continuous_across_a_retarget() {
    // 100/s for 10 s, then 1000/s: hit 999 is due at 9.99 s, hit 1000 at 10 s, hit 1010 at
    // 10.01 s; the claimed hit count carries over, so nothing is sent twice or skipped.
    let mut p = OpenPacer {
        rate: Profile::constant(100.0),
        end: Some(60.0),
        limit: None,
        stride: ONE,
        recheck: None,
    };
    let before = p.due_by(secs(10.0));
    p.rate.retarget(10.0, 1000.0, 0.0);
    assert_eq!(
        p.due_by(secs(10.0)),
        before,
        "the cut moves nothing already due"
    );
    let cases = [(999, 9.99), (1000, 10.0), (1010, 10.01), (1999, 10.999)];
    for (hit, at) in cases {
        match p.pace(secs(0.0), hit, 0) {
            Pace::Due(d) => assert!(close(d.as_secs_f64(), at), "hit {hit}: due {d:?} != {at}"),
            other => panic!("hit {hit}: {other:?}"),
        }
    }
    assert_eq!(p.due_by(secs(11.0)), 2001);
}

#[test]
fn closed_pacer_in_a_live_run_idles_lanes_instead_of_stopping() {
    let mut p = ClosedPacer {
        vus: Profile::constant(4.0),
        end: Some(60.0),
        limit: None,
        stride: ONE,
        recheck: Some(0.1),
    };
    let mut any = AnyPacer::Closed(p.clone());
    // label, elapsed, lane, expected
    let cases = [
        ("active lane", 1.0, 3, Pace::Now),
        (
            "lane above the count rechecks",
            1.0,
            4,
            Pace::Idle(secs(1.1)),
        ),
        ("no recheck past the end", 59.95, 4, Pace::Stop),
    ];
    for (label, t, lane, want) in cases {
        assert_eq!(p.pace(secs(t), 0, lane), want, "{label}");
    }
    // Raise to 8 VUs over 4 s from 2 s (4 + (t - 2) VUs): lane 6 becomes active just after 4 s.
    let mut vus = Profile::constant(4.0);
    vus.retarget(2.0, 8.0, 4.0);
    any.set_profile(vus.clone());
    match any.pace(secs(2.0), 0, 6) {
        Pace::Idle(at) => assert!((at.as_secs_f64() - 4.0).abs() < 1e-3, "{at:?}"),
        other => panic!("lane 6 at 2 s: {other:?}"),
    }
    assert_eq!(any.pace(secs(4.1), 0, 6), Pace::Now);
    assert_eq!(
        any.due_by(secs(4.1)),
        None,
        "closed pacers have no schedule"
    );
    // Lower to 2: lanes 2.. idle and recheck.
    vus.retarget(10.0, 2.0, 0.0);
    p.vus = vus;
    assert_eq!(p.pace(secs(10.5), 0, 2), Pace::Idle(secs(10.6)));
    assert_eq!(p.pace(secs(10.5), 0, 1), Pace::Now);
    // Without recheck the old behaviour holds: a lane above a flat count stops for good.
    p.recheck = None;
    assert_eq!(p.pace(secs(10.5), 0, 2), Pace::Stop);
}

#[test]
fn open_pacer_in_a_live_run_idles_lanes_whose_next_hit_falls_past_the_end() {
    // A trickle of 0.05/s from 2 s: hit 201 (the one after the last at 100/s) is due at
    // 2 + 1/0.05 = 22 s, past the 8 s end. A live run's lane idles and asks again; any other
    // stops.
    let mut rate = Profile::constant(100.0);
    rate.retarget(2.0, 0.05, 0.0);
    let mut p = OpenPacer {
        rate,
        end: Some(8.0),
        limit: None,
        stride: ONE,
        recheck: Some(1.0),
    };
    assert_eq!(p.pace(secs(3.0), 201, 0), Pace::Idle(secs(4.0)));
    assert_eq!(
        p.pace(secs(7.5), 201, 0),
        Pace::Stop,
        "no recheck past the end"
    );
    // The rate back at 100/s from 4 s: the same hit is due 9 ms later (0.1 of it accrued).
    p.rate.retarget(4.0, 100.0, 0.0);
    match p.pace(secs(4.0), 201, 0) {
        Pace::Due(d) => assert!(close(d.as_secs_f64(), 4.009), "{d:?}"),
        other => panic!("{other:?}"),
    }
    p.recheck = None;
    p.rate.retarget(5.0, 0.05, 0.0);
    assert_eq!(
        p.pace(secs(5.0), 301, 0),
        Pace::Stop,
        "not live: the lane is done"
    );
}

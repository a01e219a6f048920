use super::*;

pub(super) fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

pub(super) fn stages(list: &[(f64, f64)]) -> Profile {
    let st: Vec<Stage> = list
        .iter()
        .map(|&(duration_s, target)| Stage { duration_s, target })
        .collect();
    Profile::from_stages(&st)
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

pub(super) const ONE: Stride = Stride {
    stride: 1,
    offset: 0,
};

#[test]
fn profile_values_and_integrals() {
    // label, profile, t, value, cumulative
    let ramp = stages(&[(10.0, 100.0), (10.0, 100.0), (10.0, 0.0)]);
    let cases = [
        ("constant at 0", Profile::constant(50.0), 0.0, 50.0, 0.0),
        ("constant at 2s", Profile::constant(50.0), 2.0, 50.0, 100.0),
        ("ramp start", ramp.clone(), 0.0, 0.0, 0.0),
        ("ramp midway", ramp.clone(), 5.0, 50.0, 125.0),
        ("ramp top", ramp.clone(), 10.0, 100.0, 500.0),
        ("plateau", ramp.clone(), 15.0, 100.0, 1000.0),
        ("ramp down midway", ramp.clone(), 25.0, 50.0, 1500.0 + 375.0),
        ("after the end", ramp.clone(), 40.0, 0.0, 2000.0),
    ];
    for (label, p, t, v, c) in cases {
        assert!(close(p.value(t), v), "{label}: value {} != {v}", p.value(t));
        assert!(
            close(p.cumulative(t), c),
            "{label}: cumulative {} != {c}",
            p.cumulative(t)
        );
    }
    assert_eq!(ramp.end(), Some(secs(30.0)));
    assert_eq!(Profile::constant(1.0).end(), None);
    assert!(close(ramp.peak(), 100.0));
}

#[test]
fn time_of_inverts_the_integral() {
    let profiles = [
        ("constant", Profile::constant(250.0)),
        ("ramp up", stages(&[(10.0, 100.0)])),
        (
            "up, hold, down",
            stages(&[(5.0, 40.0), (5.0, 40.0), (5.0, 0.0)]),
        ),
        ("down from a start", stages(&[(2.0, 1000.0), (8.0, 10.0)])),
    ];
    for (label, p) in profiles {
        let total = p.end().map_or(1000.0, |e| p.cumulative(e.as_secs_f64()));
        for i in 0..50 {
            let h = total * f64::from(i) / 50.0;
            let t = p
                .time_of(h)
                .unwrap_or_else(|| panic!("{label}: hit {h} has a time"));
            assert!(
                (p.cumulative(t) - h).abs() < 1e-6 * h.max(1.0),
                "{label}: C(time_of({h})) = {}",
                p.cumulative(t)
            );
        }
        if p.end().is_some() {
            assert_eq!(
                p.time_of(total + 1.0),
                None,
                "{label}: no time past the end"
            );
        }
    }
}

#[test]
fn open_pacer_schedules_hits_at_the_rate() {
    let pacer = |limit, end, stride| OpenPacer {
        rate: Profile::constant(100.0),
        end,
        limit,
        stride,
        recheck: None,
    };
    // label, pacer, hits so far, expected
    let cases = [
        (
            "first hit at 0",
            pacer(None, Some(1.0), ONE),
            0,
            Pace::Due(secs(0.0)),
        ),
        (
            "hit 10 at 100ms",
            pacer(None, Some(1.0), ONE),
            10,
            Pace::Due(secs(0.1)),
        ),
        (
            "hit 100 is past the end",
            pacer(None, Some(1.0), ONE),
            100,
            Pace::Stop,
        ),
        ("limit reached", pacer(Some(5), None, ONE), 5, Pace::Stop),
        (
            "below the limit",
            pacer(Some(5), None, ONE),
            4,
            Pace::Due(secs(0.04)),
        ),
        (
            "thread 1 of 4, hit 2 is global 9",
            pacer(
                None,
                None,
                Stride {
                    stride: 4,
                    offset: 1,
                },
            ),
            2,
            Pace::Due(secs(0.09)),
        ),
        (
            "thread 3 of 4 past limit 10",
            pacer(
                Some(10),
                None,
                Stride {
                    stride: 4,
                    offset: 3,
                },
            ),
            2,
            Pace::Stop,
        ),
    ];
    for (label, p, hits, want) in cases {
        // Within the run the schedule does not depend on when we ask: time is injected,
        // nothing sleeps, and a hit asked for late is still due at its slot.
        for elapsed in [0.0, 0.05, 0.9] {
            assert_eq!(
                p.pace(secs(elapsed), hits, 0),
                want,
                "{label} at {elapsed}s"
            );
        }
    }
    let timed = pacer(None, Some(1.0), ONE);
    assert_eq!(
        timed.pace(secs(1.0), 3, 0),
        Pace::Stop,
        "a backlog is not sent after the end"
    );
}

#[test]
fn open_pacer_threads_split_a_limit_exactly() {
    for (threads, limit) in [(1u64, 7u64), (2, 7), (3, 10), (4, 3)] {
        let mut sent = 0;
        for t in 0..threads {
            let p = OpenPacer {
                rate: Profile::constant(1000.0),
                end: None,
                limit: Some(limit),
                stride: Stride {
                    stride: threads,
                    offset: t,
                },
                recheck: None,
            };
            let mut hits = 0;
            while p.pace(Duration::ZERO, hits, 0) != Pace::Stop {
                hits += 1;
            }
            sent += hits;
        }
        assert_eq!(sent, limit, "{threads} threads, limit {limit}");
    }
}

#[test]
fn closed_pacer_runs_active_vus_and_parks_the_rest() {
    let ramp = ClosedPacer {
        vus: stages(&[(10.0, 10.0), (10.0, 10.0)]),
        end: Some(20.0),
        limit: None,
        stride: ONE,
        recheck: None,
    };
    let flat = ClosedPacer {
        vus: Profile::constant(4.0),
        end: Some(5.0),
        limit: Some(100),
        stride: ONE,
        recheck: None,
    };
    // label, pacer, elapsed, hits, lane, expected
    let cases = [
        ("flat vu sends now", flat.clone(), 1.0, 0, 3, Pace::Now),
        (
            "flat: lane beyond the VUs never runs",
            flat.clone(),
            1.0,
            0,
            4,
            Pace::Stop,
        ),
        ("flat: duration over", flat.clone(), 5.0, 0, 0, Pace::Stop),
        ("flat: limit reached", flat.clone(), 1.0, 100, 0, Pace::Stop),
        (
            "ramp: lane 0 starts within a millisecond",
            ramp.clone(),
            0.001,
            0,
            0,
            Pace::Now,
        ),
        (
            "ramp: lane 5 active at 5.5s",
            ramp.clone(),
            5.5,
            0,
            5,
            Pace::Now,
        ),
        (
            "ramp: lane 9 active at 9.5s",
            ramp.clone(),
            9.5,
            0,
            9,
            Pace::Now,
        ),
        ("ramp: lane 10 never", ramp.clone(), 1.0, 0, 10, Pace::Stop),
        ("ramp: end", ramp.clone(), 20.0, 0, 0, Pace::Stop),
    ];
    for (label, p, t, hits, lane, want) in cases {
        assert_eq!(p.pace(secs(t), hits, lane), want, "{label}");
    }
    // A lane waiting for the ramp idles until just after the profile crosses its index.
    match ramp.pace(secs(1.0), 0, 5) {
        Pace::Idle(at) => assert!(
            (at.as_secs_f64() - 5.0).abs() < 1e-3,
            "lane 5 wakes at {at:?}"
        ),
        other => panic!("lane 5 at 1s should idle, got {other:?}"),
    }
    match ramp.pace(secs(1.0), 0, 5) {
        Pace::Idle(at) => assert_eq!(ramp.pace(at, 0, 5), Pace::Now, "lane 5 runs when it wakes"),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn closed_ramp_down_parks_lanes_for_good() {
    let p = ClosedPacer {
        vus: stages(&[(1.0, 10.0), (10.0, 0.0)]),
        end: Some(11.0),
        limit: None,
        stride: ONE,
        recheck: None,
    };
    assert_eq!(p.pace(secs(6.0), 0, 4), Pace::Now, "5 VUs at 6s");
    assert_eq!(
        p.pace(secs(6.0), 0, 5),
        Pace::Stop,
        "VU 5 is gone for good at 6s"
    );
}

#[test]
fn open_pacer_counts_the_hits_due_by_a_time() {
    let p = |limit, end, stride| OpenPacer {
        rate: Profile::constant(100.0),
        end,
        limit,
        stride,
        recheck: None,
    };
    // label, pacer, elapsed, due
    let cases = [
        ("at start, hit 0 is due", p(None, None, ONE), 0.0, 1),
        ("after 50ms: hits 0..=5", p(None, None, ONE), 0.05, 6),
        (
            "capped by the end: hit 10 at 100ms is not sent",
            p(None, Some(0.1), ONE),
            5.0,
            10,
        ),
        ("capped by the limit", p(Some(3), None, ONE), 5.0, 3),
        (
            "thread 1 of 4 after 95ms: hits 1,5",
            p(
                None,
                None,
                Stride {
                    stride: 4,
                    offset: 1,
                },
            ),
            0.095,
            3,
        ),
        (
            "thread 3 of 4 at start: none",
            p(
                None,
                None,
                Stride {
                    stride: 4,
                    offset: 3,
                },
            ),
            0.0,
            0,
        ),
    ];
    for (label, pacer, t, want) in cases {
        assert_eq!(pacer.due_by(secs(t)), want, "{label}");
        // Consistent with pace(): exactly `want` hits have a due time <= t.
        let on_time = (0..want + 2)
            .filter(|&h| matches!(pacer.pace(Duration::ZERO, h, 0), Pace::Due(at) if at <= secs(t) + Duration::from_nanos(1)))
            .count() as u64;
        assert_eq!(on_time, want, "{label}: pace agrees");
    }
}

#[test]
fn a_joining_vu_is_jittered_within_the_gap_between_two_joins() {
    let ramp = Profile::from_stages(&[
        Stage {
            duration_s: 1.0,
            target: 1000.0,
        },
        Stage {
            duration_s: 1.0,
            target: 1000.0,
        },
        Stage {
            duration_s: 10.0,
            target: 1010.0,
        },
    ]);
    let closed = |vus: Profile| {
        AnyPacer::Closed(ClosedPacer {
            vus,
            end: None,
            limit: None,
            stride: Stride {
                stride: 1,
                offset: 0,
            },
            recheck: None,
        })
    };
    let ms = Duration::from_millis;
    // label, pacer, time, gap
    let cases = [
        (
            "1000 VUs over 1 s: 1 ms apart",
            closed(ramp.clone()),
            ms(500),
            ms(1),
        ),
        (
            "on the hold: no ramp, no jitter",
            closed(ramp.clone()),
            ms(1500),
            ms(0),
        ),
        (
            "1 VU a second: capped",
            closed(ramp.clone()),
            ms(5000),
            MAX_JOIN_GAP,
        ),
        (
            "a step: all at once",
            closed(Profile::constant(5.0)),
            ms(0),
            ms(0),
        ),
    ];
    for (label, pacer, t, want) in cases {
        let got = pacer.join_gap(t);
        assert!(
            got.abs_diff(want) < Duration::from_micros(1),
            "{label}: {got:?}, want {want:?}"
        );
    }
}

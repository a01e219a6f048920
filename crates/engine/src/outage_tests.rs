use std::time::Duration;

use super::*;

fn span(start_s: f64, connect: u64) -> Span {
    Span {
        start_s,
        errors: ErrorCounts {
            connect,
            ..ErrorCounts::default()
        },
    }
}

fn w(
    thread: u32,
    first_answer_s: Option<f64>,
    closed: Option<Span>,
    open: Option<Span>,
) -> ThreadWatch {
    ThreadWatch {
        thread,
        active: true,
        first_answer_s,
        closed,
        open,
    }
}

#[test]
fn a_thread_watch_spans_the_failures_since_its_last_answer() {
    let t0 = Instant::now();
    let ms = |n| t0 + Duration::from_millis(n);
    let mut watch = Watch::new(t0);
    watch.answered(ms(1000));
    // In flight since 990 ms, reset at 2 s: the span starts at the last answer (1 s).
    watch.failed(ms(990), ErrorClass::Reset);
    watch.failed(ms(2010), ErrorClass::Connect);
    let seen = watch.take();
    assert_eq!(seen.first_answer_s, Some(1.0));
    let open = seen.open.expect("failing at the end");
    assert_eq!(open.start_s, 1.0);
    assert_eq!((open.errors.reset, open.errors.connect), (1, 1));
    // Still open in the next interval; an answer closes it.
    watch.failed(ms(2500), ErrorClass::Connect);
    watch.answered(ms(4030));
    watch.failed(ms(4100), ErrorClass::Timeout);
    let seen = watch.take();
    assert_eq!(seen.first_answer_s, Some(4.03));
    assert_eq!(seen.closed.map(|s| s.errors.total()), Some(3));
    assert_eq!(
        seen.open.map(|s| s.start_s),
        Some(4.1),
        "a new span after the answer"
    );
}

#[test]
// long: a table of cases, one sequence of intervals each.
fn the_tracker_names_an_outage_only_when_every_active_thread_fails() {
    // label, intervals of thread watches, outages (start, end, errors), down at each end
    type Case = (
        &'static str,
        Vec<Vec<ThreadWatch>>,
        Vec<(f64, Option<f64>, u64)>,
        Vec<bool>,
    );
    let idle = ThreadWatch {
        thread: 1,
        ..ThreadWatch::default()
    };
    let cases: Vec<Case> = vec![
        (
            "killed and back",
            vec![
                vec![w(0, Some(0.1), None, None), w(1, Some(0.1), None, None)],
                vec![
                    w(0, Some(1.0), None, Some(span(2.0, 5))),
                    w(1, Some(1.0), None, Some(span(2.01, 4))),
                ],
                vec![
                    w(0, None, None, Some(span(2.0, 9))),
                    w(1, None, None, Some(span(2.01, 8))),
                ],
                vec![
                    w(0, Some(4.05), Some(span(2.0, 12)), None),
                    w(1, Some(4.03), Some(span(2.01, 10)), None),
                ],
            ],
            vec![(2.01, Some(4.03), 22)],
            vec![false, true, true, false],
        ),
        (
            "still down at the end",
            vec![vec![w(0, Some(0.5), None, Some(span(0.9, 7)))]],
            vec![(0.9, None, 7)],
            vec![true],
        ),
        (
            "one thread answering: not an outage",
            vec![
                vec![
                    w(0, Some(0.5), None, Some(span(0.9, 7))),
                    w(1, Some(0.5), None, None),
                ],
                vec![
                    w(0, Some(1.5), Some(span(0.9, 8)), None),
                    w(1, Some(1.1), None, None),
                ],
            ],
            vec![],
            vec![false, false],
        ),
        (
            "an idle thread is no evidence",
            vec![vec![w(0, Some(0.5), None, Some(span(0.9, 7))), idle]],
            vec![(0.9, None, 7)],
            vec![true],
        ),
        (
            "a blip of two failures is not an outage",
            vec![
                vec![w(0, Some(0.5), None, Some(span(0.9, 2)))],
                vec![w(0, Some(1.2), Some(span(0.9, 2)), None)],
            ],
            vec![],
            vec![false, false],
        ),
        (
            "in flight, unanswered: no verdict either way",
            vec![
                vec![
                    w(0, Some(0.5), None, Some(span(0.9, 5))),
                    w(1, Some(0.5), None, None),
                ],
                vec![w(0, None, None, Some(span(0.9, 6))), w(1, None, None, None)],
                vec![
                    w(0, Some(2.5), Some(span(0.9, 6)), None),
                    w(1, Some(2.6), None, None),
                ],
            ],
            vec![(0.9, Some(2.5), 6)],
            vec![false, true, false],
        ),
    ];
    for (label, intervals, want, downs) in cases {
        let mut t = Tracker::default();
        let got_down: Vec<bool> = intervals.iter().map(|iv| t.interval(iv)).collect();
        assert_eq!(got_down, downs, "{label}: down at each interval's end");
        let got: Vec<_> = t
            .finish()
            .iter()
            .map(|o| (o.start_s, o.end_s, o.errors))
            .collect();
        assert_eq!(got, want, "{label}");
    }
}

#[test]
fn the_outage_is_named_by_its_most_frequent_failure() {
    let e = ErrorCounts {
        connect: 3,
        reset: 10,
        ..ErrorCounts::default()
    };
    assert_eq!(worst(&e), "reset");
    assert_eq!(worst(&ErrorCounts::default()), "connect");
}

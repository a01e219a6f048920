use super::*;
use crate::failure::ErrorCounts;
use crate::flight::Sent;
use crate::hdr::{encode_histogram, new_histogram, LatencySummary};
use hdrhistogram::Histogram;

#[test]
fn histogram_covers_one_microsecond_to_sixty_seconds_at_three_digits() {
    let mut h = new_histogram(0);
    for v in [1u64, 999, 1_000, 123_456, 60_000_000] {
        h.record(v)
            .unwrap_or_else(|e| panic!("{v} µs must fit: {e:?}"));
        let back = h.value_at_quantile(1.0);
        let err = (back as f64 - v as f64).abs() / v as f64;
        assert!(err <= 0.001, "{v} µs read back as {back} (error {err})");
        h.reset();
    }
    // Larger values are clamped, not lost.
    h.saturating_record(u64::MAX);
    assert_eq!(h.len(), 1);
}

#[test]
fn micros_never_rounds_to_zero() {
    let cases = [
        ("zero", Duration::ZERO, 1),
        ("sub-µs", Duration::from_nanos(400), 1),
        ("1.5ms", Duration::from_micros(1500), 1500),
    ];
    for (label, d, want) in cases {
        assert_eq!(micros(d), want, "{label}");
    }
}

fn start() -> Instant {
    Instant::now()
}

fn resp(intended: Instant, status: u16, ms: u64) -> Response {
    Response {
        intended,
        stat: 0,
        status,
        latency: Duration::from_millis(ms),
        service: Duration::from_millis(ms / 2),
        bytes_in: 100,
        expected: false,
        grpc: false,
        at: intended + Duration::from_millis(ms),
        ended: intended + Duration::from_millis(ms),
    }
}

/// out is a request meant to start and sent at `t`, under name 0.
fn out(t: Instant) -> Sent {
    Sent {
        intended: t,
        from: t,
        sent_at: t,
        stat: 0,
    }
}

#[test]
fn recorder_counts_and_keeps_warmup_out_of_the_totals() {
    let t0 = start();
    let warm_end = t0 + Duration::from_secs(1);
    let mut r = Recorder::new(t0, warm_end, 0, 1, true);
    r.response(&resp(t0, 200, 5)); // meant to start during warmup
    r.response(&resp(warm_end, 200, 10));
    r.response(&resp(warm_end, 500, 20));
    r.error(&out(warm_end), ErrorClass::Timeout, warm_end);
    r.error(&out(t0), ErrorClass::Connect, t0); // meant to start during warmup
    r.send(
        warm_end + Duration::from_millis(3),
        warm_end,
        40,
        true,
        false,
    );
    r.send(warm_end, t0, 40, true, true); // due in the warmup, sent after: warmup
    r.connections(2, false, true);

    let iv = r.take_interval(t0);
    assert_eq!(
        (iv.requests, iv.errors, iv.bytes_in, iv.sends),
        (3, 3, 300, 2),
        "interval sees everything"
    );
    assert_eq!(iv.max_send_lag_us, 1_000_000);
    assert_eq!(iv.active_connections, 1);
    assert_eq!(r.interval.requests, 0, "a new interval starts empty");
    assert!(r.interval.latency.is_empty());

    let t = &r.totals;
    assert_eq!(t.requests, 2, "warmup response excluded");
    assert_eq!(t.status[200], 1);
    assert_eq!(t.status[500], 1);
    assert_eq!(
        t.errors,
        ErrorCounts {
            timeout: 1,
            status: 1,
            ..ErrorCounts::default()
        }
    );
    assert_eq!(
        (t.bytes_out, t.late_sends, t.connects, t.peak_connections),
        (40, 1, 2, 1)
    );
    assert_eq!((t.started, t.late_at_cap, t.max_send_lag_us), (1, 0, 3000));
    assert_eq!(t.latency.len(), 2);
    let u = t.uncorrected.as_ref().map(|u| u.max()).unwrap_or(0);
    assert!(
        (9_990..=10_010).contains(&u),
        "uncorrected max is the service time, got {u}"
    );
    assert_eq!(t.per_name[0].requests, 2);
    assert_eq!(t.per_name[0].errors, 2);
}

#[test]
fn merging_threads_adds_counts_and_histograms() {
    let t0 = start();
    let mut a = Recorder::new(t0, t0, 0, 1, false);
    let mut b = Recorder::new(t0, t0, 0, 1, false);
    for ms in 1..=50 {
        a.response(&resp(t0, 200, ms));
    }
    for ms in 51..=100 {
        b.response(&resp(t0, 404, ms));
    }
    b.error(&out(t0), ErrorClass::Reset, t0);
    let mut ia = a.take_interval(t0);
    ia.merge(&b.take_interval(t0));
    assert_eq!((ia.requests, ia.errors), (100, 51));
    let mut ta = a.totals.clone();
    ta.merge(&b.totals);
    assert_eq!(ta.requests, 100);
    assert_eq!(ta.errors.total(), 51);
    assert_eq!((ta.status[200], ta.status[404]), (50, 50));
    assert!(
        ta.uncorrected.is_none(),
        "closed model keeps no uncorrected histogram"
    );
    let s = LatencySummary::from_histogram(&ta.latency);
    assert!((s.p50 - 50.0).abs() < 0.1, "merged median {}", s.p50);
    assert!((s.max - 100.0).abs() < 0.1, "merged max {}", s.max);
    assert!((s.min - 1.0).abs() < 0.01, "merged min {}", s.min);
    assert!((s.mean - 50.5).abs() < 0.1, "merged mean {}", s.mean);
}

#[test]
fn encoded_histograms_decode_to_the_same_counts() {
    use base64::Engine as _;
    use hdrhistogram::serialization::Deserializer;
    let mut h = new_histogram(0);
    for v in [10u64, 20, 30, 40_000] {
        h.record(v).expect("in range");
    }
    let text = encode_histogram(&h);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64");
    let back: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .expect("V2 deflate");
    assert_eq!(back.len(), 4);
    assert_eq!(back.max(), h.max());
}

#[test]
fn empty_summary_is_zero() {
    assert_eq!(
        LatencySummary::from_histogram(&new_histogram(0)),
        LatencySummary::default()
    );
}

/// A recorder for a run of `span` (histograms sized by the caller, as the worker does).
fn sized(t0: Instant, span: Duration) -> Recorder {
    let highest = u64::try_from(span.as_micros()).expect("fits");
    Recorder::new(t0, t0, highest, 1, true)
}

#[test]
fn latencies_above_sixty_seconds_are_kept_or_counted_as_clamped() {
    let t0 = start();
    let s = Duration::from_secs;
    // label, histogram range, latency recorded, max read back (s), clamped
    let cases = [
        ("sized for a 3-minute run", s(181), s(90), 90.0, 0),
        ("within the 60 s floor", s(10), s(59), 59.0, 0),
        ("beyond the range", s(10), s(90), 60.0, 1),
    ];
    for (label, range, latency, max_s, clamped) in cases {
        let mut r = sized(t0, range);
        r.response(&Response {
            latency,
            ..resp(t0, 200, 1)
        });
        let max = LatencySummary::from_histogram(&r.totals.latency).max / 1000.0;
        assert!(
            (max - max_s).abs() / max_s < 0.002,
            "{label}: max {max} s, want {max_s} s"
        );
        assert_eq!(r.totals.clamped, clamped, "{label}");
    }
}

#[test]
fn unfinished_and_unsent_requests_enter_the_histogram_at_their_age() {
    let t0 = start();
    let warm_end = t0 + Duration::from_secs(1);
    let ms = Duration::from_millis;
    let mut r = sized(warm_end, Duration::from_secs(61));
    let cutoff = warm_end + ms(9_000);
    let out = |intended: Instant| Sent {
        intended,
        from: intended,
        sent_at: intended + ms(1),
        stat: 0,
    };
    r.unfinished(cutoff, &out(warm_end + ms(1_000))); // 8 s old at the cut-off
    r.unfinished(cutoff, &out(t0)); // meant for the warmup: not in the totals
    r.unsent(cutoff, warm_end + ms(5_000), 3, Some(0)); // 4 s old, three of them
    r.unsent(cutoff, t0, 2, Some(0)); // due in the warmup
    r.retried(warm_end, 1);
    r.retried(t0, 1);
    let t = &r.totals;
    assert_eq!(
        (t.unfinished, t.unsent, t.retries, t.requests),
        (1, 3, 1, 0)
    );
    assert_eq!(t.latency.len(), 4);
    let s = LatencySummary::from_histogram(&t.latency);
    assert!(
        (s.max - 8_000.0).abs() < 10.0,
        "unfinished at its age: {}",
        s.max
    );
    assert!(
        (s.min - 4_000.0).abs() < 10.0,
        "unsent at their age: {}",
        s.min
    );
    let u = t.uncorrected.as_ref().expect("open");
    assert_eq!(u.len(), 1, "only the unfinished one has a service time");
    assert_eq!(t.per_name[0].latency.len(), 4);
}

#[test]
fn connection_gauge_peaks_at_the_sum_not_the_sum_of_peaks() {
    let t0 = start();
    let gauge = ConnectionGauge::default();
    let mut a = Recorder::new(t0, t0, 0, 1, true);
    let mut b = Recorder::new(t0, t0, 0, 1, true);
    // Thread a holds 3 connections, then closes them; thread b opens 3 afterwards.
    for (thread, open) in [(0, true), (0, false), (1, true)] {
        let rec = if thread == 0 { &mut a } else { &mut b };
        for _ in 0..3 {
            rec.connections(u32::from(open), !open, open);
            if open {
                gauge.opened();
            } else {
                gauge.closed();
            }
        }
    }
    let mut sum = a.totals.clone();
    sum.merge(&b.totals);
    assert_eq!(
        sum.peak_connections, 6,
        "the sum of thread peaks overstates"
    );
    assert_eq!(gauge.peak(), 3, "never more than 3 open at once");
    gauge.closed();
    gauge.opened();
    assert_eq!(gauge.peak(), 3);
}

#[test]
fn in_flight_counts_requests_sent_and_not_yet_ended() {
    // Each case: what happens to one thread, then how many requests its interval says are
    // out when it closes.
    let t0 = start();
    let sent = Sent {
        intended: t0,
        from: t0,
        sent_at: t0,
        stat: 0,
    };
    type Event = fn(&mut Recorder, Instant, &Sent);
    let send: Event = |r, t, _| r.send(t, t, 10, false, false);
    let answer: Event = |r, t, _| r.response(&resp(t, 200, 5));
    let refuse: Event = |r, t, _| r.response(&resp(t, 503, 5));
    let fail: Event = |r, t, s| r.error(s, ErrorClass::Timeout, t);
    let cut: Event = |r, t, s| r.unfinished(t, s);
    let cases: [(&str, Vec<Event>, u64); 6] = [
        ("nothing sent", vec![], 0),
        ("three out", vec![send, send, send], 3),
        ("answered", vec![send, send, answer], 1),
        ("an error status ends it too", vec![send, refuse], 0),
        ("failed", vec![send, send, fail, answer], 0),
        ("cut off at the end", vec![send, send, cut], 1),
    ];
    for (label, events, want) in cases {
        let mut r = Recorder::new(t0, t0, 0, 1, false);
        for e in &events {
            e(&mut r, t0, &sent);
        }
        assert_eq!(r.take_interval(t0).in_flight, want, "{label}");
        assert_eq!(
            r.take_interval(t0).in_flight,
            want,
            "{label}: still out in the next interval"
        );
    }
    // Merged over threads, the counts add.
    let mut a = Recorder::new(t0, t0, 0, 1, false);
    let mut b = Recorder::new(t0, t0, 0, 1, false);
    for _ in 0..4 {
        send(&mut a, t0, &sent);
    }
    send(&mut b, t0, &sent);
    let mut ia = a.take_interval(t0);
    ia.merge(&b.take_interval(t0));
    assert_eq!(ia.in_flight, 5);
}

#[test]
fn in_flight_mean_is_the_time_weighted_mean_over_the_interval() {
    // Each case: events at offsets (ms) from the interval's start, the interval closed at
    // `end` ms; the mean is the area under the in-flight count divided by the span.
    #[derive(Clone, Copy)]
    enum E {
        Send(u64),
        Answer(u64),
        Fail(u64),
    }
    use E::*;
    let cases: [(&str, Vec<E>, u64, f64, u64); 7] = [
        ("nothing", vec![], 1000, 0.0, 0),
        ("one out the whole second", vec![Send(0)], 1000, 1.0, 1),
        ("one out for half", vec![Send(0), Answer(500)], 1000, 0.5, 0),
        // 0-250: 1, 250-500: 2, 500-750: 1, 750-1000: 0 -> (250+500+250)/1000
        (
            "overlapping",
            vec![Send(0), Send(250), Answer(500), Fail(750)],
            1000,
            1.0,
            0,
        ),
        // The end sample says 0; the interval averaged 0.9 (the case issue 13 saw).
        (
            "out until just before the end",
            vec![Send(0), Answer(900)],
            1000,
            0.9,
            0,
        ),
        // Sent late in the interval: the end sample says 1, the mean is 0.1.
        ("sent just before the end", vec![Send(900)], 1000, 0.1, 1),
        // An event stamped before the last one does not move the clock back; the area its
        // request was counted for after it is taken back: one out 0-300, one 400-1000.
        (
            "out of order",
            vec![Send(0), Send(400), Answer(300)],
            1000,
            (300.0 + 600.0) / 1000.0,
            1,
        ),
    ];
    let t0 = start();
    let ms = Duration::from_millis;
    for (label, events, end, want, end_sample) in cases {
        let mut r = Recorder::new(t0, t0, 0, 1, false);
        for e in &events {
            match *e {
                Send(t) => r.send(t0 + ms(t), t0 + ms(t), 10, false, false),
                Answer(t) => r.response(&Response {
                    at: t0 + ms(t),
                    ..resp(t0, 200, t)
                }),
                Fail(t) => r.error(&out(t0), ErrorClass::Reset, t0 + ms(t)),
            }
        }
        let iv = r.take_interval(t0 + ms(end));
        assert!(
            (iv.in_flight_mean - want).abs() < 1e-9,
            "{label}: mean {}, want {want}",
            iv.in_flight_mean
        );
        assert_eq!(iv.in_flight, end_sample, "{label}: end sample");
        // The next interval starts where this one ended, with what is still out.
        let next = r.take_interval(t0 + ms(end + 500));
        assert!(
            (next.in_flight_mean - end_sample as f64).abs() < 1e-9,
            "{label}: next interval {}",
            next.in_flight_mean
        );
    }
}

#[test]
fn in_flight_means_of_threads_add_when_merged() {
    let t0 = start();
    let ms = Duration::from_millis;
    let mut a = Recorder::new(t0, t0, 0, 1, false);
    let mut b = Recorder::new(t0, t0, 0, 1, false);
    a.send(t0, t0, 10, false, false);
    b.send(t0 + ms(500), t0 + ms(500), 10, false, false);
    let mut ia = a.take_interval(t0 + ms(1000));
    ia.merge(&b.take_interval(t0 + ms(1000)));
    assert!(
        (ia.in_flight_mean - 1.5).abs() < 1e-9,
        "{}",
        ia.in_flight_mean
    );
}

#[test]
fn in_flight_spans_what_the_latency_spans() {
    // Little's law compares the in-flight mean with λW, W the latency: both must measure one
    // span. Open model: a hit intended at 0 ms that the generator sent at 100 ms is in flight
    // from 0 (its latency is timed from there); its answer arrived at 600 ms (the kernel's
    // stamp, the latency's end) and was read at 900 ms: it stops counting at 600.
    let t0 = start();
    let ms = Duration::from_millis;
    let mut r = Recorder::new(t0, t0, 0, 1, true);
    r.send(t0 + ms(100), t0, 10, true, false);
    r.response(&Response {
        at: t0 + ms(900),
        ended: t0 + ms(600),
        ..resp(t0, 200, 600)
    });
    let iv = r.take_interval(t0 + ms(1000));
    assert!(
        (iv.in_flight_mean - 0.6).abs() < 1e-9,
        "open: {}",
        iv.in_flight_mean
    );
    // Closed model: from the actual send (the latency's start there), to the arrival.
    let mut r = Recorder::new(t0, t0, 0, 1, false);
    r.send(t0 + ms(100), t0, 10, false, false);
    r.response(&Response {
        at: t0 + ms(900),
        ended: t0 + ms(600),
        ..resp(t0, 200, 500)
    });
    let iv = r.take_interval(t0 + ms(1000));
    assert!(
        (iv.in_flight_mean - 0.5).abs() < 1e-9,
        "closed: {}",
        iv.in_flight_mean
    );
    // Only the current interval's area is taken back: an answer that arrived before the
    // interval began takes back what this interval counted, no more.
    let mut r = Recorder::new(t0, t0, 0, 1, true);
    r.send(t0, t0, 10, false, false);
    let first = r.take_interval(t0 + ms(1000));
    assert!(
        (first.in_flight_mean - 1.0).abs() < 1e-9,
        "first: {}",
        first.in_flight_mean
    );
    r.response(&Response {
        at: t0 + ms(1500),
        ended: t0 + ms(800),
        ..resp(t0, 200, 800)
    });
    let second = r.take_interval(t0 + ms(2000));
    assert!(
        second.in_flight_mean.abs() < 1e-9,
        "second: {}",
        second.in_flight_mean
    );
}

#[test]
fn tallies_count_per_name_per_interval_and_keep_warmup_out_of_the_totals() {
    let t0 = start();
    let warm_end = t0 + Duration::from_secs(1);
    let mut r = Recorder::new(t0, warm_end, 0, 2, false);
    r.track_names(2);
    r.tally(t0, 1, "RUNNING");
    r.tally(warm_end, 1, "RUNNING");
    r.tally(warm_end, 1, "SUCCEEDED");
    r.tally(warm_end, 0, "QUEUED");
    let first = r.take_interval(warm_end);
    let counts = |iv: &IntervalData, i: usize| iv.names[i].tally.counts();
    assert_eq!(
        counts(&first, 1)["RUNNING"],
        2,
        "the interval sees the warm-up too"
    );
    assert_eq!(counts(&first, 1)["SUCCEEDED"], 1);
    assert_eq!(counts(&first, 0)["QUEUED"], 1);
    r.tally(warm_end, 1, "SUCCEEDED");
    let second = r.take_interval(warm_end + Duration::from_secs(1));
    assert_eq!(
        counts(&second, 1).len(),
        1,
        "a new interval starts from zero"
    );
    assert_eq!(counts(&second, 1)["SUCCEEDED"], 1);
    assert!(counts(&second, 0).is_empty());
    let totals = &r.totals.per_name[1].tally;
    assert_eq!(
        (totals.counts()["RUNNING"], totals.counts()["SUCCEEDED"]),
        (1, 2)
    );
    // Threads merge value by value.
    let mut other = Recorder::new(t0, t0, 0, 2, false);
    other.tally(t0, 1, "RUNNING");
    r.totals.merge(&other.totals);
    assert_eq!(r.totals.per_name[1].tally.counts()["RUNNING"], 2);
}

/// A reporter that wakes late (its thread starved of CPU) takes an interval holding only
/// what came before its boundary: what came after starts the next interval, the check that
/// failed on a late answer with it; at the end the last interval takes the rest. Taken
/// whole, the first interval held 0.7 s of answers under 0.5 s of time.
#[test]
fn a_late_take_leaves_what_came_after_the_boundary_to_the_next_interval() {
    let t0 = start();
    let ms = Duration::from_millis;
    let mut r = Recorder::new(t0, t0, 0, 1, false);
    r.bound_interval(t0 + ms(500));
    r.response(&resp(t0 + ms(100), 200, 300)); // answered at 400 ms
    r.send(t0 + ms(450), t0 + ms(450), 40, false, false);
    r.response(&resp(t0 + ms(500), 200, 100)); // answered at 600 ms, past the boundary
    r.check_failed(t0 + ms(500), 0); // a check on that answer: booked with it
    r.send(t0 + ms(650), t0 + ms(650), 40, false, false);
    r.error(&out(t0 + ms(650)), ErrorClass::Timeout, t0 + ms(700));
    // The reporter wakes 300 ms late.
    let first = r.take_interval(t0 + ms(800));
    r.bound_interval(t0 + ms(1000));
    assert_eq!((first.requests, first.errors, first.sends), (1, 0, 1));
    r.response(&resp(t0 + ms(900), 200, 200)); // answered at 1.1 s, past the next boundary
    let second = r.take_interval(t0 + ms(1000));
    assert_eq!((second.requests, second.errors, second.sends), (1, 2, 1));
    assert_eq!(
        second.latency.len(),
        1,
        "the late answer's latency went with it"
    );
    // The run ends: the last interval takes everything past the boundary.
    r.unbound();
    let last = r.take_interval(t0 + ms(1200));
    assert_eq!((last.requests, last.errors, last.sends), (1, 0, 0));
    assert_eq!(
        r.totals.requests, 3,
        "every answer in the totals, and in one interval"
    );
}

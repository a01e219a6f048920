use super::*;

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

fn resp(status: u16, ms: u64) -> Response {
    Response {
        stat: 0,
        status,
        latency: Duration::from_millis(ms),
        service: Duration::from_millis(ms / 2),
        bytes_in: 100,
    }
}

#[test]
fn recorder_counts_and_keeps_warmup_out_of_the_totals() {
    let t0 = start();
    let warm_end = t0 + Duration::from_secs(1);
    let mut r = Recorder::new(warm_end, 0, 1, true);
    r.response(t0, &resp(200, 5)); // during warmup
    r.response(warm_end, &resp(200, 10));
    r.response(warm_end, &resp(500, 20));
    r.error(warm_end, 0, ErrorClass::Timeout);
    r.error(t0, 0, ErrorClass::Connect); // during warmup
    r.send(warm_end, 40, Duration::from_millis(3), true);
    r.connections(2, false, true);

    let iv = r.take_interval();
    assert_eq!(
        (iv.requests, iv.errors, iv.bytes_in, iv.sends),
        (3, 3, 300, 1),
        "interval sees everything"
    );
    assert_eq!(iv.max_send_lag_us, 3000);
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
    let mut a = Recorder::new(t0, 0, 1, false);
    let mut b = Recorder::new(t0, 0, 1, false);
    for ms in 1..=50 {
        a.response(t0, &resp(200, ms));
    }
    for ms in 51..=100 {
        b.response(t0, &resp(404, ms));
    }
    b.error(t0, 0, ErrorClass::Reset);
    let mut ia = a.take_interval();
    ia.merge(&b.take_interval());
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

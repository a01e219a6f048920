//! Memory must not grow with the number of requests: count heap allocations across runs of
//! different lengths and check the extra requests allocated (next to) nothing.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redline_engine::{run, RunConfig, RunControl};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: delegates to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_for(url: &str, requests: u64, open: bool) -> u64 {
    let cfg = RunConfig {
        url: url.to_string(),
        connections: 4,
        threads: Some(2),
        requests: Some(i64::try_from(requests).expect("a small count")),
        rate: open.then_some(50_000.0),
        // A capped pool, so growing it (a few allocations per new connection) stays bounded.
        max_connections: Some(4),
        interval_s: 60.0,
        ..RunConfig::default()
    };
    let before = ALLOCS.load(Ordering::Relaxed);
    let r = run(cfg, Arc::new(RunControl::new()), &mut |_| {}).expect("run");
    assert_eq!(r.requests, requests);
    ALLOCS.load(Ordering::Relaxed) - before
}

#[test]
fn requests_do_not_allocate() {
    let server = common::start(common::Mode::Ok {
        delay: Duration::ZERO,
    });
    let url = server.url("/");
    for open in [false, true] {
        // The server thread allocates too; its per-request cost is in both runs, so compare
        // per-request rates against a bound well under one allocation per request.
        let small = allocations_for(&url, 500, open);
        let large = allocations_for(&url, 5_500, open);
        let per_request = large.saturating_sub(small) as f64 / 5_000.0;
        eprintln!(
            "open={open}: {small} vs {large} allocations, {per_request:.3} per extra request"
        );
        assert!(
            per_request < 0.5,
            "open={open}: {per_request:.3} allocations per request"
        );
    }
}

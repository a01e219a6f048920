//! A counting global allocator for the allocation and memory tests: each test binary that
//! wants it declares `#[global_allocator] static GLOBAL: Counting = Counting;` (Rust allows one
//! per binary, so the declaration can not live here) and reads `allocations()` around a run,
//! or `live_bytes()` and `peak_bytes()` for the heap the run held.
//!
//! The test server's threads mark themselves [`uncounted`]: it shares the process, and its
//! per-connection buffers are not the engine's memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Counting is the system allocator, counting allocations and reallocations (every thread's),
/// and the bytes live on counted threads (with their peak).
pub struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

thread_local! {
    /// UNCOUNTED: this thread's allocations are left out of the counts (the test server's).
    static UNCOUNTED: Cell<bool> = const { Cell::new(false) };
}

/// allocations is how many allocations (and reallocations) the process made so far.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

/// live_bytes is the heap bytes counted threads hold now (allocated less freed).
pub fn live_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// peak_bytes is the most [`live_bytes`] reached since the last [`reset_peak`].
pub fn peak_bytes() -> i64 {
    PEAK.load(Ordering::Relaxed)
}

/// reset_peak starts a new peak from what is live now.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// uncounted leaves the calling thread's bytes out of the live and peak counts from now on.
pub fn uncounted() {
    UNCOUNTED.with(|u| u.set(true));
}

/// counted says whether the calling thread counts (true on a thread being torn down).
fn counted() -> bool {
    UNCOUNTED.try_with(|u| !u.get()).unwrap_or(true)
}

/// grew books `delta` bytes more (or fewer) live and moves the peak.
fn grew(delta: i64) {
    let now = LIVE.fetch_add(delta, Ordering::Relaxed) + delta;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: delegates to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        if counted() {
            grew(layout.size() as i64);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        if counted() {
            grew(layout.size() as i64);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counted() {
            grew(-(layout.size() as i64));
        }
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        if counted() {
            grew(size as i64 - layout.size() as i64);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, size) }
    }
}

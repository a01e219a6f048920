//! A counting global allocator for the allocation tests: each test binary that wants it
//! declares `#[global_allocator] static GLOBAL: Counting = Counting;` (Rust allows one per
//! binary, so the declaration can not live here) and reads `allocations()` around a run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// Counting is the system allocator, counting allocations and reallocations.
pub struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

/// allocations is how many allocations (and reallocations) the process made so far.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

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

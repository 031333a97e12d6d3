//! A counting global allocator: live heap bytes and allocation counts, cheap enough to leave on
//! while measuring throughput.
//!
//! Each thread adds to its own cache-line-padded slot (picked once per thread), so counting costs
//! an uncontended relaxed add per allocation instead of a shared atomic bounced between cores.
//! A binary opts in with
//! `#[global_allocator] static ALLOC: jsonrpc_duplex_benches::alloc::Counting = jsonrpc_duplex_benches::alloc::Counting;`
//! Without that, [`snapshot`] reads zeros.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

const SLOTS: usize = 64;

#[repr(align(128))]
struct Slot {
    bytes: AtomicI64,
    allocs: AtomicI64,
    allocated: AtomicI64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot { bytes: AtomicI64::new(0), allocs: AtomicI64::new(0), allocated: AtomicI64::new(0) };
static COUNTERS: [Slot; SLOTS] = [EMPTY; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn slot() -> &'static Slot {
    let i = MY_SLOT
        .try_with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
                s.set(i);
            }
            i
        })
        // A thread being torn down: share slot 0.
        .unwrap_or(0);
    &COUNTERS[i]
}

/// The counting allocator (wraps [`System`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

// SAFETY: every call is forwarded unchanged to `System`; only counters are touched besides.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let s = slot();
        s.bytes.fetch_add(layout.size() as i64, Ordering::Relaxed);
        s.allocs.fetch_add(1, Ordering::Relaxed);
        s.allocated.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let s = slot();
        s.bytes.fetch_add(layout.size() as i64, Ordering::Relaxed);
        s.allocs.fetch_add(1, Ordering::Relaxed);
        s.allocated.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        slot().bytes.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let s = slot();
        s.bytes.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        s.allocs.fetch_add(1, Ordering::Relaxed);
        s.allocated.fetch_add(new_size as i64, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Totals over all threads so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Heap bytes live now.
    pub live_bytes: i64,
    /// Allocations (and reallocations) made since the start.
    pub allocs: i64,
    /// Bytes requested by those allocations (a reallocation counts its new size).
    pub allocated: i64,
}

/// Read the counters (zeros unless [`Counting`] is the global allocator).
pub fn snapshot() -> Snapshot {
    let mut s = Snapshot::default();
    for c in &COUNTERS {
        s.live_bytes += c.bytes.load(Ordering::Relaxed);
        s.allocs += c.allocs.load(Ordering::Relaxed);
        s.allocated += c.allocated.load(Ordering::Relaxed);
    }
    s
}

//! Memory as the bench measures it: a counting global allocator (live heap bytes, as
//! requested, not as malloc rounds them) and the process's peak resident set.
//!
//! The allocator counts only while switched on (the memory phases), so that the timed phases
//! run on the plain system allocator: an atomic per allocation would tax the naive baseline,
//! which allocates per JSON value, more than the views, which hardly allocate.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};

pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
/// Signed: a block allocated before counting started may be freed while it counts.
static LIVE: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            LIVE.fetch_add(layout.size() as i64, Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            LIVE.fetch_add(layout.size() as i64, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        if COUNTING.load(Relaxed) {
            LIVE.fetch_sub(layout.size() as i64, Relaxed);
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        }
        p
    }
}

/// Live heap bytes counted so far.
pub fn live() -> i64 {
    LIVE.load(Relaxed)
}

/// Switches counting on or off.
pub fn counting(on: bool) {
    COUNTING.store(on, Relaxed);
}

/// A field of /proc/self/status, in kB.
fn status_kb(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Resets VmHWM to the current RSS (`5` to clear_refs); false where the kernel refuses.
fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Measures the peak RSS growth over a phase: VmHWM at its end minus VmRSS at its start.
pub struct RssProbe {
    start_kb: Option<u64>,
    reset: bool,
}

impl RssProbe {
    pub fn start() -> RssProbe {
        let reset = reset_hwm();
        RssProbe {
            start_kb: status_kb("VmRSS:"),
            reset,
        }
    }

    pub fn growth_mib(&self) -> Option<f64> {
        if !self.reset {
            return None;
        }
        let hwm = status_kb("VmHWM:")?;
        Some(hwm.saturating_sub(self.start_kb?) as f64 / 1024.0)
    }
}

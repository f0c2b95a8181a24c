//! Heap as the bench and the memory tests measure it: a counting global allocator (live heap
//! bytes as requested, not as malloc rounds them), counting per thread and only while a thread
//! has switched it on, so that other threads (a test harness's, the timed phases of the bench)
//! run on the plain system allocator; and the process's peak resident set.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The global allocator that counts: `#[global_allocator] static A: Counting = Counting;`.
pub struct Counting;

thread_local! {
    /// Whether this thread counts; its live bytes (signed: a block allocated before counting
    /// started may be freed while it counts) and their peak since counting started.
    static ON: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

/// Adds `n` bytes to this thread's count, when it counts.
fn add(n: i64) {
    // `try_with`: a thread being torn down may still free.
    let _ = ON.try_with(|on| {
        if on.get() {
            let live = LIVE.get() + n;
            LIVE.set(live);
            if live > PEAK.get() {
                PEAK.set(live);
            }
        }
    });
}

// SAFETY: every method hands the call to the system allocator with the caller's own
// arguments, and only counts beside it: the contract `GlobalAlloc` asks is the system's.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires it.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as i64);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc_zeroed` requires it.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as i64);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is the system's, with this layout.
        unsafe { System.dealloc(ptr, layout) };
        add(-(layout.size() as i64));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from the system allocator with `layout`; `new_size` is the
        // caller's, as `GlobalAlloc::realloc` requires it.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// This thread's count while it lives: started at zero, stopped when dropped. Meaningful only
/// in a program whose global allocator is [`Counting`] (else every figure stays 0).
pub struct HeapCount(());

impl HeapCount {
    /// Starts counting this thread's allocations from zero.
    pub fn start() -> HeapCount {
        LIVE.set(0);
        PEAK.set(0);
        ON.set(true);
        HeapCount(())
    }

    /// Live bytes this thread allocated (less what it freed) since the start.
    pub fn live(&self) -> i64 {
        LIVE.get()
    }

    /// The highest [`live`](Self::live) was since the start, or since [`HeapCount::reset_peak`].
    pub fn peak(&self) -> i64 {
        PEAK.get()
    }

    /// Starts the peak again from what is live now.
    pub fn reset_peak(&self) {
        PEAK.set(LIVE.get());
    }
}

impl Drop for HeapCount {
    fn drop(&mut self) {
        ON.set(false);
    }
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

    /// The growth in MiB, where the kernel let the high-water mark be reset.
    pub fn growth_mib(&self) -> Option<f64> {
        if !self.reset {
            return None;
        }
        let hwm = status_kb("VmHWM:")?;
        Some(hwm.saturating_sub(self.start_kb?) as f64 / 1024.0)
    }
}

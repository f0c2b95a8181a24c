//! What a timed phase costs: this thread's CPU time (the engine and the native core run on the
//! calling thread), so that what other processes on a shared machine do does not count; and
//! the wall time, for reference.

use std::time::{Duration, Instant};

#[derive(Clone, Copy, Default)]
pub(crate) struct Spent {
    pub cpu: Duration,
    pub wall: Duration,
}

pub(crate) struct Stopwatch {
    cpu: Duration,
    wall: Instant,
}

impl Stopwatch {
    pub(crate) fn start() -> Stopwatch {
        Stopwatch {
            cpu: thread_cpu(),
            wall: Instant::now(),
        }
    }

    pub(crate) fn add_to(self, spent: &mut Spent) {
        spent.cpu += thread_cpu().saturating_sub(self.cpu);
        spent.wall += self.wall.elapsed();
    }
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, through the `libc` crate); zero where it
/// cannot be read.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a pointer to a live, writable one.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
        return Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
    }
    Duration::ZERO
}

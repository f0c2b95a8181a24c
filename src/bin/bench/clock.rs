//! What a timed phase costs: this thread's CPU time (the engine and the native core run on the
//! calling thread), so that what other processes on a shared machine do does not count; and
//! the wall time, for reference.

use std::time::{Duration, Instant};

#[derive(Clone, Copy, Default)]
pub struct Spent {
    pub cpu: Duration,
    pub wall: Duration,
}

pub struct Stopwatch {
    cpu: Duration,
    wall: Instant,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch {
            cpu: thread_cpu(),
            wall: Instant::now(),
        }
    }

    pub fn add_to(self, spent: &mut Spent) {
        spent.cpu += thread_cpu().saturating_sub(self.cpu);
        spent.wall += self.wall.elapsed();
    }
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`); zero where it cannot be read.
fn thread_cpu() -> Duration {
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    {
        #[repr(C)]
        struct Timespec {
            tv_sec: i64,
            tv_nsec: i64,
        }
        unsafe extern "C" {
            fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
        }
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut t = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
        }
    }
    Duration::ZERO
}

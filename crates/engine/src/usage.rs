//! CPU time of the generator itself, for the self-check (getrusage).

use std::time::Duration;

/// CpuTimes is user and system CPU time, as reported by `getrusage`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    /// user: time in user space.
    pub user: Duration,
    /// sys: time in the kernel.
    pub sys: Duration,
}

impl CpuTimes {
    /// thread is the calling thread's CPU time so far (zero if the OS cannot say).
    pub fn thread() -> Self {
        Self::get(libc::RUSAGE_THREAD)
    }

    /// process is the whole process's CPU time so far (zero if the OS cannot say).
    pub fn process() -> Self {
        Self::get(libc::RUSAGE_SELF)
    }

    fn get(who: libc::c_int) -> Self {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `ru` is a valid, writable rusage; getrusage only writes into it.
        let rc = unsafe { libc::getrusage(who, ru.as_mut_ptr()) };
        if rc != 0 {
            return CpuTimes::default();
        }
        // SAFETY: getrusage succeeded, so it initialised the struct (it was zeroed anyway).
        let ru = unsafe { ru.assume_init() };
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        CpuTimes {
            user: tv(ru.ru_utime),
            sys: tv(ru.ru_stime),
        }
    }

    /// since is the CPU time spent between `earlier` and `self`.
    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            sys: self.sys.saturating_sub(earlier.sys),
        }
    }

    /// add sums two CPU times.
    pub fn add(&self, o: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user + o.user,
            sys: self.sys + o.sys,
        }
    }

    /// total is user plus system time, in seconds.
    pub fn total_s(&self) -> f64 {
        (self.user + self.sys).as_secs_f64()
    }
}

//! Clock reads (vDSO, no system call) and the absolute sleep of the RT loops.

#[inline]
fn read(clock: libc::clockid_t) -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a live local. With a valid clock id it cannot fail, and the
    // zeroed timespec stays 0 if it did.
    unsafe { libc::clock_gettime(clock, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CLOCK_MONOTONIC in ns: periods and deadlines.
#[inline]
pub(crate) fn monotonic_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in ns: the clock software packet timestamps use.
#[inline]
pub(crate) fn realtime_ns() -> u64 {
    read(libc::CLOCK_REALTIME)
}

/// Sleeps until CLOCK_MONOTONIC reaches `ns` (absolute: no drift from the time the call takes). Signals are
/// blocked in the RT threads, so EINTR is rare; it restarts the same absolute sleep.
#[inline]
pub(crate) fn sleep_until_monotonic(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: clock_nanosleep reads one live timespec; the remainder pointer may be null with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_advance_and_sleep_reaches_its_deadline() {
        let a = monotonic_ns();
        sleep_until_monotonic(a + 200_000);
        assert!(monotonic_ns() >= a + 200_000);
        // CLOCK_REALTIME is after 2020 on any machine that runs this.
        assert!(realtime_ns() > 1_577_836_800 * 1_000_000_000);
    }
}

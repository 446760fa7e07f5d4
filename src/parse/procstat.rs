//! /proc/stat: the kernel's counters since boot. Only `btime` is read (when the running kernel booted).

/// The `btime` line's value: seconds since the epoch. None when there is no such line or it is not a number.
pub(crate) fn btime(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This project's development VM (Debian 12, 2 CPUs, kernel 6.18.44-fc), 2026-12-04; the `intr` line cut.
    const DEV_VM: &str = "cpu  1239048 28081 268767 10580495 12234 0 6811 3160 0 0
cpu0 602917 13854 124770 5321919 3060 0 1598 1611 0 0
cpu1 636130 14226 143997 5258575 9173 0 5212 1548 0 0
intr 17772631 0 0 0 0 0 0 0 0 0 0 0 0 0
ctxt 32028343
btime 1796364587
processes 433071
procs_running 3
procs_blocked 0
softirq 13492285 0 1219918 1178 5490480 1975658 0 151 2055237 424 2749239
";

    #[test]
    fn btime_is_read_and_garbage_is_none() {
        assert_eq!(btime(DEV_VM), Some(1_796_364_587));
        assert_eq!(
            btime(&DEV_VM.replace("btime 1796364587", "btime soon")),
            None
        );
        assert_eq!(btime("cpu  1 2 3\n"), None);
        assert_eq!(btime(""), None);
    }
}

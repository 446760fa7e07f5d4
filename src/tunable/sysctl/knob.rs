//! Kernel settings that are one value in /proc/sys: the check reads it and compares it with what RT needs, and
//! the sysctl step writes that same value. Declared once here (tuned's get/set/verify per tunable), so the
//! check and its remedy cannot drift apart.

use crate::checks::{Assessment, CheckId, Ctx, Eval, unknown};
use crate::host::Host;
use crate::parse::cpulist;
use crate::parse::kint::{self, Range};

const SYSCTL_DIR: &str = "/proc/sys";

/// What value the RT core needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// Exactly this integer; the file holds the values of the range (proc_dointvec_minmax's bounds).
    Equals(i64, Range),
    /// This integer or more (fix writes the minimum), within the range.
    AtLeast(i64, Range),
    /// A CPU list without the RT core (fix writes the housekeeping CPUs).
    NotOnCore,
}

/// One sysctl: the check that reads it, its key, the value wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Knob {
    pub(crate) check: CheckId,
    /// The sysctl key, as in /etc/sysctl.d ("kernel.timer_migration").
    pub(crate) key: &'static str,
    pub(crate) want: Wanted,
    /// When the kernel has no such file: it lacks the feature, which is as good as off (this detail). In a tree,
    /// only where the snapshot recorded the file absent (`Host::lacks`); otherwise it was not captured.
    pub(crate) absent_passes: Option<&'static str>,
}

pub(crate) const RT_RUNTIME: Knob = Knob {
    check: CheckId::RtThrottling,
    key: "kernel.sched_rt_runtime_us",
    want: Wanted::Equals(-1, Range::new(-1..=i32::MAX as i64)),
    absent_passes: None,
};
pub(crate) const TIMER_MIGRATION: Knob = Knob {
    check: CheckId::TimerMigration,
    key: "kernel.timer_migration",
    want: Wanted::Equals(0, Range::BOOL),
    // kernel/time/timer.c registers it only with CONFIG_SMP and CONFIG_NO_HZ_COMMON, without which timers
    // never migrate.
    absent_passes: Some("no timer migration in this kernel"),
};
pub(crate) const STAT_INTERVAL: Knob = Knob {
    check: CheckId::StatInterval,
    key: "vm.stat_interval",
    // proc_dointvec_jiffies: an int of jiffies shown in seconds, so within INT_MAX / HZ (HZ ≥ 100).
    want: Wanted::AtLeast(
        10,
        Range::new(-(i32::MAX as i64 / 100)..=i32::MAX as i64 / 100),
    ),
    absent_passes: None,
};
pub(crate) const NUMA_BALANCING: Knob = Knob {
    check: CheckId::NumaBalancing,
    key: "kernel.numa_balancing",
    // 0 off, 1 normal, 2 memory tiering, 3 both (Documentation/admin-guide/sysctl/kernel.rst).
    want: Wanted::Equals(0, Range::new(0..=3)),
    absent_passes: Some("no NUMA balancing in this kernel"),
};
pub(crate) const NMI_WATCHDOG: Knob = Knob {
    check: CheckId::NmiWatchdog,
    key: "kernel.nmi_watchdog",
    want: Wanted::Equals(0, Range::BOOL),
    absent_passes: Some("no NMI watchdog in this kernel"),
};
pub(crate) const WATCHDOG_CPUMASK: Knob = Knob {
    check: CheckId::SoftWatchdog,
    key: "kernel.watchdog_cpumask",
    want: Wanted::NotOnCore,
    absent_passes: None,
};

/// The sysctl step's settings, in the order it writes them.
pub(crate) const SYSCTLS: &[Knob] = &[
    RT_RUNTIME,
    TIMER_MIGRATION,
    STAT_INTERVAL,
    NUMA_BALANCING,
    NMI_WATCHDOG,
    WATCHDOG_CPUMASK,
];

impl Knob {
    /// The file under /proc/sys.
    pub(crate) fn path(&self) -> String {
        format!("{SYSCTL_DIR}/{}", self.key.replace('.', "/"))
    }

    /// The short name in details ("timer_migration=1").
    pub(crate) fn name(&self) -> &'static str {
        self.key.rsplit('.').next().unwrap_or(self.key)
    }

    /// The value `fix` writes; `housekeeping` are the CPUs other than the RT core.
    pub(crate) fn target(&self, housekeeping: &[usize]) -> String {
        match self.want {
            Wanted::Equals(v, _) | Wanted::AtLeast(v, _) => v.to_string(),
            Wanted::NotOnCore => cpulist::format(housekeeping),
        }
    }

    /// Whether `raw` is as wanted; `None` when it is not a value of the knob's kind.
    pub(crate) fn satisfied(&self, raw: &str, core: usize) -> Option<bool> {
        self.judge(raw, core).ok()
    }

    /// Whether `raw` is as wanted, or why it is no value the kernel writes in this file.
    fn judge(&self, raw: &str, core: usize) -> Result<bool, String> {
        let num = |r: &Range| kint::int(raw.trim(), r).map_err(|e| e.to_string());
        match self.want {
            Wanted::Equals(w, r) => num(&r).map(|v| v == w),
            Wanted::AtLeast(w, r) => num(&r).map(|v| v >= w),
            Wanted::NotOnCore => cpulist::parse(raw.trim())
                .map(|l| !l.contains(&core))
                .map_err(|_| "not a CPU list".to_string()),
        }
    }

    /// The check: read the value, pass when it is as wanted.
    pub(crate) fn evaluate(&self, host: &Host, ctx: &Ctx) -> Eval {
        let path = self.path();
        let raw = match host.read_trimmed(&path) {
            Ok(raw) => raw,
            Err(e) if e.is_not_found() => {
                return match self.absent_passes {
                    Some(why) if host.lacks(&path) => Ok(Assessment::pass(why)),
                    _ => Err(crate::checks::absent(host, &path)),
                };
            }
            Err(e) => return Err(unknown(format!("{path}: {}", e.reason()))),
        };
        let name = self.name();
        let shown = crate::checks::sanitize(&raw, 40);
        match self.judge(&raw, ctx.core) {
            Ok(true) => Ok(Assessment::pass(format!(
                "{name}={}",
                crate::checks::shown(&shown)
            ))),
            Ok(false) if self.want == Wanted::NotOnCore => Ok(Assessment::fail(format!(
                "{name}={shown} includes CPU{}",
                ctx.core
            ))),
            Ok(false) => Ok(Assessment::fail(format!("{name}={shown}"))),
            Err(why) => Err(unknown(format!(
                "{name}: '{shown}' is not a value the kernel writes ({why})"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        Ctx {
            core: 1,
            nic: None,
            pid: None,
            smi_seconds: None,
        }
    }

    #[test]
    fn values_compare_by_kind() {
        assert_eq!(RT_RUNTIME.satisfied("-1\n", 1), Some(true));
        assert_eq!(RT_RUNTIME.satisfied("950000", 1), Some(false));
        assert_eq!(RT_RUNTIME.satisfied("-1x", 1), None);
        assert_eq!(STAT_INTERVAL.satisfied("10", 1), Some(true));
        assert_eq!(STAT_INTERVAL.satisfied("1", 1), Some(false));
        assert_eq!(WATCHDOG_CPUMASK.satisfied("0", 1), Some(true));
        assert_eq!(WATCHDOG_CPUMASK.satisfied("0-1", 1), Some(false));
        assert_eq!(WATCHDOG_CPUMASK.target(&[0, 2, 3]), "0,2-3");
        assert_eq!(STAT_INTERVAL.target(&[0]), "10");
        assert_eq!(TIMER_MIGRATION.path(), "/proc/sys/kernel/timer_migration");
    }

    #[test]
    fn evaluate_reads_through_host() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        // Absent from a tree that does not record the kernel lacked it: not captured, so unknown.
        assert!(TIMER_MIGRATION.evaluate(&h, &ctx()).is_err());
        assert!(RT_RUNTIME.evaluate(&h, &ctx()).is_err());
        let e = NMI_WATCHDOG.evaluate(&h, &ctx()).unwrap_err();
        assert!(e.0.contains("not captured"), "{e}");
        // Recorded absent by the snapshot: the kernel lacks the feature.
        h.write_atomic(
            crate::host::UNREADABLE,
            br#"{"unreadable":{},"absent":["/proc/sys/kernel/nmi_watchdog"]}"#,
            None,
        )
        .unwrap();
        let h = Host::with_root(d.path());
        assert_eq!(
            NMI_WATCHDOG.evaluate(&h, &ctx()).unwrap(),
            Assessment::pass("no NMI watchdog in this kernel")
        );
        assert!(NUMA_BALANCING.evaluate(&h, &ctx()).is_err());
        h.write_atomic(&TIMER_MIGRATION.path(), b"1\n", None)
            .unwrap();
        assert_eq!(
            TIMER_MIGRATION.evaluate(&h, &ctx()).unwrap(),
            Assessment::fail("timer_migration=1")
        );
        h.write_atomic(&WATCHDOG_CPUMASK.path(), b"0-3\n", None)
            .unwrap();
        assert_eq!(
            WATCHDOG_CPUMASK.evaluate(&h, &ctx()).unwrap(),
            Assessment::fail("watchdog_cpumask=0-3 includes CPU1")
        );
        h.write_atomic(&RT_RUNTIME.path(), b"lots\n", None).unwrap();
        assert!(RT_RUNTIME.evaluate(&h, &ctx()).is_err());
    }
}

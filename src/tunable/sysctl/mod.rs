//! The sysctl knobs (`knob.rs`: key, value wanted, the check each belongs to): their checks, the step that
//! writes them now and into /etc/sysctl.d (so the kernel reads them again at boot), and what that costs.

pub(crate) mod knob;

use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section};
use crate::fix::runtime::{Target, file, step, value};
use crate::fix::{Change, Step, StepId, ValueKind};
use crate::host::Host;
use crate::machine;
use crate::parse::cmdline;
use knob::{SYSCTLS, Wanted};

use super::{Persistence, Tunable};

pub(crate) const SYSCTL_FILE: &str = "/etc/sysctl.d/99-rmp-eval.conf";
const WATCHDOG: &str = "/proc/sys/kernel/watchdog";
const SOFT_WATCHDOG_PATH: &str = "/proc/sys/kernel/soft_watchdog";

/// The file in /etc/sysctl.d carries the values across reboots: nothing for apply-saved to do.
pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Sysctl,
    persistence: Persistence::Files,
    plan: |host, t, failed| Ok(plan(host, t, failed)),
    risks,
};

pub(crate) const TIMER_MIGRATION: Check = Check {
    id: CheckId::TimerMigration,
    section: Section::System,
    title: "Timer Migration disabled",
    doc: "With timer migration on, timers armed on other CPUs can be moved onto the RT core and fire there. \
          Passes when kernel.timer_migration is 0.",
    remedy: Some(StepId::Sysctl),
    by_hand: None,
    evaluate: timer_migration,
};

fn timer_migration(host: &Host, ctx: &Ctx) -> Eval {
    knob::TIMER_MIGRATION.evaluate(host, ctx)
}

pub(crate) const RT_THROTTLING: Check = Check {
    id: CheckId::RtThrottling,
    section: Section::System,
    title: "RT throttling disabled",
    doc: "RT throttling stops every real-time thread for the rest of each second once they used \
          sched_rt_runtime_us of it (950 ms by default): a busy RT loop is then frozen for 50 ms. Passes when \
          kernel.sched_rt_runtime_us is -1.",
    remedy: Some(StepId::Sysctl),
    by_hand: None,
    evaluate: rt_throttling,
};

fn rt_throttling(host: &Host, ctx: &Ctx) -> Eval {
    knob::RT_RUNTIME.evaluate(host, ctx)
}

pub(crate) const NMI_WATCHDOG: Check = Check {
    id: CheckId::NmiWatchdog,
    section: Section::System,
    title: "NMI watchdog off",
    doc: "The hard-lockup detector fires a performance-counter NMI on every CPU every few seconds; an NMI cannot \
          be deferred. Passes when kernel.nmi_watchdog is 0 or the kernel has none (arm64 without pseudo-NMI).",
    remedy: Some(StepId::Sysctl),
    by_hand: None,
    evaluate: nmi_watchdog,
};

fn nmi_watchdog(host: &Host, ctx: &Ctx) -> Eval {
    knob::NMI_WATCHDOG.evaluate(host, ctx)
}

pub(crate) const STAT_INTERVAL: Check = Check {
    id: CheckId::StatInterval,
    section: Section::System,
    title: "vmstat updates infrequent",
    doc: "Every vm.stat_interval seconds a per-CPU work item folds memory statistics on each CPU. Passes when \
          vm.stat_interval is 10 or more (the value tuned's realtime profile sets).",
    remedy: Some(StepId::Sysctl),
    by_hand: None,
    evaluate: stat_interval,
};

fn stat_interval(host: &Host, ctx: &Ctx) -> Eval {
    knob::STAT_INTERVAL.evaluate(host, ctx)
}

pub(crate) const NUMA_BALANCING: Check = Check {
    id: CheckId::NumaBalancing,
    section: Section::System,
    title: "NUMA balancing off",
    doc: "Automatic NUMA balancing unmaps pages periodically to see who touches them, causing page faults in \
          the RT thread. Passes when kernel.numa_balancing is 0 or absent (no NUMA support).",
    remedy: Some(StepId::Sysctl),
    by_hand: None,
    evaluate: numa_balancing,
};

fn numa_balancing(host: &Host, ctx: &Ctx) -> Eval {
    knob::NUMA_BALANCING.evaluate(host, ctx)
}

pub(crate) const SOFT_WATCHDOG: Check = Check {
    id: CheckId::SoftWatchdog,
    section: Section::Core,
    title: "Soft-lockup watchdog off RT core",
    doc: "The soft-lockup detector runs a high-priority timer and thread on each CPU in watchdog_cpumask every \
          few seconds. Passes when the watchdog is off (kernel.watchdog or kernel.soft_watchdog 0, or \
          nosoftlockup) or watchdog_cpumask leaves the RT core out (nohz_full does that by default).",
    remedy: Some(StepId::Sysctl),
    by_hand: None,
    evaluate: soft_watchdog,
};

fn soft_watchdog(host: &Host, ctx: &Ctx) -> Eval {
    if let Ok(p) = machine::cmdline(host)
        && cmdline::get(&p, "nosoftlockup").is_some()
    {
        return Ok(Assessment::pass("nosoftlockup"));
    }
    for (path, name) in [
        (WATCHDOG, "watchdog"),
        (SOFT_WATCHDOG_PATH, "soft_watchdog"),
    ] {
        if host.read_trimmed(path).ok().as_deref() == Some("0") {
            return Ok(Assessment::pass(format!("{name}=0")));
        }
    }
    knob::WATCHDOG_CPUMASK.evaluate(host, ctx)
}

/// The settings whose checks failed (with --only and none failing: those not yet as wanted), merged with the
/// keys an earlier fix wrote to the same file.
fn plan(host: &Host, t: &Target, failed: &[CheckId]) -> Step {
    let mut s = step(
        StepId::Sysctl,
        "Kernel settings (sysctl)",
        "RT throttling stops the RT thread for 50 ms each second; timer migration, vmstat and watchdogs put \
         work on the RT core",
    );
    let any = SYSCTLS.iter().any(|k| failed.contains(&k.check));
    let mut lines: Vec<(String, String)> = host
        .read(SYSCTL_FILE)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    for knob in SYSCTLS {
        let (check, key) = (&knob.check, knob.key);
        let path = knob.path();
        let Ok(now) = host.read(&path) else { continue };
        let want = knob.target(&t.housekeeping());
        let kind = match knob.want {
            Wanted::NotOnCore => ValueKind::CpuList,
            Wanted::Equals(..) | Wanted::AtLeast(..) => ValueKind::Exact,
        };
        // A failing check's key; with --only and no failing check, the keys not yet as wanted; and the keys an
        // earlier fix put in the file. Nothing else, so that a second fix changes nothing.
        let in_file = lines.iter().any(|(k, _)| k == key);
        let as_wanted = knob.satisfied(&now, t.core) == Some(true);
        let wanted = failed.contains(check) || (!any && !as_wanted) || in_file;
        if !wanted {
            continue;
        }
        match lines.iter_mut().find(|(k, _)| k == key) {
            Some(l) => l.1 = want.clone(),
            None => lines.push((key.to_string(), want.clone())),
        }
        value(&mut s, host, &path, &want, kind, false);
    }
    let mut conf = String::from("# Written by `rmp-eval fix`; `rmp-eval rollback` removes it.\n");
    for (k, v) in &lines {
        conf.push_str(&format!("{k} = {v}\n"));
    }
    file(&mut s, host, SYSCTL_FILE, conf);
    // The file first, so that a value the kernel refuses is reported after the persistent part is in place.
    s.changes.sort_by_key(|c| !matches!(c, Change::File(_)));
    s
}

fn writes(s: &Step, file: &str) -> bool {
    s.changes.iter().any(|c| match c {
        Change::Value(v) => v.path.ends_with(file),
        _ => false,
    })
}

fn risks(s: &Step, t: &Target) -> Vec<String> {
    let mut r = Vec::new();
    if writes(s, "sched_rt_runtime_us") {
        r.push(
            "RT throttling off: a runaway SCHED_FIFO thread (a bug in a loop) keeps its core forever — nothing \
             else runs there and the machine may hang instead of recovering"
                .into(),
        );
    }
    if writes(s, "watchdog_cpumask") {
        r.push(format!(
            "the soft-lockup watchdog no longer watches CPU {}: a stuck core goes unreported",
            t.core
        ));
    }
    r
}

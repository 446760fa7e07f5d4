//! Other threads on the RT core: what may run there, and what did run there last.

use super::{Assessment, Check, CheckId, Ctx, Eval, Section, unknown};
use crate::host::Host;
use crate::machine::PROC;
use crate::parse::{cpulist, task};

/// Threads named in a detail line; the rest are counted.
const SHOW: usize = 4;

pub(crate) const RT_CORE_THREADS: Check = Check {
    id: CheckId::RtCoreThreads,
    section: Section::Core,
    title: "No other threads on RT core",
    doc: "Any thread that may run on the RT core can preempt or delay the controller. Fails when a user-space \
          thread is allowed on the core, or a kernel thread that is not bound to it (bound per-CPU kthreads such \
          as ksoftirqd/N, migration/N or kworker/N:M belong to every CPU) last ran there. IRQ threads are left to \
          the IRQ checks. Run it while the controller is stopped.",
    remedy: None,
    by_hand: Some(
        "stop or move the named threads: set CPUAffinity= in /etc/systemd/system.conf to the housekeeping CPUs, pin other services with `taskset`/systemd CPUAffinity=, and run the check while the controller is stopped",
    ),
    evaluate: rt_core_threads,
};

fn rt_core_threads(host: &Host, ctx: &Ctx) -> Eval {
    let core = ctx.core;
    let pids = host
        .list(PROC)
        .map_err(|e| unknown(format!("{PROC}: {}", e.reason())))?;
    let mut seen = 0usize;
    // Threads that exist but could not be read or parsed: any of them could be on the core.
    let mut unreadable = 0usize;
    let mut offenders: Vec<String> = Vec::new();
    for pid in pids
        .iter()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        let tids = match host.list(&format!("{PROC}/{pid}/task")) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => vec![pid.clone()],
            Err(_) => {
                unreadable += 1;
                continue;
            }
        };
        for tid in tids
            .iter()
            .filter(|t| t.bytes().all(|b| b.is_ascii_digit()))
        {
            let base = format!("{PROC}/{pid}/task/{tid}");
            let stat = match host.read(&format!("{base}/stat")) {
                Ok(s) => s,
                Err(e) if e.is_not_found() => continue,
                Err(_) => {
                    unreadable += 1;
                    continue;
                }
            };
            let Some(t) = task::parse_stat(&stat) else {
                unreadable += 1;
                continue;
            };
            seen += 1;
            // A kernel thread elsewhere cannot offend: skip reading its status (half the files).
            if t.is_kthread() && (t.processor != core || t.comm.starts_with("irq/")) {
                continue;
            }
            let allowed = match host.read(&format!("{base}/status")) {
                Ok(s) => task::allowed_list(&s).and_then(|l| cpulist::parse(l).ok()),
                Err(e) if e.is_not_found() => continue,
                Err(_) => None,
            };
            let Some(allowed) = allowed else {
                unreadable += 1;
                continue;
            };
            let offends = if t.is_kthread() {
                allowed != [core]
            } else {
                allowed.contains(&core)
            };
            if offends {
                offenders.push(format!("{}({})", t.comm, t.tid));
            }
        }
    }
    if offenders.is_empty() {
        if unreadable > 0 {
            return Err(unknown(format!(
                "{unreadable} threads could not be read or parsed ({seen} read, none on CPU{core})"
            )));
        }
        if seen == 0 {
            return Err(unknown("no threads found"));
        }
        return Ok(Assessment::pass(format!(
            "{seen} threads, none on CPU{core}"
        )));
    }
    Ok(Assessment::fail(super::first_few(&offenders, SHOW)))
}

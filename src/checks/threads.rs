//! Other threads on the RT core: what may run there, and what did run there last.

use super::irq::PROC;
use super::{Assessment, Check, Ctx, Eval, Section, id, unknown};
use crate::host::Host;
use crate::parse::{cpulist, task};

/// Threads named in a detail line; the rest are counted.
const SHOW: usize = 4;

pub const RT_CORE_THREADS: Check = Check {
    id: id::RT_CORE_THREADS,
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
    let mut denied = 0usize;
    let mut offenders: Vec<String> = Vec::new();
    for pid in pids
        .iter()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        let tids = host
            .list(&format!("{PROC}/{pid}/task"))
            .unwrap_or_else(|_| vec![pid.clone()]);
        for tid in tids
            .iter()
            .filter(|t| t.bytes().all(|b| b.is_ascii_digit()))
        {
            let base = format!("{PROC}/{pid}/task/{tid}");
            let stat = match host.read(&format!("{base}/stat")) {
                Ok(s) => s,
                Err(e) => {
                    if !e.is_not_found() {
                        denied += 1;
                    }
                    continue;
                }
            };
            let Some(t) = task::parse_stat(&stat) else {
                continue;
            };
            seen += 1;
            // A kernel thread elsewhere cannot offend: skip reading its status (half the files).
            if t.is_kthread() && (t.processor != core || t.comm.starts_with("irq/")) {
                continue;
            }
            let allowed = host
                .read(&format!("{base}/status"))
                .ok()
                .and_then(|s| task::allowed_list(&s).and_then(|l| cpulist::parse(l).ok()));
            let offends = if t.is_kthread() {
                allowed.as_deref() != Some(&[core][..])
            } else {
                allowed.as_ref().is_some_and(|a| a.contains(&core))
            };
            if offends {
                offenders.push(format!("{}({})", t.comm, t.tid));
            }
        }
    }
    if seen == 0 {
        return Err(unknown(if denied > 0 {
            "permission denied"
        } else {
            "no threads found"
        }));
    }
    if offenders.is_empty() {
        return Ok(Assessment::pass(format!(
            "{seen} threads, none on CPU{core}"
        )));
    }
    Ok(Assessment::fail(super::first_few(&offenders, SHOW)))
}

//! `check --pid PID` / `--process NAME`: the running EtherCAT MainDevice audited thread by thread — the cyclic
//! thread's policy and priority, where it may run, whether the process's memory is locked, whether
//! /dev/cpu_dma_latency is held, and on PREEMPT_RT the IRQ threads and per-CPU kthreads of the core against the
//! cyclic thread's priority. The cyclic thread is the one with the highest SCHED_FIFO/RR priority, or, when none
//! has one, the one with the most voluntary context switches (a cyclic thread sleeps once a cycle).

use procfs_core::FromRead;
use procfs_core::process::Status as ProcStatus;

use super::process_threads::{Thread, cyclic, name, thread, threads};
use super::{Assessment, Check, CheckId, Ctx, Section, unknown};
use crate::host::Host;
use crate::machine::PROC;

fn audited(host: &Host, ctx: &Ctx) -> Result<(u32, Vec<Thread>), super::Unknown> {
    let pid = ctx.pid.ok_or_else(|| unknown("no --pid/--process given"))?;
    Ok((pid, threads(host, pid)?))
}

pub(crate) const RT_POLICY: Check = Check {
    id: CheckId::ProcessRtPolicy,
    section: Section::Process,
    title: "Cyclic thread runs SCHED_FIFO/RR",
    doc: "The controller's cyclic thread (the one with the highest SCHED_FIFO/RR priority, or the most voluntary \
          context switches when none has one) must run under a real-time policy, or any normal task on its core \
          delays it. Fails for SCHED_OTHER/BATCH/IDLE.",
    remedy: None,
    by_hand: Some(
        "give the cyclic thread SCHED_FIFO in the controller (pthread_setschedparam), or `chrt -f -p 80 TID`",
    ),
    evaluate: |host, ctx| {
        let (_, ts) = audited(host, ctx)?;
        let c = cyclic(&ts).ok_or_else(|| unknown("no threads"))?;
        Ok(match c.rt {
            Some(p) => Assessment::pass(format!("{} SCHED_FIFO/RR {p}", name(c))),
            None => Assessment::fail(format!("{} runs SCHED_OTHER (not real-time)", name(c))),
        })
    },
};

pub(crate) const AFFINITY: Check = Check {
    id: CheckId::ProcessAffinity,
    section: Section::Process,
    title: "Cyclic thread alone on RT core",
    doc: "The cyclic thread should be allowed on the RT core only, and no other thread of the process on that \
          core. Passes when both hold. Whether the core is isolated from everything else is core_isolated's and rt_core_threads' \
          question.",
    remedy: None,
    by_hand: Some(
        "pin the cyclic thread to the RT core (pthread_setaffinity_np or `taskset -p -c CORE TID`) and the other threads to the housekeeping CPUs",
    ),
    evaluate: |host, ctx| {
        let (_, ts) = audited(host, ctx)?;
        let c = cyclic(&ts).ok_or_else(|| unknown("no threads"))?;
        let core = ctx.core;
        if c.allowed != [core] {
            return Ok(Assessment::fail(format!(
                "{} may run on CPUs {}, not only CPU{core}",
                name(c),
                crate::parse::cpulist::format(&c.allowed)
            )));
        }
        let others: Vec<String> = ts
            .iter()
            .filter(|t| t.tid != c.tid && t.allowed.contains(&core))
            .map(name)
            .collect();
        Ok(if others.is_empty() {
            Assessment::pass(format!("{} pinned to CPU{core}, alone there", name(c)))
        } else {
            Assessment::fail(format!(
                "{} pinned to CPU{core}, but also allowed there: {}",
                name(c),
                super::first_few(&others, 4)
            ))
        })
    },
};

pub(crate) const MEMLOCK: Check = Check {
    id: CheckId::ProcessMemlock,
    section: Section::Process,
    title: "Process memory locked",
    doc: "A page fault in the cycle costs microseconds (minor) to milliseconds (major). Passes when VmLck covers \
          at least 90% of VmRSS (mlockall); the major faults since the process started are shown.",
    remedy: None,
    by_hand: Some(
        "call mlockall(MCL_CURRENT | MCL_FUTURE) at start, before the cyclic thread runs",
    ),
    evaluate: |host, ctx| {
        let (pid, _) = audited(host, ctx)?;
        let st = ProcStatus::from_read(
            &host
                .read_bytes(&format!("{PROC}/{pid}/status"))
                .map_err(|e| unknown(e.reason()))?[..],
        )
        .map_err(|e| unknown(format!("{PROC}/{pid}/status: {e}")))?;
        let stat = crate::parse::task::stat(
            &host
                .read_bytes(&format!("{PROC}/{pid}/stat"))
                .map_err(|e| unknown(e.reason()))?,
        )
        .ok_or_else(|| unknown(format!("{PROC}/{pid}/stat: not a stat line")))?;
        let (lck, rss) = (st.vmlck.unwrap_or(0), st.vmrss.unwrap_or(0));
        let d = format!(
            "VmLck {lck} kB of VmRSS {rss} kB, {} major faults since start",
            stat.majflt
        );
        Ok(if rss > 0 && lck * 10 >= rss * 9 {
            Assessment::pass(d)
        } else {
            Assessment::fail(d)
        })
    },
};

pub(crate) const DMA_LATENCY: Check = Check {
    id: CheckId::ProcessDmaLatency,
    section: Section::Process,
    title: "/dev/cpu_dma_latency held",
    doc: "While a process holds /dev/cpu_dma_latency open with 0 written, CPUs stay out of deep C-states. Passes \
          when the audited process, or another one, holds it open.",
    remedy: None,
    by_hand: Some(
        "open /dev/cpu_dma_latency, write a 32-bit 0 and keep it open for the life of the controller",
    ),
    evaluate: |host, ctx| {
        let (pid, _) = audited(host, ctx)?;
        let holds = |p: &str| {
            let dir = format!("{PROC}/{p}/fd");
            host.list(&dir).unwrap_or_default().iter().any(|fd| {
                host.readlink(&format!("{dir}/{fd}"))
                    .is_ok_and(|l| l == std::path::Path::new(crate::host::CPU_DMA_LATENCY))
            })
        };
        if holds(&pid.to_string()) {
            return Ok(Assessment::pass(format!("held by {pid}")));
        }
        let other = host
            .list(PROC)
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.bytes().all(|b| b.is_ascii_digit()) && *p != pid.to_string())
            .find(|p| holds(p));
        Ok(match other {
            Some(o) => Assessment::pass(format!("not by {pid}, but held by process {o}")),
            None => Assessment::fail("no process holds it: deep C-states may add exit latency"),
        })
    },
};

pub(crate) const IRQ_PRIORITIES: Check = Check {
    id: CheckId::ProcessIrqPriorities,
    section: Section::Process,
    title: "IRQ threads below cyclic thread",
    doc: "On PREEMPT_RT, interrupt handlers and softirqs run in threads (irq/N-name, ksoftirqd/N, ktimers/N): one \
          that may run on the RT core at a priority at or above the cyclic thread's preempts it. Fails when such a \
          thread exists (the NIC's own IRQ threads are listed in the detail). Info on other kernels, where \
          handlers are not threads.",
    remedy: None,
    by_hand: Some(
        "lower those threads (`chrt -f -p PRIO TID`) or move their IRQs off the RT core (rmp-eval fix --only irq_affinity); keep the NIC's IRQ thread where the receive path needs it",
    ),
    evaluate: |host, ctx| {
        let (_, ts) = audited(host, ctx)?;
        let c = cyclic(&ts).ok_or_else(|| unknown("no threads"))?;
        if host.read_trimmed(super::system::REALTIME).ok().as_deref() != Some("1") {
            return Ok(Assessment::info(
                "not PREEMPT_RT: interrupt handlers are not threads",
            ));
        }
        let Some(prio) = c.rt else {
            return Ok(Assessment::fail(format!(
                "{} is not real-time: every IRQ thread outranks it",
                name(c)
            )));
        };
        let core = ctx.core;
        let mut above = Vec::new();
        let mut kernel = 0usize;
        for p in host.list(PROC).unwrap_or_default() {
            if !p.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Some(t) = thread(host, &format!("{PROC}/{p}")) else {
                continue;
            };
            let per_cpu = [
                format!("ksoftirqd/{core}"),
                format!("ktimers/{core}"),
                format!("rcuc/{core}"),
            ];
            if !(t.comm.starts_with("irq/") || per_cpu.contains(&t.comm))
                || !t.allowed.contains(&core)
            {
                continue;
            }
            kernel += 1;
            if t.rt.is_some_and(|p| p >= prio) {
                above.push(format!("{} FIFO {}", name(&t), t.rt.unwrap_or(0)));
            }
        }
        Ok(if above.is_empty() {
            Assessment::pass(format!(
                "{kernel} IRQ/kthreads may run on CPU{core}, all below {}'s {prio}",
                name(c)
            ))
        } else {
            Assessment::fail(format!(
                "at or above {prio} on CPU{core}: {}",
                super::first_few(&above, 4)
            ))
        })
    },
};

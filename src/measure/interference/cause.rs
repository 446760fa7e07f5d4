//! What removes an interference source: the one mapping from "what ran on the RT core" (an IRQ, a softirq type,
//! an architecture interrupt row, a thread) to the `fix` step or the check that deals with it. Both the counters
//! (measure::interference) and the trace analysis (trace::analyse) name their sources' remedies through here.

use serde::{Deserialize, Serialize};

use crate::checks::CheckId;
use crate::remedy::{StepId, Suggested};
use crate::trace::senders::{self, IpiSender, IpiSenders};

/// What removes a source: a `fix` step, a check to read (no automatic fix exists), or nothing rmp-eval can
/// change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    Fix(StepId),
    Check(CheckId),
    None,
}

/// A source's remedy and why. Its JSON is `{"kind": "fix"|"check"|"none", "id": step or check id (empty for
/// none), "why"}` (docs/json.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Wire", try_from = "Wire")]
pub(crate) struct Remedy {
    pub(crate) act: Act,
    /// Why this remedy, in a few words.
    pub(crate) why: String,
}

/// The JSON form of a remedy.
#[derive(Serialize, Deserialize)]
struct Wire {
    kind: WireKind,
    id: String,
    why: String,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum WireKind {
    Fix,
    Check,
    None,
}

impl From<Remedy> for Wire {
    fn from(r: Remedy) -> Wire {
        let (kind, id) = match r.act {
            Act::Fix(s) => (WireKind::Fix, s.as_str()),
            Act::Check(c) => (WireKind::Check, c.as_str()),
            Act::None => (WireKind::None, ""),
        };
        Wire {
            kind,
            id: id.to_string(),
            why: r.why,
        }
    }
}

impl TryFrom<Wire> for Remedy {
    type Error = String;
    fn try_from(w: Wire) -> Result<Remedy, String> {
        let act = match w.kind {
            WireKind::Fix => {
                Act::Fix(StepId::parse(&w.id).ok_or(format!("no fix step {:?}", w.id))?)
            }
            WireKind::Check => {
                Act::Check(CheckId::parse(&w.id).ok_or(format!("no check {:?}", w.id))?)
            }
            WireKind::None => Act::None,
        };
        Ok(Remedy { act, why: w.why })
    }
}

impl Remedy {
    pub(crate) fn fix(id: StepId, why: &str) -> Self {
        Remedy {
            act: Act::Fix(id),
            why: why.into(),
        }
    }
    fn check(id: CheckId, why: &str) -> Self {
        Remedy {
            act: Act::Check(id),
            why: why.into(),
        }
    }
    pub(crate) fn none(why: &str) -> Self {
        Remedy {
            act: Act::None,
            why: why.into(),
        }
    }

    /// The command line a remedy suggests, for the reports ("rmp-eval fix --core 1 --only irq_affinity", written
    /// by `remedy::Suggested`); a remedy of nothing says why.
    pub(crate) fn command(&self, core: usize) -> String {
        match self.act {
            Act::Fix(step) => Suggested::Fix { core, step }.to_string(),
            Act::Check(c) => Suggested::Check {
                core,
                check: c.as_str(),
            }
            .to_string(),
            Act::None => self.why.clone(),
        }
    }
}

/// A late wakeup on an idle CPU: the exit from a deep C-state (or, in a VM, the host).
pub(crate) fn for_idle_exit() -> Remedy {
    Remedy::check(CheckId::Cstates, "idle-exit latency")
}

/// A device interrupt (a numbered row of /proc/interrupts, an irq_handler_entry).
pub(crate) fn for_irq() -> Remedy {
    Remedy::fix(StepId::IrqAffinity, "move the IRQ off the RT core")
}

/// A NIC IRQ that came late after its frame: interrupt moderation (coalescing) holds it back.
pub(crate) fn for_coalescing() -> Remedy {
    Remedy::fix(
        StepId::NicCoalesce,
        "interrupt moderation holds the NIC's IRQ back (the wire and the peer are in it too)",
    )
}

/// A softirq type as /proc/softirqs and softirq_entry name it.
pub(crate) fn for_softirq(name: &str) -> Remedy {
    match name {
        "NET_RX" | "NET_TX" => Remedy::fix(StepId::Rps, "steer packet processing off the RT core"),
        "TIMER" | "HRTIMER" => {
            Remedy::fix(StepId::Cmdline, "nohz_full= stops the tick and its timers")
        }
        "RCU" => Remedy::fix(
            StepId::Cmdline,
            "rcu_nocbs= moves RCU callbacks off the core",
        ),
        "SCHED" => Remedy::fix(
            StepId::Cmdline,
            "isolcpus= takes the core out of load balancing",
        ),
        _ => Remedy::fix(
            StepId::IrqAffinity,
            "it follows the device IRQs on the core",
        ),
    }
}

/// A non-device row of /proc/interrupts (LOC, RES, CAL, …) or an x86 irq_vectors / arm64 ipi event name.
pub(crate) fn for_arch(name: &str) -> Remedy {
    match name {
        "LOC" | "arch_timer" | "local_timer" | "tick" => {
            Remedy::fix(StepId::Cmdline, "nohz_full= stops the periodic tick")
        }
        "RES" | "reschedule" | "Rescheduling interrupts" => Remedy::check(
            CheckId::RtCoreThreads,
            "another task is being woken on the core",
        ),
        // A TLB shootdown reaches a core only from the process running there: its memory unmapped or remapped
        // by another of its threads (the program measured: rmp-eval locks and keeps its own). No boot parameter
        // stops that.
        "TLB" | "tlb" => Remedy::none(
            "the program on the core changed its memory mappings from another thread (TLB shootdown): keep \
             memory allocated and locked for the program's life",
        ),
        n if is_cross_cpu_call(n) => Remedy::fix(
            StepId::Cmdline,
            "isolcpus=/nohz_full= keep cross-CPU kernel work away",
        ),
        _ => Remedy::none("hardware or firmware interrupt: not tunable from Linux"),
    }
}

/// An interrupt that rmp-eval itself sent to the core (a cross-CPU read of its SMI counter: a function call): the
/// instrument's, not the machine's, so no step of `fix` is the answer.
pub(crate) fn for_own(name: &str) -> Remedy {
    Remedy::none(&format!(
        "rmp-eval's own {name}: it read the core's SMI counter from another CPU (the RT thread could not); not the \
         machine's, nothing to fix"
    ))
}

/// An IPI row (CAL, TLB, RES, IWI) of `count` interrupts with the senders the trace recorded, and those senders
/// in words: rmp-eval's own when every send came from it (never a `fix` step: the instrument's, not the
/// machine's), else the row's remedy with its senders named. A send is not one interrupt received (calls queued
/// while one is pending share it; a reschedule to a CPU polling in idle sends none), so the counts need not match.
pub(crate) fn with_senders(r: &Remedy, row: &str, count: u64, s: &IpiSenders) -> (Remedy, String) {
    if !s.known() {
        let why = format!("{}; {}", r.why, s.source);
        return (Remedy { act: r.act, why }, s.source.clone());
    }
    let senders: Vec<&IpiSender> = s.of_row(row).collect();
    let sent: u64 = senders.iter().map(|x| x.count).sum();
    let mut named: Vec<String> = senders
        .iter()
        .take(3)
        .map(|x| senders::describe(x))
        .collect();
    if senders.len() > 3 {
        named.push(format!("{} more senders", senders.len() - 3));
    }
    let what = match row {
        // x86 counts a TLB shootdown as a function call too: the calls sent include them.
        "TLB" => "function calls (TLB shootdowns among them)",
        _ => row,
    };
    let cpus = crate::parse::cpulist::format(&s.cpus);
    let seen = match sent {
        0 => format!("the trace saw no {what} sent to CPU {cpus} over the run"),
        _ => format!(
            "{count} received; over the run {sent} {what} sent to CPU {cpus}: {} (a send may be merged with \
             another, or sent before the trace began)",
            named.join("; ")
        ),
    };
    if sent > 0 && senders.iter().all(|x| x.own) {
        let why = format!(
            "sent by rmp-eval itself: the instrument's, not the machine's, nothing to fix; {seen}"
        );
        return (Remedy::none(&why), seen);
    }
    let why = format!("{}; {seen}", r.why);
    (Remedy { act: r.act, why }, seen)
}

/// Whether a non-device interrupt (a /proc/interrupts row or an irq_vectors/ipi event) is a cross-CPU call: work
/// another CPU asked the core to do.
pub(crate) fn is_cross_cpu_call(name: &str) -> bool {
    matches!(
        name,
        "CAL" | "IWI" | "call_function" | "call_function_single" | "irq_work"
    )
}

/// Whether an interrupt is one a wakeup from another CPU comes as: a reschedule, or a function call that carries
/// the queued wakeup (the kernel queues it when the CPUs share no cache). Not irq_work: that is no wakeup.
pub(crate) fn is_wakeup(name: &str) -> bool {
    matches!(
        name,
        "RES" | "reschedule" | "CAL" | "call_function" | "call_function_single"
    )
}

/// A cross-CPU call on a core the command line already isolates (isolcpus= and nohz_full= in force): the step that
/// sets them is done and cannot stop it, so it is not named again.
pub(crate) fn for_call_on_isolated(name: &str) -> Remedy {
    Remedy::none(&format!(
        "{name} on a core already isolated (isolcpus=, nohz_full=): kernel work meant for every CPU (code \
         patching, expedited RCU, a flush of another CPU's caches or TLB) still reaches it; no boot parameter \
         stops it; the counters do not say which CPU or task sent it"
    ))
}

/// A wakeup interrupt (RES, or a cross-CPU call carrying a queued wakeup) in a NIC run whose receiver thread runs
/// on the core: the receive path on another CPU wakes the receiver there, as it must for each reply.
pub(crate) fn for_receiver_wakeup(name: &str) -> Remedy {
    Remedy::none(&format!(
        "{name}: the run's own receiver thread on this core is woken by the receive path on the CPU that took the \
         NIC's interrupt (a wakeup from another CPU is an interrupt here); part of what a NIC run measures, not \
         another task; with --trace the receive path names the waking CPU and task"
    ))
}

/// A System Management Interrupt: the firmware took the CPU; only the BIOS setup (or another board) changes it.
pub(crate) fn for_smi() -> Remedy {
    Remedy::none(
        "the firmware (SMI): not fixable from Linux — look in the BIOS setup (power management, legacy USB, watchdog) or ask the board vendor",
    )
}

/// A thread, by its name.
pub(crate) fn for_task(comm: &str) -> Remedy {
    let p = |s: &str| comm.starts_with(s);
    if p("kworker/") {
        Remedy::fix(StepId::Workqueue, "kernel work queued on the core")
    } else if p("rcu") {
        Remedy::fix(
            StepId::Cmdline,
            "rcu_nocbs= moves RCU callbacks off the core",
        )
    } else if p("ktimers/") {
        Remedy::fix(StepId::Cmdline, "nohz_full= stops the tick and its timers")
    } else if p("irq/") || p("ksoftirqd/") {
        Remedy::fix(StepId::IrqAffinity, "interrupt work on the RT core")
    } else if p("watchdog/") {
        Remedy::fix(StepId::Cmdline, "nosoftlockup/nowatchdog")
    } else {
        Remedy::check(
            CheckId::RtCoreThreads,
            "another thread may run on the RT core",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_map_to_the_steps_the_issue_names() {
        assert_eq!(for_irq().act, Act::Fix(StepId::IrqAffinity));
        assert_eq!(for_arch("LOC").act, Act::Fix(StepId::Cmdline));
        assert_eq!(for_task("kworker/1:2").act, Act::Fix(StepId::Workqueue));
        assert_eq!(for_softirq("RCU").act, Act::Fix(StepId::Cmdline));
        assert_eq!(for_task("rcuc/1").act, Act::Fix(StepId::Cmdline));
        assert_eq!(for_task("python3").act, Act::Check(CheckId::RtCoreThreads));
        assert_eq!(for_softirq("NET_RX").act, Act::Fix(StepId::Rps));
        assert_eq!(for_arch("NMI").act, Act::None);
        // What the measured process or rmp-eval itself causes is never a fix step.
        assert_eq!(for_arch("TLB").act, Act::None);
        assert_eq!(for_own("CAL").act, Act::None);
        assert_eq!(for_arch("CAL").act, Act::Fix(StepId::Cmdline));
        assert_eq!(
            for_irq().command(3),
            "rmp-eval fix --core 3 --only irq_affinity"
        );
    }

    #[test]
    fn an_ipi_rows_remedy_names_its_senders_and_never_fixes_rmp_evals_own() {
        use crate::trace::senders::{IpiSender, count};
        let sender = |comm: &str, pid, own| IpiSender::call(comm, pid, own, 3);
        let mut s = count("", &[1], 700);
        s.senders = vec![sender("rmp-eval", 700, true)];
        let (own, by) = with_senders(&for_arch("CAL"), "CAL", 3, &s);
        assert_eq!(own.act, Act::None);
        assert!(
            own.why.starts_with("sent by rmp-eval itself"),
            "{}",
            own.why
        );
        assert!(
            by.contains("3 from rmp-eval itself (rmp-eval, tid 700)"),
            "{by}"
        );
        s.senders.push(sender("python3", 812, false));
        let (mixed, by) = with_senders(&for_arch("CAL"), "CAL", 5, &s);
        assert_eq!(mixed.act, Act::Fix(StepId::Cmdline));
        assert!(
            mixed
                .why
                .contains("5 received; over the run 6 CAL sent to CPU 1"),
            "{}",
            mixed.why
        );
        assert!(
            by.contains("3 from python3 (pid 812) via generic_exec_single"),
            "{by}"
        );
        // A TLB row is told the function calls (a shootdown is one); no RES was sent.
        assert!(
            with_senders(&for_arch("TLB"), "TLB", 2, &s)
                .1
                .contains("TLB shootdowns among them")
        );
        let (res, _) = with_senders(&for_arch("RES"), "RES", 2, &s);
        assert!(
            res.why
                .contains("the trace saw no RES sent to CPU 1 over the run"),
            "{}",
            res.why
        );
        let unknown = crate::trace::senders::IpiSenders::unknown("sender unknown: x".into(), &[1]);
        let (u, by) = with_senders(&for_arch("CAL"), "CAL", 2, &unknown);
        assert_eq!(
            (u.act, by.as_str()),
            (Act::Fix(StepId::Cmdline), "sender unknown: x")
        );
    }

    /// A remedy's JSON is the `{"kind","id","why"}` results have always held, and reads back as the same remedy.
    #[test]
    fn a_remedy_keeps_its_json() {
        for (r, json) in [
            (
                for_irq(),
                r#"{"kind":"fix","id":"irq_affinity","why":"move the IRQ off the RT core"}"#,
            ),
            (
                for_task("python3"),
                r#"{"kind":"check","id":"rt_core_threads","why":"another thread may run on the RT core"}"#,
            ),
            (
                for_arch("NMI"),
                r#"{"kind":"none","id":"","why":"hardware or firmware interrupt: not tunable from Linux"}"#,
            ),
        ] {
            assert_eq!(serde_json::to_string(&r).unwrap(), json);
            assert_eq!(serde_json::from_str::<Remedy>(json).unwrap(), r);
        }
        assert!(serde_json::from_str::<Remedy>(r#"{"kind":"fix","id":"nope","why":""}"#).is_err());
        assert_eq!(
            for_task("python3").command(2),
            "rmp-eval check --core 2 (see rt_core_threads)"
        );
    }
}

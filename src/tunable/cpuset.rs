//! The cpuset step: isolate the RT core now, without a reboot, as a cgroup v2 isolated partition (kernel 6.1+).
//! It works with systemd rather than beside it: a slice unit (rmp_eval_rt.slice, AllowedCPUs= the core and its
//! SMT siblings, the target's isolated CPUs) makes systemd create the cgroup, give it those CPUs and keep the
//! cpuset controller enabled up to it — so a daemon-reload or a unit start does not undo it — and fix turns that
//! cgroup into an isolated partition (kind/partition.rs).
//! At boot, rmp-eval.service (apply-saved) makes it again, until the boot parameters (isolcpus=) isolate the core:
//! then the step plans nothing. What a partition does not do (the boot parameters' part): stop the tick
//! (nohz_full), move RCU callbacks (rcu_nocbs), keep IRQs off the core (irqaffinity).

use super::{Persistence, Tunable};
use crate::cgroup::{self, Support};
use crate::fix::kind::command::CommandChange;
use crate::fix::kind::partition::PartitionChange;
use crate::fix::runtime::{Target, file, step};
use crate::fix::{Change, Step, StepId};
use crate::host::Host;
use crate::machine::CPU_ISOLATED;
use crate::parse::cgroup::PartitionState;
use crate::parse::cpulist;

pub(crate) use crate::cgroup::{HOLDER, SLICE};
pub(crate) const SLICE_FILE: &str = "/etc/systemd/system/rmp_eval_rt.slice";
pub(crate) const HOLDER_FILE: &str = "/etc/systemd/system/rmp-eval-rt.service";
/// Present when systemd is the init system (sd_booted()).
pub(crate) const SYSTEMD_RUNNING: &str = "/run/systemd/system";

/// No check names it: a failing core_isolated asks for the command line, and for this step to isolate the core
/// until the reboot.
pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Cpuset,
    persistence: Persistence::Boot,
    plan: |host, t, _| Ok(cpuset(host, t)),
    risks: |_, t| crate::fix::risk::housekeeping(t).into_iter().collect(),
};

/// A member for the slice (a process that only sleeps, on the isolated core), so that systemd keeps the slice's
/// cgroup — the partition — while it runs, and a delegated cgroup that measurements move into.
fn holder_unit(cpus: &str) -> String {
    format!(
        "# Written by `rmp-eval fix` (cpuset step); `rmp-eval rollback` removes it.\n\
         # Keeps rmp_eval_rt.slice's cgroup (the RT core's isolated partition) in existence; rmp-eval places its\n\
         # measurements in this service's delegated cgroup.\n\
         [Unit]\n\
         Description=rmp-eval: holder of the RT core's isolated CPU partition ({cpus})\n\
         Documentation=man:rmp-eval(8)\n\
         \n\
         [Service]\n\
         Slice=rmp_eval_rt.slice\n\
         Delegate=yes\n\
         ExecStart=/bin/sleep infinity\n"
    )
}

/// `cpus`: the isolated CPUs as a list ("3,7"), `named`: as the description names them ("CPUs 3,7").
fn slice_unit(cpus: &str, named: &str) -> String {
    format!(
        "# Written by `rmp-eval fix` (cpuset step); `rmp-eval rollback` removes it.\n\
         # The RT core's cgroup: systemd gives it {named} and keeps the cpuset controller on; rmp-eval makes it\n\
         # an isolated cpuset partition (no load balancing, no other task on the core).\n\
         [Unit]\n\
         Description=rmp-eval: isolated CPU partition of the RT core ({named})\n\
         Documentation=man:rmp-eval(8)\n\
         \n\
         [Slice]\n\
         AllowedCPUs={cpus}\n"
    )
}

/// When no partition can be made now: whether the boot parameters isolate the core after a reboot — only when the
/// command-line step can set them, which it cannot without a boot loader configuration it knows.
fn after_reboot(host: &Host, named: &str) -> String {
    match crate::tunable::cmdline::boot::why_no_loader(host) {
        None => format!("{named} isolated after the reboot only"),
        Some(why) => format!(
            "nothing isolates {named} after a reboot either: {why}, so the command-line step cannot set \
             isolcpus= (add its parameters by hand, as that step says)"
        ),
    }
}

fn cpuset(host: &Host, t: &Target) -> Step {
    let mut s = step(
        StepId::Cpuset,
        "Isolate the RT core now: a cgroup v2 isolated partition (until the boot parameters take over)",
        "isolcpus= waits for a reboot; an isolated cpuset partition takes the core out of load balancing and out \
         of every other task's CPUs now (measured by fix's \"after\"). It does not stop the tick (nohz_full), \
         move RCU callbacks (rcu_nocbs) or keep IRQs off the core (irqaffinity): those need the reboot",
    );
    let set = &t.isolated;
    let named = crate::fix::cpus_named(set);
    let boot = host
        .read_trimmed(CPU_ISOLATED)
        .ok()
        .and_then(|r| cpulist::parse(&r).ok())
        .unwrap_or_default();
    if set.iter().all(|c| boot.contains(c)) {
        s.note(format!(
            "isolcpus= already isolates {named}: no partition needed (the boot parameters have taken over)"
        ));
        return s;
    }
    let support = cgroup::support(host);
    let Support::Ready { mount } = support else {
        s.note(format!(
            "not possible here: {}; {}",
            support.why_not().unwrap_or_default(),
            after_reboot(host, &named)
        ));
        return s;
    };
    if !host.is_dir(SYSTEMD_RUNNING) {
        s.note(format!(
            "systemd is not the init system: rmp-eval makes the partition only in a systemd slice (a cgroup \
             made beside the init system's hierarchy would not be kept); {}",
            after_reboot(host, &named)
        ));
        return s;
    }
    if let Some(why) = taken(host, &mount, set) {
        s.note(why);
        return s;
    }
    let list = cpulist::format(set);
    file(&mut s, host, SLICE_FILE, slice_unit(&list, &named));
    file(&mut s, host, HOLDER_FILE, holder_unit(&named));
    if !s.changes.is_empty() {
        s.changes.push(Change::Command(CommandChange {
            argv: vec!["systemctl".into(), "daemon-reload".into()],
            again_on_rollback: true,
            reboot: false,
        }));
    }
    let dir = format!("{mount}/{SLICE}");
    let now = host
        .read(&format!("{dir}/cpuset.cpus.partition"))
        .ok()
        .and_then(|r| PartitionState::parse(&r));
    let cpus = host
        .read_trimmed(&format!("{dir}/cpuset.cpus.effective"))
        .ok()
        .and_then(|r| cpulist::parse(&r).ok())
        .unwrap_or_default();
    if now != Some(PartitionState::Isolated) || cpus != *set {
        s.changes.push(Change::Partition(PartitionChange {
            mount,
            slice: SLICE.into(),
            holder: HOLDER.into(),
            core: t.core,
            cpus: set.clone(),
            before: match now {
                None => "none (the slice is not running)".into(),
                Some(PartitionState::Member) => "member".into(),
                Some(PartitionState::Root) => "root".into(),
                Some(PartitionState::Isolated) => "isolated".into(),
                Some(PartitionState::Invalid { kind, reason }) => {
                    format!("{kind} invalid ({})", reason.unwrap_or_default())
                }
            },
        }));
    }
    s
}

/// Why another cgroup keeps the partition from being made: one that claims a CPU of `set` would make it invalid
/// ("not exclusive").
fn taken(host: &Host, mount: &str, set: &[usize]) -> Option<String> {
    for p in cgroup::partitions(host, mount) {
        if let Some(c) = set.iter().find(|c| p.name != SLICE && p.cpus.contains(c)) {
            return Some(format!(
                "CPU{c} belongs to cgroup partition {} already: left as it is",
                p.name
            ));
        }
    }
    set.iter().find_map(|&c| {
        claimed_by(host, mount, c).map(|other| {
            format!(
                "cgroup {other} asks for CPU{c} in its cpuset.cpus (AllowedCPUs=): an isolated partition would be \
                 invalid; left as it is"
            )
        })
    })
}

/// A top-level cgroup other than ours whose cpuset.cpus names the core.
fn claimed_by(host: &Host, mount: &str, core: usize) -> Option<String> {
    host.list(mount).ok()?.into_iter().find(|n| {
        n != SLICE
            && host
                .read_trimmed(&format!("{mount}/{n}/cpuset.cpus"))
                .ok()
                .and_then(|r| cpulist::parse(&r).ok())
                .is_some_and(|c| c.contains(&core))
    })
}

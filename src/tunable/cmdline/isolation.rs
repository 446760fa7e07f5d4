//! Is the RT core kept free of other work: isolcpus, nohz_full, rcu_nocbs, irqaffinity, its SMT sibling.

use crate::cgroup::{self, Partition};
use crate::checks::{
    Assessment, Check, CheckId, Ctx, Eval, Section, Unknown, read, shown, unknown,
};
use crate::host::Host;
use crate::machine::{self, CPU_ISOLATED, CPU_NOHZ_FULL};
use crate::parse::cgroup::PartitionState;
use crate::parse::{cmdline, cpulist};
use crate::remedy::StepId;

fn list(raw: &str, path: &str) -> Result<Vec<usize>, Unknown> {
    cpulist::parse(raw).map_err(|_| unknown(format!("{path}: not a CPU list")))
}

pub(crate) const CORE_ISOLATED: Check = Check {
    id: CheckId::CoreIsolated,
    section: Section::Core,
    title: "RT core isolated",
    doc: "An isolated core gets no ordinary tasks from the scheduler, so nothing competes with the RT thread. \
          Passes when the core is in /sys/devices/system/cpu/isolated (isolcpus= at boot), or in a valid cgroup v2 \
          isolated partition (cpuset.cpus.partition = isolated, made at run time by fix's cpuset step; listed in \
          the root's cpuset.cpus.isolated where the kernel has that file); the detail says which. A partition the \
          kernel marks invalid fails with the kernel's reason. CPU 0 always fails: it carries boot-time \
          housekeeping that cannot be moved.",
    remedy: Some(StepId::Cmdline),
    by_hand: None,
    evaluate: core_isolated,
};

fn core_isolated(host: &Host, ctx: &Ctx) -> Eval {
    let raw = read(host, CPU_ISOLATED)?;
    let set = list(&raw, CPU_ISOLATED)?;
    let cpu = ctx.core;
    if cpu == 0 {
        return Ok(Assessment::fail(if set.contains(&0) {
            "CPU0 is isolated but should not be your RT core"
        } else {
            "CPU0 selected; choose non-CPU0"
        }));
    }
    let cg = cgroup::of_core(host, cpu);
    let part = cg.partition.as_ref();
    if let Some(Partition {
        name,
        state: PartitionState::Invalid { kind, reason },
        ..
    }) = part
    {
        return Ok(Assessment::fail(format!(
            "cgroup partition {name} is \"{kind} invalid\": {}",
            reason.as_deref().unwrap_or("the kernel gives no reason")
        )));
    }
    Ok(match (set.contains(&cpu), part) {
        (boot, Some(p)) if cg.isolated(cpu) => Assessment::pass(if boot {
            format!(
                "isolated list: {}; and cgroup isolated partition {}",
                shown(&raw),
                p.name
            )
        } else {
            format!(
                "cgroup isolated partition {} (CPUs {})",
                p.name,
                cpulist::format(&p.cpus)
            )
        }),
        (true, _) => Assessment::pass(format!("isolated list: {}", shown(&raw))),
        (false, Some(p)) if p.state == PartitionState::Isolated => Assessment::fail(format!(
            "cgroup partition {} is isolated but CPU{cpu} is not in cpuset.cpus.isolated",
            p.name
        )),
        (false, Some(p)) => Assessment::fail(format!(
            "CPU{cpu} is in cgroup partition {} of type root (load-balanced, not isolated)",
            p.name
        )),
        (false, None) => Assessment::fail(format!("CPU{cpu} not in isolated: {}", shown(&raw))),
    })
}

pub(crate) const NOHZ_FULL: Check = Check {
    id: CheckId::NohzFull,
    section: Section::Core,
    title: "nohz_full on RT core",
    doc: "nohz_full= stops the periodic scheduler tick on the core while one task runs there, removing a \
          interrupt every 1–4 ms. Passes when the core is in /sys/devices/system/cpu/nohz_full. Improvement: \
          the kernel prints \"(null)\" there when nohz_full is unset; the original tried to parse it as a list \
          and reported the raw text; here it is an empty list, shown as (none). When the file is missing the \
          kernel was built without NO_HZ_FULL, and a nohz_full= on the command line is ignored: the original \
          passed on the command line alone.",
    remedy: Some(StepId::Cmdline),
    by_hand: None,
    evaluate: nohz_full,
};

fn nohz_full(host: &Host, ctx: &Ctx) -> Eval {
    let cpu = ctx.core;
    match host.read_trimmed(CPU_NOHZ_FULL) {
        Ok(raw) => {
            let set = list(&raw, CPU_NOHZ_FULL)?;
            Ok(if set.contains(&cpu) {
                Assessment::pass(format!("nohz_full list: {}", shown(&raw)))
            } else {
                Assessment::fail(format!("CPU{cpu} not in nohz_full: {}", shown(&raw)))
            })
        }
        Err(e) if e.is_not_found() && !crate::checks::not_captured(host, CPU_NOHZ_FULL) && host.exists(CPU_ISOLATED) => Ok(
            match machine::cmdline(host)
                .ok()
                .as_deref()
                .and_then(|p| cmdline::get(p, "nohz_full"))
            {
                Some(v) => Assessment::warn(format!(
                    "kernel without NO_HZ_FULL ignores cmdline nohz_full={v}"
                )),
                None => Assessment::warn("kernel built without nohz_full support"),
            }
            .instead(
                "needs a kernel built with CONFIG_NO_HZ_FULL=y (Debian's -rt kernels are): nohz_full= on this \
                 kernel's command line does nothing",
            ),
        ),
        Err(e) if e.is_not_found() => Err(crate::checks::absent(host, CPU_NOHZ_FULL)),
        Err(e) => Err(unknown(format!("{CPU_NOHZ_FULL}: {}", e.reason()))),
    }
}

pub(crate) const RCU_NOCBS: Check = Check {
    id: CheckId::RcuNocbs,
    section: Section::Core,
    title: "rcu_nocbs includes RT core",
    doc: "rcu_nocbs= moves RCU callback processing off the core into kthreads that run elsewhere. Passes when the \
          kernel offloads the core: it is in rcu_nocbs= as the kernel reads the list (`all`, `N` for the last CPU, \
          `a-b:used/group` strides; the last rcu_nocbs= wins; a malformed list makes the kernel offload every \
          CPU), or in nohz_full (which offloads RCU callbacks too), or the kernel is built with \
          RCU_NOCB_CPU_DEFAULT_ALL and neither is given. Fails when the kernel config says RCU_NOCB_CPU is not \
          set. Improvement: the original looked for a sysfs file that mainline kernels do not have and, without \
          the parameter, said unknown; a machine without either is not offloaded, so this fails.",
    remedy: Some(StepId::Cmdline),
    by_hand: None,
    evaluate: rcu_nocbs,
};

/// What the kernel offloads (kernel/rcu/tree_nocb.h): rcu_nocbs= parsed by cpulist_parse (the last one given
/// wins; a malformed list offloads every CPU: "rcu_nocbs= bad CPU range, all CPUs set"), plus every nohz_full
/// CPU (rcu_init_nohz), plus every CPU when the kernel is built with RCU_NOCB_CPU_DEFAULT_ALL and neither is
/// given. A kernel without RCU_NOCB_CPU offloads nothing.
fn rcu_nocbs(host: &Host, ctx: &Ctx) -> Eval {
    let cpu = ctx.core;
    let params = machine::cmdline(host)
        .map_err(|e| unknown(format!("{}: {}", machine::PROC_CMDLINE, e.reason())))?;
    let config = crate::checks::system::kernel_config(host).ok();
    // Only what the config says outright counts ("=y", or "# … is not set"): a partial config proves nothing.
    let built = |name: &str| {
        let c = config.as_deref()?;
        if crate::parse::kernel::config(c, name) == Some("y") {
            Some(true)
        } else if c
            .lines()
            .any(|l| l.trim() == format!("# {name} is not set"))
        {
            Some(false)
        } else {
            None
        }
    };
    if built("CONFIG_RCU_NOCB_CPU") == Some(false) {
        return Ok(Assessment::fail(
            "kernel built without RCU_NOCB_CPU: rcu_nocbs= is ignored",
        ));
    }
    let nr = machine::nr_cpu_ids(host);
    let param = cmdline::get(&params, "rcu_nocbs");
    if let Some(raw) = param {
        match cpulist::parse_for(raw, nr) {
            Ok(set) if set.contains(&cpu) => return Ok(Assessment::pass(raw.to_string())),
            Ok(_) => {}
            // With the machine's width unknown, "N" or "all" cannot be judged; anything else the kernel refuses.
            Err(e) if nr.is_none() => return Err(unknown(e.to_string())),
            Err(e) => {
                return Ok(Assessment::pass(format!(
                    "{}: the kernel offloads every CPU",
                    e
                )));
            }
        }
    }
    let nohz = host
        .read_trimmed(CPU_NOHZ_FULL)
        .ok()
        .and_then(|r| cpulist::parse(&r).ok())
        .unwrap_or_default();
    if nohz.contains(&cpu) {
        return Ok(Assessment::pass(format!(
            "offloaded by nohz_full (CPU{cpu})"
        )));
    }
    if param.is_none() && nohz.is_empty() && built("CONFIG_RCU_NOCB_CPU_DEFAULT_ALL") == Some(true)
    {
        return Ok(Assessment::pass(
            "kernel offloads every CPU (RCU_NOCB_CPU_DEFAULT_ALL)",
        ));
    }
    Ok(Assessment::fail(match param {
        Some(raw) => format!("CPU{cpu} not in rcu_nocbs: {}", shown(raw)),
        None => "no rcu_nocbs= on the kernel command line".into(),
    }))
}

pub(crate) const IRQAFFINITY: Check = Check {
    id: CheckId::Irqaffinity,
    section: Section::Core,
    title: "irqaffinity excludes RT core",
    doc: "irqaffinity= sets where interrupts start at boot; the boot parameter beats runtime writes because some \
          interrupt controllers only move an IRQ at its next EOI. Passes when irqaffinity= is given and leaves the \
          core out. Improvement: without the parameter every IRQ may start on any CPU, so this fails where the \
          original said unknown.",
    remedy: Some(StepId::Cmdline),
    by_hand: None,
    evaluate: irqaffinity,
};

fn irqaffinity(host: &Host, ctx: &Ctx) -> Eval {
    let params = machine::cmdline(host)
        .map_err(|e| unknown(format!("{}: {}", machine::PROC_CMDLINE, e.reason())))?;
    let Some(raw) = cmdline::get(&params, "irqaffinity") else {
        return Ok(Assessment::fail("no irqaffinity kernel param"));
    };
    let set = cpulist::parse_for(raw, machine::nr_cpu_ids(host))
        .map_err(|e| unknown(format!("irqaffinity: {e}")))?;
    if set.is_empty() {
        return Err(unknown("empty list"));
    }
    Ok(if set.contains(&ctx.core) {
        Assessment::fail(format!("RT core present in irqaffinity: {raw}"))
    } else {
        Assessment::pass(raw.to_string())
    })
}

pub(crate) const SMT_SIBLING: Check = Check {
    id: CheckId::SmtSibling,
    section: Section::Core,
    title: "SMT sibling isolated/disabled",
    doc: "Hyper-threads share a core's execution units and caches: work on the sibling slows the RT thread. \
          Passes when the core has no sibling, or every sibling is isolated or offline (improvement: the original \
          counted an offline sibling as a failure). `fix` isolates the sibling; turning SMT off in the BIOS setup \
          (\"Intel Hyper-Threading Technology\", AMD \"SMT Control\": Disabled) removes it, and this check then passes \
          with no sibling (the Firmware checks do not judge SMT again).",
    remedy: Some(StepId::Cmdline),
    by_hand: None,
    evaluate: smt_sibling,
};

fn smt_sibling(host: &Host, ctx: &Ctx) -> Eval {
    let cpu = ctx.core;
    let path = format!(
        "{}/cpu{cpu}/topology/thread_siblings_list",
        machine::CPU_DIR
    );
    let raw = read(host, &path)?;
    let mut sibs = list(&raw, &path)?;
    // The kernel's sibling list always holds the CPU itself: one without it is not the kernel's.
    if !sibs.contains(&cpu) {
        return Err(unknown(format!(
            "{path}: '{raw}' does not hold CPU{cpu} itself"
        )));
    }
    sibs.retain(|&c| c != cpu);
    // The kernel drops a sibling from this list when it goes offline; only its own online list may drop one
    // more (a list guessed from the cpuN directories would hide a sibling that is there).
    if let Ok(online) = machine::read_cpulist(host, machine::CPU_ONLINE)
        && !online.is_empty()
    {
        sibs.retain(|c| online.contains(c));
    }
    if sibs.is_empty() {
        return Ok(Assessment::pass("no sibling"));
    }
    let iso_raw = host
        .read_trimmed(CPU_ISOLATED)
        .map_err(|_| unknown("cannot read isolated"))?;
    let iso = list(&iso_raw, CPU_ISOLATED)?;
    match sibs.iter().find(|s| !iso.contains(s)) {
        Some(s) => Ok(Assessment::fail(format!("sibling CPU{s} not isolated"))),
        None => Ok(Assessment::pass("siblings all isolated")),
    }
}

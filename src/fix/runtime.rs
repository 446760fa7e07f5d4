//! Planners of the runtime steps: governor, turbo, sysctl, THP, workqueues, IRQ affinity, irqbalance, RPS.
//! Each reads what is there and proposes only the changes that differ; nothing is written here.

use super::cpus::{format_list, format_mask, parse_list, parse_mask};
use super::{Change, Step, ValueKind};
use crate::host::Host;
use crate::remedy;

const CPU_DIR: &str = "/sys/devices/system/cpu";
const IRQ_DIR: &str = "/proc/irq";
const NET_DIR: &str = "/sys/class/net";
const SYSCTL_DIR: &str = "/proc/sys";
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const WQ_CPUMASK: &str = "/sys/devices/virtual/workqueue/cpumask";
pub const SYSCTL_FILE: &str = "/etc/sysctl.d/99-rmp-eval.conf";
pub const IRQBALANCE_DEFAULT: &str = "/etc/default/irqbalance";

/// The values the sysctl step sets (where the kernel has them).
pub const SYSCTLS: &[(&str, &str)] = &[
    ("kernel.sched_rt_runtime_us", "-1"),
    ("kernel.timer_migration", "0"),
    ("vm.stat_interval", "10"),
    ("kernel.numa_balancing", "0"),
];

/// What the runtime planners work for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub core: usize,
    pub nic: Option<String>,
    pub online: Vec<usize>,
}

impl Target {
    pub fn housekeeping(&self) -> Vec<usize> {
        self.online
            .iter()
            .copied()
            .filter(|&c| c != self.core)
            .collect()
    }
}

fn step(id: &'static str, title: &str, why: &str) -> Step {
    Step {
        id,
        title: title.into(),
        why: why.into(),
        changes: vec![],
        notes: vec![],
    }
}

/// Adds a value change when the present value differs; a value that cannot be read becomes a note.
fn value(s: &mut Step, host: &Host, path: &str, want: &str, kind: ValueKind, refusable: bool) {
    match host.read(path) {
        Ok(now) if kind.same(&now, want) => {}
        Ok(now) => s.changes.push(Change::Value {
            path: path.into(),
            before: kind.normal(&now),
            after: want.into(),
            kind,
            refusable,
        }),
        Err(e) => s.notes.push(format!("{path}: {}", e.reason())),
    }
}

fn file(s: &mut Step, host: &Host, path: &str, want: String) {
    let before = host.read_bytes(path).ok();
    if before.as_deref() != Some(want.as_bytes()) {
        s.changes.push(Change::File {
            path: path.into(),
            before,
            after: Some(want.into_bytes()),
            mode: 0o644,
            reboot: false,
        });
    }
}

pub fn governor(host: &Host, t: &Target) -> Step {
    let mut s = step(
        remedy::GOVERNOR,
        "CPU frequency governor: performance",
        "a slower governor lets the RT core's clock drop between cycles, so each wakeup runs slower and later",
    );
    let dir = format!("{CPU_DIR}/cpu{}/cpufreq", t.core);
    match host.read(&format!("{dir}/scaling_available_governors")) {
        Ok(av) if !av.split_whitespace().any(|g| g == "performance") => s.notes.push(format!(
            "CPU {} offers no performance governor ({})",
            t.core,
            av.trim()
        )),
        Ok(_) => value(
            &mut s,
            host,
            &format!("{dir}/scaling_governor"),
            "performance",
            ValueKind::Exact,
            false,
        ),
        Err(_) => s.notes.push(format!(
            "CPU {} has no cpufreq control (nothing to set)",
            t.core
        )),
    }
    s
}

pub fn turbo(host: &Host) -> Step {
    let mut s = step(
        remedy::TURBO,
        "Turbo / boost off",
        "turbo changes the clock with load and temperature: cycle times wander",
    );
    let no_turbo = format!("{CPU_DIR}/intel_pstate/no_turbo");
    let boost = format!("{CPU_DIR}/cpufreq/boost");
    if host.exists(&no_turbo) {
        value(&mut s, host, &no_turbo, "1", ValueKind::Exact, false);
    } else if host.exists(&boost) {
        value(&mut s, host, &boost, "0", ValueKind::Exact, false);
    } else {
        s.notes
            .push("no turbo control (neither intel_pstate/no_turbo nor cpufreq/boost)".into());
    }
    s
}

pub fn sysctl(host: &Host) -> Step {
    let mut s = step(
        remedy::SYSCTL,
        "Kernel settings (sysctl)",
        "RT throttling stops the RT thread for 50 ms each second; timer migration and vmstat work land on the RT core",
    );
    let mut conf = String::from("# Written by `rmp-eval fix`; `rmp-eval rollback` removes it.\n");
    for (key, want) in SYSCTLS {
        let path = format!("{SYSCTL_DIR}/{}", key.replace('.', "/"));
        if !host.exists(&path) {
            continue;
        }
        conf.push_str(&format!("{key} = {want}\n"));
        value(&mut s, host, &path, want, ValueKind::Exact, false);
    }
    file(&mut s, host, SYSCTL_FILE, conf);
    // The file first, so that a value the kernel refuses is reported after the persistent part is in place.
    s.changes.sort_by_key(|c| !matches!(c, Change::File { .. }));
    s
}

pub fn thp(host: &Host) -> Step {
    let mut s = step(
        remedy::THP,
        "Transparent huge pages: never",
        "khugepaged compaction stalls memory access at random",
    );
    if host.exists(THP_ENABLED) {
        value(
            &mut s,
            host,
            THP_ENABLED,
            "never",
            ValueKind::Selected,
            false,
        );
    }
    s
}

pub fn workqueue(host: &Host, t: &Target) -> Step {
    let mut s = step(
        remedy::WORKQUEUE,
        "Unbound workqueues off the RT core",
        "kernel work items run wherever the workqueue cpumask allows",
    );
    if host.exists(WQ_CPUMASK) {
        value(
            &mut s,
            host,
            WQ_CPUMASK,
            &format_mask(&t.housekeeping()),
            ValueKind::HexMask,
            false,
        );
    }
    s
}

/// The NIC's IRQs: the numbers in device/msi_irqs, and IRQs whose handler is named after the NIC (igb's
/// "enp2s0-TxRx-0") or after its virtio device ("virtio0-input.0").
pub fn nic_irqs(host: &Host, nic: &str) -> Vec<u32> {
    let mut irqs: Vec<u32> = host
        .list(&format!("{NET_DIR}/{nic}/device/msi_irqs"))
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    let dev = host
        .readlink(&format!("{NET_DIR}/{nic}/device"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    for n in host.list(IRQ_DIR).unwrap_or_default() {
        let Ok(irq) = n.parse::<u32>() else { continue };
        let actions = host.list(&format!("{IRQ_DIR}/{n}")).unwrap_or_default();
        let ours = actions.iter().any(|a| {
            a == nic
                || a.starts_with(&format!("{nic}-"))
                || dev
                    .as_ref()
                    .is_some_and(|d| d.starts_with("virtio") && a.starts_with(&format!("{d}-")))
        });
        if ours {
            irqs.push(irq);
        }
    }
    irqs.sort_unstable();
    irqs.dedup();
    irqs
}

pub fn irq_affinity(host: &Host, t: &Target) -> Step {
    let mut s = step(
        remedy::IRQ_AFFINITY,
        "IRQ affinity: others off the RT core, the NIC's onto it",
        "an interrupt handled on the RT core delays the RT thread; the NIC's own interrupts belong there",
    );
    let hk = t.housekeeping();
    let nic = t
        .nic
        .as_deref()
        .map(|n| nic_irqs(host, n))
        .unwrap_or_default();
    let mut irqs: Vec<u32> = host
        .list(IRQ_DIR)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    irqs.sort_unstable();
    for irq in irqs {
        let path = format!("{IRQ_DIR}/{irq}/smp_affinity_list");
        let Ok(now) = host.read(&path) else { continue };
        let Ok(cpus) = parse_list(&now) else { continue };
        let want = if nic.contains(&irq) {
            vec![t.core]
        } else if cpus.contains(&t.core) {
            let rest: Vec<usize> = cpus.into_iter().filter(|&c| c != t.core).collect();
            if rest.is_empty() { hk.clone() } else { rest }
        } else {
            continue;
        };
        value(
            &mut s,
            host,
            &path,
            &format_list(&want),
            ValueKind::CpuList,
            true,
        );
    }
    let def = format!("{IRQ_DIR}/default_smp_affinity");
    if let Ok(now) = host.read(&def) {
        if let Ok(cpus) = parse_mask(&now) {
            let rest: Vec<usize> = cpus.into_iter().filter(|&c| c != t.core).collect();
            let want = if rest.is_empty() { hk.clone() } else { rest };
            value(
                &mut s,
                host,
                &def,
                &format_mask(&want),
                ValueKind::HexMask,
                false,
            );
        }
    }
    if t.nic.is_some() && nic.is_empty() {
        s.notes
            .push("no IRQ of the NIC found (msi_irqs or a handler named after it)".into());
    }
    s
}

pub fn irqbalance(host: &Host, t: &Target) -> Step {
    let mut s = step(
        remedy::IRQBALANCE,
        "irqbalance: ban the RT core",
        "irqbalance moves IRQs back onto the RT core every 10 s",
    );
    let Ok(text) = host.read(IRQBALANCE_DEFAULT) else {
        s.notes.push(format!(
            "{IRQBALANCE_DEFAULT} not found: irqbalance is not installed, nothing to do"
        ));
        return s;
    };
    let key = "IRQBALANCE_BANNED_CPULIST=";
    let setting = |l: &str| {
        l.trim_start()
            .strip_prefix(key)
            .map(|v| v.trim().trim_matches('"').to_string())
    };
    // Setting the list replaces irqbalance's own default of avoiding isolated and nohz_full CPUs: keep those.
    let mut banned = vec![t.core];
    for f in ["isolated", "nohz_full"] {
        let v = host.read(&format!("{CPU_DIR}/{f}")).unwrap_or_default();
        banned.extend(parse_list(&v).unwrap_or_default());
    }
    for l in text.lines() {
        if let Some(v) = setting(l) {
            banned.extend(parse_list(&v).unwrap_or_default());
        }
    }
    let line = format!("{key}{}", format_list(&banned));
    let mut lines: Vec<String> = Vec::new();
    let mut placed = false;
    for l in text.lines() {
        if setting(l).is_none() {
            lines.push(l.to_string());
        } else if !placed {
            lines.push(line.clone());
            placed = true;
        }
    }
    if !placed {
        lines.push(line);
    }
    let mut new = lines.join("\n");
    new.push('\n');
    if new != text {
        file(&mut s, host, IRQBALANCE_DEFAULT, new);
        let argv = ["systemctl", "try-restart", "irqbalance.service"]
            .map(String::from)
            .to_vec();
        s.changes.push(Change::Command {
            argv,
            again_on_rollback: true,
            reboot: false,
        });
    }
    s
}

pub fn rps(host: &Host, t: &Target) -> Step {
    let mut s = step(
        remedy::RPS,
        "RPS off on the NIC",
        "receive packet steering hands packets to other CPUs through IPIs",
    );
    let Some(nic) = &t.nic else {
        s.notes.push("no --nic given: nothing to do".into());
        return s;
    };
    let dir = format!("{NET_DIR}/{nic}/queues");
    for q in host
        .list(&dir)
        .unwrap_or_default()
        .iter()
        .filter(|q| q.starts_with("rx-"))
    {
        value(
            &mut s,
            host,
            &format!("{dir}/{q}/rps_cpus"),
            "0",
            ValueKind::HexMask,
            false,
        );
    }
    s
}

//! The CPUs fix isolates — the RT core and its SMT siblings — are worked out once and kept apart by every step
//! and by apply-saved at boot; a fix for another core replaces what an earlier fix set for its own core, while
//! the user's own CPUs stay. On the hand-made 8-thread i7 desktop (CPU N's sibling is N+4) with GRUB's defaults.

use crate::common;
use common::fix::{Root, ok, text};

const STEPS: &str = "cmdline,workqueue,sysctl,irqbalance,irq_affinity";

fn fix(r: &Root, core: &str, only: &str) -> std::process::Output {
    let o = r.rmp(
        "fix",
        &["--core", core, "--only", only, "--yes", "--no-measure"],
    );
    ok(&o);
    o
}

/// irqbalance's banned list as the file sets it, None when no line sets it.
fn banned(r: &Root) -> Option<String> {
    r.read("/etc/default/irqbalance")
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("IRQBALANCE_BANNED_CPULIST="))
        .map(str::to_string)
}

fn param(line: &[String], name: &str) -> String {
    let hits: Vec<&String> = line
        .iter()
        .filter(|t| t.starts_with(&format!("{name}=")))
        .collect();
    assert_eq!(hits.len(), 1, "{name} in {line:?}");
    hits[0][name.len() + 1..].to_string()
}

/// Every IRQ's affinity in the tree, by its path.
fn affinities(r: &Root) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(r.path("/proc/irq"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("smp_affinity_list"))
        .filter(|p| p.exists())
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.display().to_string(), text.trim().to_string())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_step_keeps_the_core_and_its_sibling_apart() {
    let r = Root::desktop();
    let o = fix(&r, "3", STEPS);
    let line = r.grub_line();
    assert_eq!(
        param(&line, "isolcpus"),
        "managed_irq,domain,3,7",
        "{line:?}"
    );
    assert_eq!(param(&line, "nohz_full"), "3,7");
    assert_eq!(param(&line, "rcu_nocbs"), "3,7");
    assert_eq!(param(&line, "irqaffinity"), "0-2,4-6");
    assert_eq!(
        r.read("/sys/devices/virtual/workqueue/cpumask").trim(),
        "77"
    );
    assert_eq!(
        r.read("/proc/sys/kernel/watchdog_cpumask").trim(),
        "0-2,4-6"
    );
    assert!(
        r.read("/etc/sysctl.d/99-rmp-eval.conf")
            .contains("kernel.watchdog_cpumask = 0-2,4-6"),
        "{}",
        r.read("/etc/sysctl.d/99-rmp-eval.conf")
    );
    assert_eq!(r.read("/proc/irq/default_smp_affinity").trim(), "77");
    for (irq, cpus) in affinities(&r) {
        assert_eq!(cpus, "0-2,4-6", "{irq}\n{}", text(&o));
    }
    assert_eq!(banned(&r).as_deref(), Some("3,7"));
    // After a reboot the kernel starts from its defaults again, and apply-saved re-applies the same CPUs.
    r.write("/sys/devices/virtual/workqueue/cpumask", "ff\n");
    r.write("/proc/irq/16/smp_affinity_list", "0-7\n");
    r.write("/proc/irq/default_smp_affinity", "ff\n");
    ok(&r.rmp("apply-saved", &[]));
    assert_eq!(
        r.read("/sys/devices/virtual/workqueue/cpumask").trim(),
        "77"
    );
    assert_eq!(r.read("/proc/irq/16/smp_affinity_list").trim(), "0-2,4-6");
    assert_eq!(r.read("/proc/irq/default_smp_affinity").trim(), "77");
}

#[test]
fn the_cpuset_partition_holds_the_core_and_its_sibling() {
    let r = Root::desktop_with_cgroup_v2();
    let o = r.rmp("fix", &["--core", "3", "--only", "cpuset", "--dry-run"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("+AllowedCPUs=3,7"), "{out}");
    assert!(out.contains("(CPUs 3,7)"), "{out}");
}

#[test]
fn a_fix_for_another_core_replaces_the_earlier_ones_cpus() {
    let r = Root::desktop();
    // The administrator moves the RT core 3 → 2 → 1 and back to 3: each step holds the last core's CPUs only.
    for (core, set, others) in [
        ("3", "3,7", "0-2,4-6"),
        ("2", "2,6", "0-1,3-5,7"),
        ("1", "1,5", "0,2-4,6-7"),
        ("3", "3,7", "0-2,4-6"),
    ] {
        let o = fix(&r, core, STEPS);
        assert_eq!(
            banned(&r).as_deref(),
            Some(set),
            "core {core}\n{}",
            text(&o)
        );
        let line = r.grub_line();
        assert_eq!(
            param(&line, "isolcpus"),
            format!("managed_irq,domain,{set}")
        );
        assert_eq!(param(&line, "irqaffinity"), others);
        for (irq, cpus) in affinities(&r) {
            assert_eq!(cpus, others, "core {core}: {irq}");
        }
    }
}

#[test]
fn the_users_own_banned_cpus_stay_through_every_move() {
    let r = Root::desktop();
    r.write(
        "/etc/default/irqbalance",
        "#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_BANNED_CPULIST=0\n",
    );
    fix(&r, "3", "irqbalance");
    assert_eq!(banned(&r).as_deref(), Some("0,3,7"));
    fix(&r, "1", "irqbalance");
    assert_eq!(banned(&r).as_deref(), Some("0-1,5"));
}

#[test]
fn irqbalance_is_left_to_itself_once_the_kernel_isolates_the_cpus() {
    let r = Root::desktop();
    // Before the reboot the boot parameters do not isolate anything yet: an explicit list keeps IRQs off.
    fix(&r, "3", "irqbalance");
    assert_eq!(banned(&r).as_deref(), Some("3,7"));
    // After it, the kernel isolates 3 and 7 and irqbalance avoids them by itself: fix takes its list out, so
    // that irqbalance follows the boot parameters if they move.
    r.write("/sys/devices/system/cpu/isolated", "3,7\n");
    let o = fix(&r, "3", "irqbalance");
    assert_eq!(banned(&r), None, "{}", text(&o));
    assert!(
        r.read("/etc/default/irqbalance")
            .contains("#IRQBALANCE_BANNED_CPULIST=")
    );
    let o = r.rmp("fix", &["--core", "3", "--only", "irqbalance", "--dry-run"]);
    assert!(
        text(&o).contains("irqbalance keeps IRQs off them by itself"),
        "{}",
        text(&o)
    );
}

#[test]
fn dash_spelled_parameters_are_merged_and_their_spelling_dropped() {
    // The kernel reads `nohz-full` as `nohz_full`: the user's CPU 2 stays isolated with the core and its sibling,
    // each parameter once; rollback gives the user's line back as it was.
    let r = Root::desktop();
    let grub = "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n\
                GRUB_CMDLINE_LINUX=\"quiet nohz-full=2 rcu-nocbs=2\"\n";
    r.write("/etc/default/grub", grub);
    let start = r.tree();
    let o = fix(&r, "3", "cmdline");
    let line = r.grub_line();
    assert_eq!(param(&line, "nohz_full"), "2-3,7", "{}", text(&o));
    assert_eq!(param(&line, "rcu_nocbs"), "2-3,7");
    assert!(
        !line
            .iter()
            .any(|t| t.starts_with("nohz-full") || t.starts_with("rcu-nocbs")),
        "{line:?}"
    );
    ok(&r.rmp("rollback", &["--yes"]));
    assert_eq!(r.read("/etc/default/grub"), grub);
    assert_eq!(common::fix::diff(&start, &r.tree()), Vec::<String>::new());
}

/// The desktop with irqbalance `version` installed, as dpkg's status file says (Debian 12's paragraph, its version
/// changed).
fn with_irqbalance(version: &str) -> Root {
    let r = Root::desktop();
    r.write(
        "/var/lib/dpkg/status",
        &format!(
            "Package: irqbalance\nStatus: install ok installed\nPriority: optional\nSection: utils\n\
             Architecture: amd64\nVersion: {version}\n\n"
        ),
    );
    r
}

/// Every line of irqbalance's settings that bans CPUs, in order.
fn banned_lines(r: &Root) -> Vec<String> {
    r.read("/etc/default/irqbalance")
        .lines()
        .filter(|l| l.starts_with("IRQBALANCE_BANNED_CPU"))
        .map(str::to_string)
        .collect()
}

#[test]
fn irqbalance_gets_the_form_its_version_reads() {
    // Before 1.8 irqbalance knows the mask only (CPUs 3 and 7: 88); from 1.8 on the list, which a mask would
    // override (it is read first), so a mask of the user's own is folded into the list; unknown: both.
    let old = with_irqbalance("1.7.0-5");
    let start = old.tree();
    fix(&old, "3", "irqbalance");
    assert_eq!(banned_lines(&old), ["IRQBALANCE_BANNED_CPUS=88"]);
    ok(&old.rmp("rollback", &["--yes"]));
    assert_eq!(common::fix::diff(&start, &old.tree()), Vec::<String>::new());
    let new = with_irqbalance("1.9.2-1");
    new.write(
        "/etc/default/irqbalance",
        "#IRQBALANCE_BANNED_CPUS=\nIRQBALANCE_BANNED_CPUS=01\n#IRQBALANCE_BANNED_CPULIST=\n",
    );
    fix(&new, "3", "irqbalance");
    assert_eq!(banned_lines(&new), ["IRQBALANCE_BANNED_CPULIST=0,3,7"]);
    let unknown = Root::desktop();
    fix(&unknown, "3", "irqbalance");
    assert_eq!(
        banned_lines(&unknown),
        ["IRQBALANCE_BANNED_CPUS=88", "IRQBALANCE_BANNED_CPULIST=3,7"]
    );
}

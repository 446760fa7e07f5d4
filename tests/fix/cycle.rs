//! The whole fix → rollback cycle on fixture roots (captured Debian 12 RT guest, see tests/fixtures/README.md):
//! files and values as intended (GRUB's effective command line computed by sourcing the files with dash and
//! bash), then rollback leaves every file byte-identical to the start.

use crate::common;
use common::fix as fix_support;
use fix_support::{Root, diff, ok, values};

#[test]
fn grub_cycle_on_the_captured_debian_guest() {
    let r = Root::untuned();
    let start = r.tree();
    assert_eq!(r.grub_line(), ["console=ttyS0,115200"]);
    let o = r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "cmdline,sysctl,workqueue,irq_affinity",
            "--yes",
            "--no-measure",
        ],
    );
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("would run on the machine (not under --root): update-grub"),
        "{out}"
    );
    assert!(out.contains("pending reboot"), "{out}");

    let line = r.grub_line();
    assert_eq!(values(&line, "isolcpus"), ["managed_irq,domain,1"]);
    assert_eq!(values(&line, "nohz_full"), ["1"]);
    assert_eq!(values(&line, "rcu_nocbs"), ["1"]);
    assert_eq!(values(&line, "irqaffinity"), ["0"]);
    assert_eq!(values(&line, "console"), ["ttyS0,115200"]);
    assert_eq!(r.read("/proc/sys/kernel/sched_rt_runtime_us"), "-1\n");
    assert_eq!(r.read("/proc/sys/kernel/timer_migration"), "0\n");
    assert!(
        r.read("/etc/sysctl.d/99-rmp-eval.conf")
            .contains("kernel.sched_rt_runtime_us = -1\n")
    );
    // IRQ 27 was on CPU 1 only: it moves to the housekeeping CPU; default affinity and workqueues leave CPU 1.
    assert_eq!(r.read("/proc/irq/27/smp_affinity_list"), "0\n");
    assert_eq!(r.read("/proc/irq/default_smp_affinity"), "1\n");
    assert_eq!(r.read("/sys/devices/virtual/workqueue/cpumask"), "1\n");
    let saved: serde_json::Value =
        serde_json::from_str(&r.read("/var/lib/rmp-eval/runtime.json")).unwrap();
    assert_eq!(
        saved["steps"],
        serde_json::json!(["workqueue", "irq_affinity"])
    );

    let o = r.rmp("rollback", &["--yes"]);
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("would run on the machine (not under --root): update-grub")
    );
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
    let o = r.rmp("rollback", &["--yes"]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Nothing to undo"));
}

#[test]
fn runs_stack_and_roll_back_newest_first() {
    let r = Root::untuned();
    let start = r.tree();
    ok(&r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "sysctl,workqueue",
            "--yes",
            "--no-measure",
        ],
    ));
    let middle = r.tree();
    ok(&r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "cmdline,irq_affinity",
            "--yes",
            "--no-measure",
        ],
    ));
    assert_eq!(r.read("/proc/irq/27/smp_affinity_list"), "0\n");
    let o = r.rmp("rollback", &["--dry-run", "--json"]);
    ok(&o);
    let preview: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        preview["runs"][0]["journal"], "/var/lib/rmp-eval/journal/000002.json",
        "newest first"
    );
    assert_eq!(
        preview["runs"][1]["steps"],
        serde_json::json!(["sysctl", "workqueue", "persist"])
    );
    assert_eq!(
        preview["runs"][1]["entries"][0]["action"], "remove",
        "runtime.json was created: {preview}"
    );
    assert_ne!(
        diff(&middle, &r.tree()),
        Vec::<String>::new(),
        "dry-run must not undo"
    );
    r.rolls_back_to(&start);
}

#[test]
fn the_failing_checks_choose_the_steps() {
    // On the captured untuned guest, check fails isolation, skew_tick, sysctl values, workqueue and IRQ checks.
    let r = Root::untuned();
    let o = r.rmp("fix", &["--core", "1", "--dry-run", "--json"]);
    ok(&o);
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["changes"].as_array().unwrap().is_empty())
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["cmdline", "sysctl", "workqueue", "irq_affinity", "persist"]
    );
    let cmdline = &plan["steps"][0]["changes"][1];
    assert_eq!(cmdline["target"], "/var/lib/rmp-eval/cmdline");
    assert_eq!(
        cmdline["after"],
        "isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0 skew_tick=1\n"
    );
    // Only the values whose checks failed: nmi_watchdog passes on this guest, numa_balancing is absent.
    let sysctl = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "sysctl")
        .unwrap();
    let targets: Vec<&str> = sysctl["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["target"].as_str().unwrap())
        .collect();
    assert!(
        targets.contains(&"/proc/sys/kernel/watchdog_cpumask"),
        "{targets:?}"
    );
    assert!(
        !targets.contains(&"/proc/sys/kernel/nmi_watchdog"),
        "{targets:?}"
    );
}

#[test]
fn nic_irqs_move_onto_the_core_and_rps_goes_off() {
    let r = Root::untuned();
    // An MSI-X vector of the NIC (as igb/igc list them in device/msi_irqs) and RPS left on by a distribution.
    r.write("/sys/class/net/enp0s2/device/msi_irqs/40", "msix\n");
    r.write("/proc/irq/40/smp_affinity_list", "0-1\n");
    r.write("/sys/class/net/enp0s2/queues/rx-0/rps_cpus", "3\n");
    // Busy-polling defaults some distributions set (values as the kernel documents them: count and ns).
    r.write("/sys/class/net/enp0s2/napi_defer_hard_irqs", "2\n");
    r.write("/sys/class/net/enp0s2/gro_flush_timeout", "200000\n");
    let start = r.tree();
    // Without --only: the failing rps and nic_irq_defer checks ask for the rps step.
    let o = r.rmp(
        "fix",
        &["--core", "1", "--nic", "enp0s2", "--dry-run", "--json"],
    );
    ok(&o);
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rps = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "rps")
        .expect("rps step");
    assert_eq!(rps["changes"].as_array().unwrap().len(), 3, "{rps}");
    let o = r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--nic",
            "enp0s2",
            "--only",
            "irq_affinity,rps",
            "--yes",
            "--no-measure",
        ],
    );
    ok(&o);
    assert_eq!(r.read("/proc/irq/40/smp_affinity_list"), "1\n");
    assert_eq!(r.read("/proc/irq/27/smp_affinity_list"), "0\n");
    assert_eq!(r.read("/sys/class/net/enp0s2/queues/rx-0/rps_cpus"), "0\n");
    assert_eq!(r.read("/sys/class/net/enp0s2/napi_defer_hard_irqs"), "0\n");
    assert_eq!(r.read("/sys/class/net/enp0s2/gro_flush_timeout"), "0\n");
    let saved: serde_json::Value =
        serde_json::from_str(&r.read("/var/lib/rmp-eval/runtime.json")).unwrap();
    assert_eq!(saved["nic"], "enp0s2");
    // The udev rule's call after the driver probed again: the NIC's settings come back, nothing else is touched.
    r.write("/proc/irq/40/smp_affinity_list", "0-1\n");
    r.write("/sys/class/net/enp0s2/queues/rx-0/rps_cpus", "3\n");
    ok(&r.rmp("apply-saved", &["--nic", "enp0s2"]));
    assert_eq!(r.read("/proc/irq/40/smp_affinity_list"), "1\n");
    assert_eq!(r.read("/sys/class/net/enp0s2/queues/rx-0/rps_cpus"), "0\n");
    r.rolls_back_to(&start);
}

#[test]
fn governor_turbo_and_irqbalance() {
    let r = Root::untuned();
    // The captured guest has no cpufreq: the files an intel_pstate laptop/IPC has (values as such a machine
    // shows them: powersave by default, turbo on), and Debian 12's /etc/default/irqbalance.
    r.write(
        "/sys/devices/system/cpu/cpu1/cpufreq/scaling_available_governors",
        "performance powersave\n",
    );
    r.write(
        "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
        "powersave\n",
    );
    r.write("/sys/devices/system/cpu/intel_pstate/no_turbo", "0\n");
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/irqbalance.default"
    ))
    .unwrap();
    r.write("/etc/default/irqbalance", &shipped);
    // With the version dpkg installs there (1.9.2: it reads the list).
    r.write(
        "/var/lib/dpkg/status",
        "Package: irqbalance\nStatus: install ok installed\nVersion: 1.9.2-1\n",
    );
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "governor,turbo,irqbalance",
            "--yes",
            "--no-measure",
        ],
    );
    ok(&o);
    assert_eq!(
        r.read("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"),
        "performance\n"
    );
    assert_eq!(
        r.read("/sys/devices/system/cpu/intel_pstate/no_turbo"),
        "1\n"
    );
    let conf = r.read("/etc/default/irqbalance");
    assert!(
        conf.contains("#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_BANNED_CPULIST=1\n"),
        "{conf}"
    );
    assert_eq!(conf.lines().count(), shipped.lines().count() + 1);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("systemctl try-restart irqbalance.service"),
        "{out}"
    );
    // A second fix with another core replaces the first one's: CPU 1 goes back to irqbalance.
    r.write("/sys/devices/system/cpu/online", "0-3\n");
    ok(&r.rmp(
        "fix",
        &[
            "--core",
            "3",
            "--only",
            "irqbalance",
            "--yes",
            "--no-measure",
        ],
    ));
    assert!(
        r.read("/etc/default/irqbalance")
            .contains("\nIRQBALANCE_BANNED_CPULIST=3\n")
    );
    r.write("/sys/devices/system/cpu/online", "0-1\n");
    r.rolls_back_to(&start);
}

#[test]
fn ksm_running_fails_fix_stops_it_rollback_restarts_it() {
    let r = Root::untuned();
    // A machine that also hosts VMs: Debian's qemu-kvm.service starts ksmd (run=1) with pages merged.
    r.write("/sys/kernel/mm/ksm/run", "1\n");
    r.write("/sys/kernel/mm/ksm/pages_shared", "5120\n");
    let check = |r: &Root| -> serde_json::Value {
        let o = r.rmp("check", &["--core", "1", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("check --json");
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "ksm")
            .cloned()
            .expect("a ksm check")
    };
    let before = check(&r);
    assert_eq!(before["status"], "fail", "{before}");
    assert_eq!(before["remedy"], "ksm", "{before}");
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", "ksm", "--yes", "--no-measure"],
    );
    ok(&o);
    assert_eq!(r.read("/sys/kernel/mm/ksm/run"), "0\n");
    assert_eq!(check(&r)["status"], "pass");
    // Lost at reboot: saved for apply-saved.
    let saved = r.read("/var/lib/rmp-eval/runtime.json");
    assert!(saved.contains("\"ksm\""), "{saved}");
    r.rolls_back_to(&start);
    assert_eq!(r.read("/sys/kernel/mm/ksm/run"), "1\n");
}

//! What could not be read, or what the kernel never writes that way, is unknown with its reason, never a pass.
//! Each test takes the real capture of a Debian 12 PREEMPT_RT guest (tests/fixtures/debian12-rt-qemu-isolated:
//! 2 CPUs, core 1 isolated) or the hand-made desktop, and changes what the test names — the ways real captures
//! of other machines were seen to differ (a thread's status missing, an offline CPU, a header at odds with the
//! online list, a NIC's driver link not captured).

use crate::common;

use std::path::{Path, PathBuf};

use common::check::*;

fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    fixture_copy(name)
}

fn at(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

fn put(root: &Path, path: &str, text: &str) {
    let p = at(root, path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn rm(root: &Path, path: &str) {
    let p = at(root, path);
    if p.is_dir() {
        std::fs::remove_dir_all(p).unwrap();
    } else {
        std::fs::remove_file(p).unwrap();
    }
}

/// `check --json` with whatever it says on stderr: (exit code, document, stderr).
fn check(root: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let mut args = vec!["--root", root.to_str().unwrap(), "check", "--json"];
    args.extend_from_slice(extra);
    let o = run(&args);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&o.stdout)));
    (o.status.code(), v, text(&o.stderr))
}

fn on_core_1(root: &Path, id: &str) -> (String, String) {
    verdict(&check(root, &["--core", "1"]).1, id)
}

const ISOLATED: &str = "debian12-rt-qemu-isolated";

/// A user process (an editor) allowed on every CPU, as /proc/PID/stat and status show it.
fn editor(root: &Path, base: &str, threads: u32, allowed: &str) {
    put(
        root,
        &format!("{base}/stat"),
        "4242 (vim) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0 18446744073709551615 0 0 0 0 0 0 0 \
         0 0 0 0 0 17 1 0 0 0 0 0\n",
    );
    put(
        root,
        &format!("{base}/status"),
        &format!("Name:\tvim\nThreads:\t{threads}\nCpus_allowed_list:\t{allowed}\n"),
    );
}

#[test]
fn a_thread_without_status_or_a_process_without_task_is_not_skipped() {
    let (_d, root) = copy(ISOLATED);
    assert_eq!(on_core_1(&root, "rt_core_threads").0, "pass");
    // systemd's only thread keeps its stat, loses its status: it could be allowed on the core.
    rm(&root, "/proc/1/task/1/status");
    let (s, d) = on_core_1(&root, "rt_core_threads");
    assert_eq!(s, "unknown", "{d}");
    assert!(d.contains("1 threads could not be read"), "{d}");

    // A process captured without its task/ directory is read from /proc/PID itself.
    let (_d, root) = copy(ISOLATED);
    editor(&root, "/proc/4242", 1, "0-1");
    let (s, d) = on_core_1(&root, "rt_core_threads");
    assert_eq!((s.as_str(), d.as_str()), ("fail", "vim(4242)"));
    // Its main thread kept off the core, but two more threads the tree does not hold: unknown.
    editor(&root, "/proc/4242", 3, "0");
    let (s, d) = on_core_1(&root, "rt_core_threads");
    assert_eq!(s, "unknown", "{d}");
    assert!(d.contains("2 threads could not be read"), "{d}");
}

#[test]
fn an_offline_cpu_is_never_the_rt_core() {
    // The real shape: `online` not captured, `offline` = 2, and an empty cpu2/ directory.
    let (_d, root) = copy(ISOLATED);
    rm(&root, "/sys/devices/system/cpu/online");
    put(&root, "/sys/devices/system/cpu/present", "0-2\n");
    put(&root, "/sys/devices/system/cpu/offline", "2\n");
    std::fs::create_dir_all(at(&root, "/sys/devices/system/cpu/cpu2")).unwrap();
    let (_, doc, err) = check(&root, &[]);
    assert_eq!(doc["core"], 1, "the last online CPU");
    assert!(
        err.starts_with("note: /sys/devices/system/cpu/online: not found; online CPUs taken as present minus offline 2: 0-1"),
        "{err}"
    );
    let o = run(&["--root", root.to_str().unwrap(), "check", "--core", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--core 2: CPU2 is offline (online: 0-1)"),
        "{err}"
    );
}

#[test]
fn smt_sibling_reads_the_kernels_sibling_list_not_a_guessed_online_list() {
    // Without online and present, the cpuN directories (0, 1) are all that is known: CPU5, the kernel's
    // sibling of CPU1, must not vanish as "offline".
    let (_d, root) = copy(ISOLATED);
    rm(&root, "/sys/devices/system/cpu/online");
    rm(&root, "/sys/devices/system/cpu/present");
    put(
        &root,
        "/sys/devices/system/cpu/cpu1/topology/thread_siblings_list",
        "1,5\n",
    );
    let (s, d) = on_core_1(&root, "smt_sibling");
    assert_eq!(
        (s.as_str(), d.as_str()),
        ("fail", "sibling CPU5 not isolated")
    );
}

#[test]
fn no_idle_states_under_a_real_driver_is_not_a_pass() {
    let (_d, root) = copy(ISOLATED);
    put(
        &root,
        "/sys/devices/system/cpu/cpuidle/current_driver",
        "intel_idle\n",
    );
    std::fs::create_dir_all(at(&root, "/sys/devices/system/cpu/cpu1/cpuidle")).unwrap();
    let (s, d) = on_core_1(&root, "idle_states");
    assert_eq!(s, "unknown", "{d}");
    assert!(
        d.contains("intel_idle lists no idle states for CPU1"),
        "{d}"
    );
    // Without the directory, in a tree that does not record its absence: not captured.
    rm(&root, "/sys/devices/system/cpu/cpu1/cpuidle");
    let (s, d) = on_core_1(&root, "idle_states");
    assert_eq!(s, "unknown", "{d}");
}

#[test]
fn an_interrupt_table_at_odds_with_the_online_cpus_proves_nothing() {
    let (_d, root) = copy(ISOLATED);
    // Every device row's count on CPU1 zeroed: the table alone says "clean".
    let table = std::fs::read_to_string(at(&root, "/proc/interrupts")).unwrap();
    let mut lines = table.lines();
    let header = lines.next().unwrap();
    let mut out = format!("{header}       CPU2       CPU3\n");
    for l in lines {
        let (name, rest) = l.split_once(':').unwrap();
        let mut w: Vec<&str> = rest.split_whitespace().collect();
        if name.trim().bytes().all(|b| b.is_ascii_digit()) && w.len() > 2 {
            w[1] = "0";
        }
        out.push_str(&format!("{name}: {}\n", w.join(" ")));
    }
    put(&root, "/proc/interrupts", &out);
    let (s, d) = on_core_1(&root, "unrelated_irqs");
    assert_eq!(s, "unknown", "{d}");
    assert!(
        d.contains("has columns for CPUs 0-3 but the online CPUs are 0-1"),
        "{d}"
    );
}

#[test]
fn in_a_tree_an_absent_knob_is_not_captured_unless_the_snapshot_recorded_it() {
    let (_d, root) = copy(ISOLATED);
    for k in [
        "kernel/nmi_watchdog",
        "kernel/timer_migration",
        "kernel/sched_rt_runtime_us",
    ] {
        rm(&root, &format!("/proc/sys/{k}"));
    }
    let (_, doc, _) = check(&root, &["--core", "1"]);
    for id in [
        "nmi_watchdog",
        "numa_balancing",
        "timer_migration",
        "rt_throttling",
    ] {
        let (s, d) = verdict(&doc, id);
        assert_eq!(s, "unknown", "{id}: {d}");
        assert!(d.contains("not captured"), "{id}: {d}");
    }
    // The snapshot recorded that the kernel had no NMI watchdog and no NUMA balancing.
    put(
        &root,
        "/rmp-eval-unreadable.json",
        r#"{"unreadable":{},"absent":["/proc/sys/kernel/nmi_watchdog","/proc/sys/kernel/numa_balancing"]}"#,
    );
    let (_, doc, _) = check(&root, &["--core", "1"]);
    assert_eq!(verdict(&doc, "nmi_watchdog").0, "pass");
    assert_eq!(verdict(&doc, "numa_balancing").0, "pass");
    assert_eq!(verdict(&doc, "timer_migration").0, "unknown");
    // A snapshot of that tree keeps what it records, and records nothing the tree did not.
    let out = tempfile::Builder::new()
        .prefix("ck-closed")
        .tempdir()
        .unwrap();
    let copy = out.path().join("snap");
    snapshot(&root, &copy);
    let (_, doc, _) = check(&copy, &["--core", "1"]);
    assert_eq!(verdict(&doc, "nmi_watchdog").0, "pass");
    assert_eq!(verdict(&doc, "timer_migration").0, "unknown");
}

#[test]
fn integers_the_kernel_never_writes_are_unknown() {
    for (file, id, bad) in [
        ("kernel/timer_migration", "timer_migration", "+0"),
        ("kernel/timer_migration", "timer_migration", "00"),
        ("kernel/sched_rt_runtime_us", "rt_throttling", "-01"),
        ("kernel/sched_rt_runtime_us", "rt_throttling", "2147483648"),
        ("kernel/nmi_watchdog", "nmi_watchdog", "-0"),
        ("kernel/nmi_watchdog", "nmi_watchdog", "4294967296"),
        ("vm/stat_interval", "stat_interval", "010"),
        ("kernel/numa_balancing", "numa_balancing", "00"),
    ] {
        let (_d, root) = copy(ISOLATED);
        put(&root, &format!("/proc/sys/{file}"), &format!("{bad}\n"));
        let (s, d) = on_core_1(&root, id);
        assert_eq!(s, "unknown", "{file}={bad}: {d}");
        assert!(d.contains("is not a value the kernel writes"), "{d}");
    }
}

#[test]
fn a_command_line_longer_than_the_kernel_keeps_is_not_parsed() {
    let (_d, root) = copy(ISOLATED);
    let cmdline = std::fs::read_to_string(at(&root, "/proc/cmdline")).unwrap();
    assert_eq!(on_core_1(&root, "rcu_nocbs").0, "pass");
    // x86_64 keeps 2,047 bytes (COMMAND_LINE_SIZE 2048): 3,000 bytes of padding first.
    let padded = format!("pad={} {}", "x".repeat(3000), cmdline);
    put(&root, "/proc/cmdline", &padded);
    let (s, d) = on_core_1(&root, "rcu_nocbs");
    assert_eq!(s, "unknown", "{d}");
    assert!(
        d.contains("longer than the kernel's command line can be (2047 on x86_64)"),
        "{d}"
    );
}

#[test]
fn irqbalance_is_found_by_its_stat_when_comm_is_missing() {
    let (_d, root) = copy(ISOLATED);
    put(
        &root,
        "/proc/4243/stat",
        "4243 (irqbalance) S 1 4243 4243 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 2 0 100 0 0 18446744073709551615 0 0 0 0 \
         0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
    );
    let (s, d) = on_core_1(&root, "irqbalance");
    assert_eq!(
        (s.as_str(), d.as_str()),
        ("pass", "running, skips isolated CPUs")
    );
    // Neither name captured: it might be irqbalance.
    rm(&root, "/proc/4243/stat");
    std::fs::create_dir_all(at(&root, "/proc/4243/task")).unwrap();
    let (s, d) = on_core_1(&root, "irqbalance");
    assert_eq!(s, "unknown", "{d}");
}

#[test]
fn cpu_frequency_is_decided_by_an_open_range_without_the_current_clock() {
    // The desktop runs intel_pstate powersave, 800 MHz – 4.2 GHz.
    let (_d, root) = copy("desktop-i7-smt-untuned");
    rm(
        &root,
        "/sys/devices/system/cpu/cpu7/cpufreq/scaling_cur_freq",
    );
    let (_, doc, _) = check(&root, &["--core", "7"]);
    let (s, d) = verdict(&doc, "cpu_frequency");
    assert_eq!(s, "fail", "{d}");
    assert_eq!(
        d,
        "min=800000 kHz, max=4200000 kHz (current frequency not readable)"
    );
    // The hardware's own reading, where the driver gives one.
    put(
        &root,
        "/sys/devices/system/cpu/cpu7/cpufreq/cpuinfo_cur_freq",
        "3900000\n",
    );
    let (_, doc, _) = check(&root, &["--core", "7"]);
    let (s, d) = verdict(&doc, "cpu_frequency");
    assert_eq!(s, "fail");
    assert_eq!(d, "cur=3900000 kHz, min=800000 kHz, max=4200000 kHz");
}

#[test]
fn nic_queue_irqs_and_driver_as_real_drivers_name_them() {
    let (_d, root) = copy(ISOLATED);
    // Amazon ENA names its queue vectors "%s-Tx-Rx-%d" (drivers/net/ethernet/amazon/ena/ena_netdev.c).
    let mut table = std::fs::read_to_string(at(&root, "/proc/interrupts")).unwrap();
    for q in 0..4 {
        let n = 40 + q;
        table.push_str(&format!(
            " {n}:          0         12   PCI-MSI 1{q}-edge      enp0s2-Tx-Rx-{q}\n"
        ));
        put(&root, &format!("/proc/irq/{n}/smp_affinity_list"), "1\n");
        put(
            &root,
            &format!("/proc/irq/{n}/effective_affinity_list"),
            "1\n",
        );
    }
    put(&root, "/proc/interrupts", &table);
    // The capture kept the device's uevent but not its driver link.
    rm(&root, "/sys/class/net/enp0s2/device/driver");
    put(
        &root,
        "/sys/class/net/enp0s2/device/uevent",
        "DRIVER=e1000e\nPCI_CLASS=20000\n",
    );
    let (_, doc, _) = check(&root, &["--core", "1", "--nic", "enp0s2"]);
    let (s, d) = verdict(&doc, "nic_queue_irqs");
    assert_eq!(s, "pass", "{d}");
    assert!(
        d.starts_with("Tx-Rx-0 IRQ 40 on CPU 1, Tx-Rx-1 IRQ 41 on CPU 1"),
        "{d}"
    );
    assert_eq!(
        verdict(&doc, "nic_driver"),
        ("pass".into(), "e1000e".into())
    );
    // Neither the link nor the line: not captured, not a virtual interface.
    put(
        &root,
        "/sys/class/net/enp0s2/device/uevent",
        "PCI_CLASS=20000\n",
    );
    let (_, doc, _) = check(&root, &["--core", "1", "--nic", "enp0s2"]);
    assert_eq!(verdict(&doc, "nic_driver").0, "unknown");
}

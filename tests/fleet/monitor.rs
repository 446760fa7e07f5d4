//! `rmp-eval monitor` on the captured Debian 12 RT guest (fixture root): after fix, an IRQ affinity and a sysctl
//! changed by hand are reported as drift (journal lines, metrics, exit 1) and written back when
//! /etc/default/rmp-eval says so; a measurement holding the core makes the pass skip; bad settings are exit 2.

use crate::common;
use common::fix::{Root, ok, text};

fn settings(r: &Root, reapply: &str, tf: &std::path::Path) {
    r.write(
        "/etc/default/rmp-eval",
        &format!(
            "RMP_EVAL_MONITOR_RUN_SECONDS=0\nRMP_EVAL_MONITOR_REAPPLY={reapply}\nRMP_EVAL_MONITOR_PROMETHEUS={}\n",
            tf.display()
        ),
    );
}

fn metric(dir: &std::path::Path, series: &str) -> f64 {
    let m = std::fs::read_to_string(dir.join("rmp_eval_monitor.prom")).unwrap();
    m.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{m}"))
        .parse()
        .unwrap()
}

fn promtool_ok(file: &std::path::Path) {
    let o = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).unwrap())
        .output()
        .expect("promtool (Debian package prometheus)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn drift_is_reported_then_reapplied_when_configured() {
    let r = Root::untuned();
    let tf = tempfile::tempdir().unwrap();
    settings(&r, "no", tf.path());
    // Nothing saved yet: no drift, whatever check finds.
    let o = r.rmp("monitor", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("drift: none"), "{}", text(&o));
    assert_eq!(metric(tf.path(), "rmp_eval_drift_remaining_values"), 0.0);

    ok(&r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "sysctl,irq_affinity",
            "--yes",
            "--no-measure",
        ],
    ));
    assert_eq!(r.read("/proc/irq/27/smp_affinity_list"), "0\n");
    let o = r.rmp("monitor", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // irqbalance (or a person) puts IRQ 27 back on CPU 1; someone re-enables RT throttling.
    r.write("/proc/irq/27/smp_affinity_list", "1\n");
    r.write("/proc/sys/kernel/sched_rt_runtime_us", "950000\n");
    let o = r.rmp("monitor", &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("drift: irq_affinity: /proc/irq/27/smp_affinity_list is 1, fix set 0"),
        "{out}"
    );
    assert!(
        out.contains("drift: sysctl: /proc/sys/kernel/sched_rt_runtime_us is 950000, fix set -1"),
        "{out}"
    );
    // Report only: nothing written back.
    assert_eq!(r.read("/proc/irq/27/smp_affinity_list"), "1\n");
    assert_eq!(
        metric(tf.path(), "rmp_eval_drift_values{step=\"irq_affinity\"}"),
        1.0
    );
    assert_eq!(
        metric(tf.path(), "rmp_eval_drift_values{step=\"sysctl\"}"),
        1.0
    );
    assert_eq!(metric(tf.path(), "rmp_eval_drift_remaining_values"), 2.0);
    for f in [
        "rmp_eval_monitor.prom",
        "rmp_eval_check.prom",
        "rmp_eval_info.prom",
    ] {
        promtool_ok(&tf.path().join(f));
    }

    settings(&r, "yes", tf.path());
    let o = r.rmp("monitor", &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("drift: 2 value(s) re-applied, 0 still drifted"),
        "{out}"
    );
    assert_eq!(r.read("/proc/irq/27/smp_affinity_list"), "0\n");
    assert_eq!(r.read("/proc/sys/kernel/sched_rt_runtime_us"), "-1\n");
    assert_eq!(metric(tf.path(), "rmp_eval_drift_reapplied_total"), 2.0);
    assert_eq!(metric(tf.path(), "rmp_eval_drift_remaining_values"), 0.0);
    // Rollback still restores the original values (the monitor wrote no journal of its own).
    ok(&r.rmp("rollback", &["--yes"]));
    assert_eq!(r.read("/proc/sys/kernel/sched_rt_runtime_us"), "950000\n");
}

#[test]
fn a_running_measurement_on_the_core_skips_the_pass() {
    let r = Root::untuned();
    let tf = tempfile::tempdir().unwrap();
    settings(&r, "no", tf.path());
    let host = rmp_eval::host::Host::with_root(r.dir.path());
    let held = rmp_eval::corelock::shared(&host, 1).expect("lock under the root");
    let o = r.rmp("monitor", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("a measurement on CPU1 is running: this pass is skipped"),
        "{}",
        text(&o)
    );
    assert!(!tf.path().join("rmp_eval_monitor.prom").exists());
    drop(held);
    let o = r.rmp("monitor", &[]);
    assert!(!text(&o).contains("skipped"), "{}", text(&o));
}

#[test]
fn bad_settings_are_one_line_and_exit_2() {
    let r = Root::untuned();
    for (line, key) in [
        (
            "RMP_EVAL_MONITOR_RUN_SECONDS=ten",
            "RMP_EVAL_MONITOR_RUN_SECONDS=ten",
        ),
        (
            "RMP_EVAL_MONITOR_REAPPLY=maybe",
            "RMP_EVAL_MONITOR_REAPPLY=maybe",
        ),
        (
            "RMP_EVAL_MONITOR_PROMETHEUS=relative/dir",
            "RMP_EVAL_MONITOR_PROMETHEUS=relative/dir",
        ),
    ] {
        r.write("/etc/default/rmp-eval", &format!("{line}\n"));
        let o = r.rmp("monitor", &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", text(&o));
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(key), "{err}");
    }
}

#[test]
fn what_the_kernel_refused_fix_is_not_drift() {
    // In the PREEMPT_RT guest the kernel refuses to move IRQ 0, 2 and virtio-blk's managed IRQs (EIO); the monitor
    // reported them as drift at every pass (exit 1) until a re-apply pass learnt they were refused. An immutable
    // file refuses root's write (EPERM), which fix reads the same way.
    if !common::require_root("what_the_kernel_refused_fix_is_not_drift") {
        return;
    }
    let r = Root::untuned();
    let tf = tempfile::tempdir().unwrap();
    settings(&r, "no", tf.path());
    let irq = r.path("/proc/irq/27/smp_affinity_list");
    let chattr = |flag: &str| {
        let st = std::process::Command::new("chattr")
            .arg(flag)
            .arg(&irq)
            .status()
            .expect("chattr (e2fsprogs)");
        assert!(st.success(), "chattr {flag} {}", irq.display());
    };
    let before = r.read("/proc/irq/27/smp_affinity_list");
    chattr("+i");
    let o = r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "irq_affinity",
            "--yes",
            "--no-measure",
        ],
    );
    chattr("-i");
    let out = text(&o);
    assert!(
        out.contains("/proc/irq/27/smp_affinity_list: refused by the kernel"),
        "{out}"
    );
    assert_eq!(r.read("/proc/irq/27/smp_affinity_list"), before);
    let o = r.rmp("monitor", &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("drift: none"), "{out}");
    assert_eq!(metric(tf.path(), "rmp_eval_drift_remaining_values"), 0.0);
}

//! fix's cpuset step on fixture roots: the captured Debian 12 RT guest with a cgroup tree of tests/fixtures/cgroup
//! laid over it (see tests/check/cgroup_isolation.rs) and /run/systemd/system where systemd is the init system. The
//! plan (text and JSON), what it refuses and why, apply + rollback byte for byte. The live partition (a CPU-bound
//! process never runs on the core) is the VM suite's 8-cpuset scenario: it needs systemd and cgroup2 with the cpuset
//! controller, which the development VMs do not have (cpuset is bound to a cgroup v1 hierarchy there).

use crate::common;
use common::fix::{Root, diff, ok, text};

fn root(overlay: &str, systemd: bool) -> Root {
    let r = Root::untuned_with_cgroup(overlay);
    if systemd {
        std::fs::create_dir_all(r.path("/run/systemd/system")).unwrap();
    }
    r
}

/// A machine ready for the step: the valid overlay without our slice (not made yet).
fn ready() -> Root {
    let r = root("valid", true);
    r.remove("/sys/fs/cgroup/rmp_eval_rt.slice");
    r.write("/sys/fs/cgroup/cpuset.cpus.effective", "0-1\n");
    r
}

fn plan(r: &Root, only: &str) -> serde_json::Value {
    let o = r.rmp(
        "fix",
        &["--core", "1", "--dry-run", "--json", "--only", only],
    );
    ok(&o);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

fn step<'a>(p: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    p["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {p}"))
}

#[test]
fn the_plan_makes_a_systemd_slice_and_an_isolated_partition() {
    let r = ready();
    let p = plan(&r, "cpuset");
    let s = step(&p, "cpuset");
    let ch = s["changes"].as_array().unwrap();
    let kinds: Vec<&str> = ch.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["file", "file", "command", "partition"], "{s}");
    assert_eq!(ch[0]["target"], "/etc/systemd/system/rmp_eval_rt.slice");
    let unit = |i: usize| ch[i]["after"].as_str().unwrap().to_string();
    assert!(unit(0).contains("[Slice]\nAllowedCPUs=1\n"));
    assert_eq!(ch[1]["target"], "/etc/systemd/system/rmp-eval-rt.service");
    assert!(unit(1).contains("Slice=rmp_eval_rt.slice\nDelegate=yes\n"));
    assert_eq!(ch[2]["target"], "systemctl daemon-reload");
    assert_eq!(
        ch[3]["target"],
        "/sys/fs/cgroup/rmp_eval_rt.slice/cpuset.cpus.partition"
    );
    assert_eq!(ch[3]["after"], "isolated");
    assert_eq!(ch[3]["holder"], "rmp-eval-rt.service");
    assert_eq!(ch[3]["reboot_required"], false);
    // The plan says what the partition does now and what only the boot parameters add.
    let why = s["why"].as_str().unwrap();
    for w in ["nohz_full", "rcu_nocbs", "irqaffinity", "now"] {
        assert!(why.contains(w), "{why}");
    }
    // It is re-applied at boot by apply-saved.
    let persist = step(&p, "persist");
    assert!(
        persist["changes"][0]["after"]
            .as_str()
            .unwrap()
            .contains("\"cpuset\"")
    );
}

#[test]
fn a_failing_core_isolated_check_brings_the_step_with_the_command_line() {
    let r = ready();
    let o = r.rmp("fix", &["--core", "1", "--dry-run", "--json"]);
    ok(&o);
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = p["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    let (c, s) = (
        ids.iter().position(|i| *i == "cmdline").expect("cmdline"),
        ids.iter().position(|i| *i == "cpuset").expect("cpuset"),
    );
    assert!(c < s, "{ids:?}");
}

#[test]
fn where_it_cannot_work_it_plans_nothing_and_says_why() {
    let cases: [(Root, &str); 9] = [
        (
            root("no-cpuset", true),
            "the cpuset controller is bound to the cgroup v1 hierarchy at /sys/fs/cgroup/cpuset, not to cgroup2 \
             at /sys/fs/cgroup/unified",
        ),
        (
            {
                // /proc/mounts names cgroup2, but the mount point is not there: said as it is, not as "v1".
                let r = ready();
                r.remove("/sys/fs/cgroup");
                r
            },
            "/proc/mounts has cgroup2 at /sys/fs/cgroup, but /sys/fs/cgroup/cgroup.controllers cannot be read",
        ),
        (
            {
                let r = ready();
                r.remove("/sys/fs/cgroup");
                std::os::unix::fs::symlink("nowhere", r.path("/sys/fs/cgroup")).unwrap();
                r
            },
            "/proc/mounts has cgroup2 at /sys/fs/cgroup, but /sys/fs/cgroup/cgroup.controllers cannot be read",
        ),
        (
            root("v1-only", true),
            "cgroup2 is not mounted (the cpuset controller is on cgroup v1 at /sys/fs/cgroup/cpuset)",
        ),
        (
            {
                // No /proc/mounts in the tree: nothing says the machine is cgroup v1.
                let r = ready();
                r.remove("/proc/mounts");
                r
            },
            "/proc/mounts cannot be read",
        ),
        (root("valid", false), "systemd is not the init system"),
        (
            {
                let r = ready();
                r.write("/sys/fs/cgroup/system.slice/cpuset.cpus", "0-1\n");
                r
            },
            "cgroup system.slice asks for CPU1",
        ),
        (
            {
                let r = ready();
                r.write("/sys/devices/system/cpu/isolated", "1\n");
                r
            },
            "isolcpus= already isolates CPU 1",
        ),
        (
            {
                // 5.15–6.0 have partitions but refuse "isolated" (added for 6.1).
                let r = ready();
                r.write("/proc/sys/kernel/osrelease", "6.0.19-rt-amd64\n");
                r
            },
            "kernel 6.0.19-rt-amd64 is older than 6.1",
        ),
    ];
    for (r, why) in cases {
        let p = plan(&r, "cpuset");
        let s = step(&p, "cpuset");
        assert_eq!(s["changes"].as_array().unwrap().len(), 0, "{why}: {s}");
        let notes = s["notes"].to_string();
        assert!(notes.contains(why), "{why}: {notes}");
    }
}

#[test]
fn an_invalid_partition_of_ours_is_planned_again() {
    let r = root("invalid", true);
    // system.slice no longer claims the core: ours can be made valid.
    r.write("/sys/fs/cgroup/system.slice/cpuset.cpus", "\n");
    let p = plan(&r, "cpuset");
    let ch = &step(&p, "cpuset")["changes"];
    let part = ch
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "partition")
        .unwrap();
    assert_eq!(
        part["before"],
        "isolated invalid (Cpu list in cpuset.cpus not exclusive)"
    );
}

#[test]
fn a_valid_partition_plans_nothing() {
    let r = root("valid", true);
    ok(&r.rmp(
        "fix",
        &["--core", "1", "--only", "cpuset", "--yes", "--no-measure"],
    ));
    // The slice file is now there too; the partition already holds the core: a second plan is empty.
    let p = plan(&r, "cpuset");
    assert_eq!(
        step(&p, "cpuset")["changes"].as_array().unwrap().len(),
        0,
        "{p}"
    );
}

#[test]
fn apply_and_rollback_under_root_leave_the_tree_as_it_was() {
    let r = ready();
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", "cpuset", "--yes", "--no-measure"],
    );
    ok(&o);
    let out = text(&o);
    assert!(
        out.contains(
            "would be done on the machine (not under --root): systemctl start rmp-eval-rt.service"
        ),
        "{out}"
    );
    assert!(
        r.read("/etc/systemd/system/rmp_eval_rt.slice")
            .contains("AllowedCPUs=1")
    );
    verify_units(&r);
    ok(&r.rmp("rollback", &["--yes"]));
    let d = diff(&start, &r.tree());
    assert!(d.is_empty(), "rollback left differences: {d:?}");
}

/// The units fix wrote pass `systemd-analyze verify` (Debian's systemd; a root with the system's units, ours and
/// the ExecStart program): no warning either.
fn verify_units(r: &Root) {
    let v = tempfile::tempdir().unwrap();
    let sys = v.path().join("lib/systemd");
    std::fs::create_dir_all(&sys).unwrap();
    let st = std::process::Command::new("cp")
        .args(["-a", "/lib/systemd/system"])
        .arg(&sys)
        .status()
        .unwrap();
    assert!(
        st.success(),
        "no /lib/systemd/system: install Debian's systemd"
    );
    for u in ["rmp_eval_rt.slice", "rmp-eval-rt.service"] {
        std::fs::copy(
            r.path(&format!("/etc/systemd/system/{u}")),
            sys.join("system").join(u),
        )
        .unwrap();
    }
    std::fs::create_dir_all(v.path().join("bin")).unwrap();
    std::fs::copy("/bin/sleep", v.path().join("bin/sleep")).unwrap();
    let o = std::process::Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(format!("--root={}", v.path().display()))
        .args(["rmp_eval_rt.slice", "rmp-eval-rt.service"])
        .output()
        .expect("systemd-analyze");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.trim().is_empty(), "{err}");
}

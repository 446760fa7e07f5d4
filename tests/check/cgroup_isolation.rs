//! core_isolated on roots with cgroup trees: the real Debian 12 PREEMPT_RT capture (isolcpus unset) with one of
//! tests/fixtures/cgroup/* laid over it — a valid isolated partition (kernel 6.1, and 6.12 with
//! cpuset.cpus.isolated), an invalid one, a hybrid layout whose cgroup2 has no cpuset controller, cgroup v1 only.

use crate::common;
use common::fix::{Root, text};

fn core_isolated(r: &Root) -> (String, String) {
    let o = r.rmp("check", &["--core", "1", "--json"]);
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let c = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "core_isolated")
        .unwrap()
        .clone();
    (
        c["status"].as_str().unwrap().into(),
        c["detail"].as_str().unwrap().into(),
    )
}

#[test]
fn a_valid_isolated_partition_passes_and_says_so() {
    for overlay in ["valid", "valid-6.8"] {
        let (st, d) = core_isolated(&Root::untuned_with_cgroup(overlay));
        assert_eq!(st, "pass", "{overlay}: {d}");
        assert_eq!(
            d, "cgroup isolated partition rmp_eval_rt.slice (CPUs 1)",
            "{overlay}"
        );
    }
}

#[test]
fn a_partition_missing_from_cpuset_cpus_isolated_fails() {
    let r = Root::untuned_with_cgroup("valid-6.8");
    r.write("/sys/fs/cgroup/cpuset.cpus.isolated", "\n");
    let (st, d) = core_isolated(&r);
    assert_eq!(st, "fail");
    assert!(d.contains("not in cpuset.cpus.isolated"), "{d}");
}

#[test]
fn an_invalid_partition_fails_with_the_kernels_reason() {
    let (st, d) = core_isolated(&Root::untuned_with_cgroup("invalid"));
    assert_eq!(st, "fail");
    assert_eq!(
        d,
        "cgroup partition rmp_eval_rt.slice is \"isolated invalid\": Cpu list in cpuset.cpus not exclusive"
    );
}

#[test]
fn a_root_partition_is_not_isolation() {
    let r = Root::untuned_with_cgroup("valid");
    r.write(
        "/sys/fs/cgroup/rmp_eval_rt.slice/cpuset.cpus.partition",
        "root\n",
    );
    let (st, d) = core_isolated(&r);
    assert_eq!(st, "fail");
    assert!(d.contains("of type root"), "{d}");
}

#[test]
fn without_a_usable_cgroup2_the_boot_list_decides() {
    for overlay in ["no-cpuset", "v1-only"] {
        let r = Root::untuned_with_cgroup(overlay);
        let (st, d) = core_isolated(&r);
        assert_eq!(
            (st.as_str(), d.as_str()),
            ("fail", "CPU1 not in isolated: (none)"),
            "{overlay}"
        );
        r.write("/sys/devices/system/cpu/isolated", "1\n");
        let (st, d) = core_isolated(&r);
        assert_eq!(
            (st.as_str(), d.as_str()),
            ("pass", "isolated list: 1"),
            "{overlay}"
        );
    }
}

#[test]
fn boot_isolation_and_a_partition_are_both_named() {
    let r = Root::untuned_with_cgroup("valid");
    r.write("/sys/devices/system/cpu/isolated", "1\n");
    let (st, d) = core_isolated(&r);
    assert_eq!(st, "pass");
    assert_eq!(
        d,
        "isolated list: 1; and cgroup isolated partition rmp_eval_rt.slice"
    );
}

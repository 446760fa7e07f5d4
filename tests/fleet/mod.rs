//! Running on many machines: the monitor, Prometheus textfiles, the systemd units.
//!
//! # cgroups, fleet output and the monitor
//!
//! - `src/cgroup.rs` reads cgroup v2 (mount from /proc/mounts, whether cpuset is offered, partitions below the root);
//!   `src/parse/cgroup.rs` parses the text. The cpuset step (`src/tunable/cpuset.rs`) plans unit files and a partition
//!   change (`src/fix/kind/partition.rs`: start the holder service, write `isolated`, verify, restore). The development
//!   VMs cannot make a partition (cpuset is on a cgroup v1 hierarchy there, PID 1 is not systemd): fixture overlays in
//!   tests/fixtures/cgroup cover the logic, the live test needs the PREEMPT_RT guest.
//! - Facts from the guest (Debian 12, systemd 252, 6.1): systemd enables cpuset in the root's subtree_control for a
//!   slice with AllowedCPUs=; 6.1 has no cpuset.cpus.isolated; a dash in a slice name is systemd's hierarchy
//!   (`rmp-eval-rt.slice` lives in rmp.slice/rmp-eval.slice/), hence `rmp_eval_rt.slice` — a partition must be a child
//!   of the root. The holder service gives the slice a member (and us a delegated cgroup to measure in).
//! - `src/report/prometheus/`: one `.prom` file per writer, atomic; counters/histograms accumulate in
//!   `rmp_eval.totals.json` beside them. `src/fix/drift.rs` + `src/commands/monitor.rs` are the monitor;
//!   `src/corelock.rs` keeps it away from a running measurement. Tests: tests/fleet/prometheus.rs (promtool, a real
//!   node exporter), tests/fleet/monitor.rs, tests/fleet/systemd_units.rs (systemd-analyze verify), tests/package/ansible.sh.

mod monitor;
mod prometheus;
mod systemd_units;

//! The partition kind: the RT core's cgroup v2 isolated partition, in a slice systemd manages (fix's cpuset step).
//! systemd creates the slice's cgroup with cpuset.cpus = the core (AllowedCPUs= in the slice unit, a File change
//! of the same step) and keeps the cpuset controller enabled on the way to it; fix makes that cgroup an isolated
//! partition: the core leaves the scheduler's load balancing and every other cgroup's CPUs.
//! apply: `systemctl start HOLDER` (a service in the slice: systemd makes no cgroup for an empty slice), then
//! "isolated" into the slice's cpuset.cpus.partition. verify: reads back "isolated"
//! (not "isolated invalid (…)"), the core is in the root's cpuset.cpus.isolated where the kernel has that file
//! (6.8+), and the root cgroup — where every task outside the partition takes its CPUs from — no longer has it.
//! restore: "member", then `systemctl stop SLICE` (and so its holder) when the slice was not running before fix.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::command::run_program;
use super::{How, Restored, Took};
use crate::error::Result;
use crate::host::Host;
use crate::parse::cgroup::PartitionState;
use crate::parse::cpulist;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionChange {
    /// The cgroup2 mount ("/sys/fs/cgroup").
    pub(crate) mount: String,
    /// The systemd slice ("rmp_eval_rt.slice"): its cgroup is MOUNT/SLICE.
    pub(crate) slice: String,
    /// The service in the slice whose start makes systemd create the slice's cgroup.
    pub(crate) holder: String,
    pub(crate) core: usize,
    /// The partition's CPUs: the core and its SMT siblings.
    pub(crate) cpus: Vec<usize>,
    /// cpuset.cpus.partition now ("member"; "none" when the slice's cgroup does not exist yet).
    pub(crate) before: String,
}

impl PartitionChange {
    pub(crate) fn file(&self) -> String {
        format!("{}/{}/cpuset.cpus.partition", self.mount, self.slice)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedPartition {
    /// The partition file (the entry's target).
    pub(crate) path: String,
    pub(crate) mount: String,
    pub(crate) slice: String,
    /// The slice's cgroup existed before fix (then rollback leaves the slice running).
    pub(crate) existed: bool,
}

pub(crate) fn record(host: &Host, c: &PartitionChange) -> Result<SavedPartition> {
    Ok(SavedPartition {
        path: c.file(),
        mount: c.mount.clone(),
        slice: c.slice.clone(),
        existed: host.is_dir(&format!("{}/{}", c.mount, c.slice)),
    })
}

pub(crate) fn apply(host: &Host, c: &PartitionChange) -> Result<Took> {
    let Some(k) = host.kernel() else {
        return Ok(Took::WouldRun);
    };
    let existed = host.is_dir(&format!("{}/{}", c.mount, c.slice));
    run_program(k, &["systemctl".into(), "start".into(), c.holder.clone()])?;
    if let Err(e) = host.write_value(&c.file(), "isolated\n") {
        // Not journaled as applied: take back the start here, or the holder would outlive the revert.
        if !existed {
            let _ = run_program(k, &["systemctl".into(), "stop".into(), c.slice.clone()]);
        }
        return Err(e.into());
    }
    Ok(Took::Took)
}

pub(crate) fn verify(host: &Host, c: &PartitionChange) -> Took {
    let state = match host.read(&c.file()) {
        Ok(s) => s,
        Err(e) => return Took::Differs(e.reason()),
    };
    if PartitionState::parse(&state) != Some(PartitionState::Isolated) {
        return Took::Differs(state.trim().to_string());
    }
    let list = |p: &str| {
        host.read_trimmed(&format!("{}/{p}", c.mount))
            .ok()
            .map(|r| cpulist::parse(&r).unwrap_or_default())
    };
    if let Some(iso) = list("cpuset.cpus.isolated")
        && let Some(cpu) = c.cpus.iter().find(|x| !iso.contains(x))
    {
        return Took::Differs(format!("CPU{cpu} is not in cpuset.cpus.isolated"));
    }
    let root = list("cpuset.cpus.effective").unwrap_or_default();
    match c.cpus.iter().find(|x| root.contains(x)) {
        Some(cpu) => Took::Differs(format!(
            "the root cgroup still has CPU{cpu} (cpuset.cpus.effective {})",
            cpulist::format(&root)
        )),
        None => Took::Took,
    }
}

pub(crate) fn restore(host: &Host, s: &SavedPartition, how: How) -> Result<Restored> {
    let dir = format!("{}/{}", s.mount, s.slice);
    if !host.is_dir(&dir) {
        return Ok(Restored::Unchanged);
    }
    let now = host.read_trimmed(&s.path).unwrap_or_default();
    // A slice fix started is stopped again, on the machine only.
    let stop = host.kernel().filter(|_| !s.existed);
    if now == "member" && stop.is_none() {
        return Ok(Restored::Unchanged);
    }
    if !how.dry_run {
        if now != "member" {
            host.write_value(&s.path, "member\n")?;
        }
        if let Some(k) = stop {
            run_program(k, &["systemctl".into(), "stop".into(), s.slice.clone()])?;
        }
    }
    Ok(Restored::Written(format!(
        "{now} → member{}",
        if stop.is_some() {
            format!(", {} stopped", s.slice)
        } else {
            String::new()
        }
    )))
}

pub(crate) fn text(c: &PartitionChange, live: bool) -> String {
    let how = if live {
        ""
    } else {
        "would be done on the machine (not under --root): "
    };
    format!(
        "{how}systemctl start {}; {}: {} → isolated\n",
        c.holder,
        c.file(),
        c.before
    )
}

pub(crate) fn json(c: &PartitionChange) -> Value {
    json!({
        "kind": "partition", "target": c.file(), "before": c.before, "after": "isolated",
        "reboot_required": false, "slice": c.slice, "holder": c.holder, "core": c.core,
        "cpus": cpulist::format(&c.cpus),
    })
}

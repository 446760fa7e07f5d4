//! cgroup v2 cpuset partitions as the machine has them: is cgroup2 mounted, does it offer the cpuset controller,
//! which partitions exist and which one holds a CPU. Read through `Host` (fixture roots work); the fix step that
//! creates a partition lives in tunable::cpuset.

use crate::error::Error;
use crate::host::Host;
use crate::parse::cgroup::{PartitionState, cgroup2_mount, has_controller};
use crate::parse::{cpulist, kernel};

pub(crate) const MOUNTS: &str = "/proc/mounts";
/// fix's cpuset step: the slice whose cgroup becomes the isolated partition (systemd gives it the core) … A
/// dash in a slice's name is systemd's hierarchy ("a-b.slice" lives in a.slice): the partition must be a child of
/// the root cgroup, so the name has none (found in the guest: rmp-eval-rt.slice was rmp.slice/rmp-eval.slice/…).
pub(crate) const SLICE: &str = "rmp_eval_rt.slice";
/// … and the service in it that keeps the slice's cgroup in use while it runs. Delegate=yes: its cgroup is ours
/// to place measurements in.
pub(crate) const HOLDER: &str = "rmp-eval-rt.service";
/// Partitions are created by the kernel only under partition roots: the walk never goes deeper than this.
const MAX_DEPTH: usize = 4;
/// A machine with thousands of cgroups (containers) is not walked beyond this many directories.
const MAX_DIRS: usize = 2000;

/// Can this machine make a cgroup v2 isolated partition, and where is cgroup2?
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Support {
    /// No cgroup2 in /proc/mounts, or /proc/mounts unreadable: `why` says which, and names the cgroup v1
    /// hierarchy of the cpuset controller only where the mounts list one.
    NoCgroup2 {
        why: String,
    },
    /// cgroup2 is mounted but offers no cpuset controller: bound to a v1 hierarchy (a hybrid layout), or the
    /// mount point cannot be read. `why` says which.
    NoCpuset {
        mount: String,
        why: String,
    },
    /// The kernel is older than 6.1, the first to accept "isolated" (cgroup/cpuset commit f28e22441f35, merged
    /// for 6.1; 5.15–6.0 refuse the word).
    OldKernel {
        mount: String,
        release: String,
    },
    Ready {
        mount: String,
    },
}

impl Support {
    pub(crate) fn mount(&self) -> Option<&str> {
        match self {
            Support::NoCgroup2 { .. } => None,
            Support::NoCpuset { mount, .. }
            | Support::OldKernel { mount, .. }
            | Support::Ready { mount } => Some(mount),
        }
    }

    /// Why a partition cannot be made here, or None when it can.
    pub(crate) fn why_not(&self) -> Option<String> {
        match self {
            Support::NoCgroup2 { why } => Some(why.clone()),
            Support::NoCpuset { why, .. } => Some(why.clone()),
            Support::OldKernel { release, .. } => Some(format!(
                "kernel {release} is older than 6.1 (no isolated partitions)"
            )),
            Support::Ready { .. } => None,
        }
    }
}

pub(crate) fn support(host: &Host) -> Support {
    let mounts = match host.read(MOUNTS) {
        Ok(m) => m,
        Err(e) => {
            return Support::NoCgroup2 {
                why: format!("{MOUNTS} cannot be read ({})", e.reason()),
            };
        }
    };
    let Some(mount) = cgroup2_mount(&mounts) else {
        let why = match crate::parse::cgroup::cgroup1_mount_with(&mounts, "cpuset") {
            Some(v1) => {
                format!("cgroup2 is not mounted (the cpuset controller is on cgroup v1 at {v1})")
            }
            None => format!("{MOUNTS} lists no cgroup2 mount"),
        };
        return Support::NoCgroup2 { why };
    };
    let path = format!("{mount}/cgroup.controllers");
    let why = match host.read(&path) {
        Ok(ctl) if has_controller(&ctl, "cpuset") => None,
        Ok(_) => Some(
            match crate::parse::cgroup::cgroup1_mount_with(&mounts, "cpuset") {
                Some(v1) => format!(
                    "the cpuset controller is bound to the cgroup v1 hierarchy at {v1}, not to cgroup2 at {mount}"
                ),
                None => format!("the cpuset controller is not in {path}"),
            },
        ),
        Err(e) => Some(format!(
            "/proc/mounts has cgroup2 at {mount}, but {path} cannot be read ({})",
            e.reason()
        )),
    };
    if let Some(why) = why {
        return Support::NoCpuset { mount, why };
    }
    let release = host.kernel_release().unwrap_or_default();
    match kernel::version(&release) {
        Some(v) if v < (6, 1, 0) => Support::OldKernel { mount, release },
        _ => Support::Ready { mount },
    }
}

/// One cgroup whose cpuset.cpus.partition is not "member".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Partition {
    /// The cgroup directory as a system path (under the cgroup2 mount).
    pub(crate) dir: String,
    /// The same, relative to the mount ("rmp_eval_rt.slice").
    pub(crate) name: String,
    pub(crate) state: PartitionState,
    /// The CPUs it has (cpuset.cpus.effective) when valid; those it asked for (cpuset.cpus) when invalid.
    pub(crate) cpus: Vec<usize>,
}

fn cpus_of(host: &Host, path: &str) -> Vec<usize> {
    host.read_trimmed(path)
        .ok()
        .and_then(|r| cpulist::parse(&r).ok())
        .unwrap_or_default()
}

/// Every partition below the cgroup2 mount, parents before children. Only the children of the root and of
/// partitions are looked into: the kernel makes no valid partition under a member.
pub(crate) fn partitions(host: &Host, mount: &str) -> Vec<Partition> {
    let mut out = Vec::new();
    let mut queue = vec![(mount.to_string(), 0usize)];
    let mut seen = 0;
    while let Some((dir, depth)) = queue.pop() {
        if depth >= MAX_DEPTH {
            continue;
        }
        let Ok(names) = host.list(&dir) else { continue };
        for n in names {
            let child = format!("{dir}/{n}");
            if !host.is_dir(&child) {
                continue;
            }
            seen += 1;
            if seen > MAX_DIRS {
                return out;
            }
            let Some(state) = host
                .read(&format!("{child}/cpuset.cpus.partition"))
                .ok()
                .and_then(|r| PartitionState::parse(&r))
            else {
                continue;
            };
            let cpus = match state {
                PartitionState::Member => continue,
                PartitionState::Invalid { .. } => cpus_of(host, &format!("{child}/cpuset.cpus")),
                _ => cpus_of(host, &format!("{child}/cpuset.cpus.effective")),
            };
            if !matches!(state, PartitionState::Invalid { .. }) {
                queue.push((child.clone(), depth + 1));
            }
            out.push(Partition {
                name: child[mount.len()..].trim_start_matches('/').to_string(),
                dir: child,
                state,
                cpus,
            });
        }
    }
    out
}

/// How a CPU is kept free of other tasks by cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CoreCgroup {
    pub(crate) support: Support,
    /// The innermost partition whose CPUs include the core (valid or not).
    pub(crate) partition: Option<Partition>,
    /// The root's cpuset.cpus.isolated (kernels since 6.8 list the CPUs of isolated partitions there); None when
    /// the file does not exist.
    pub(crate) isolated_list: Option<Vec<usize>>,
}

impl CoreCgroup {
    /// True when the core is in a valid isolated partition (and, where the kernel lists them, in
    /// cpuset.cpus.isolated).
    pub(crate) fn isolated(&self, core: usize) -> bool {
        matches!(&self.partition, Some(p) if p.state == PartitionState::Isolated)
            && self
                .isolated_list
                .as_ref()
                .is_none_or(|l| l.contains(&core))
    }
}

pub(crate) fn of_core(host: &Host, core: usize) -> CoreCgroup {
    let support = support(host);
    let Some(mount) = support.mount().map(str::to_string) else {
        return CoreCgroup {
            support,
            partition: None,
            isolated_list: None,
        };
    };
    let isolated_list = host
        .read_trimmed(&format!("{mount}/cpuset.cpus.isolated"))
        .ok()
        .map(|r| cpulist::parse(&r).unwrap_or_default());
    let partition = partitions(host, &mount)
        .into_iter()
        .filter(|p| p.cpus.contains(&core))
        .max_by_key(|p| p.name.matches('/').count());
    CoreCgroup {
        support,
        partition,
        isolated_list,
    }
}

/// This process inside the isolated partition that holds the RT core, for a measurement (every thread of the
/// process moves: cgroup v2 places processes, not threads); moved back to its own cgroup when dropped. Only on the
/// live machine, and only when the core is in a valid isolated partition.
pub(crate) struct Placed {
    host: Host,
    back: String,
    /// The partition's name (for the note the caller prints).
    pub(crate) name: String,
}

const SELF_CGROUP: &str = "/proc/self/cgroup";

/// The cgroup a measurement joins inside partition `p`: fix's holder service's delegated cgroup when it is there.
/// Not the slice itself: systemd enables the holder's controllers in the slice's subtree_control, and cgroup v2
/// takes no process into a cgroup that has them ("no internal processes": EBUSY — found in the guest).
fn join_dir(host: &Host, p: &Partition) -> String {
    let holder = format!("{}/{HOLDER}", p.dir);
    if p.name == SLICE && host.is_dir(&holder) {
        holder
    } else {
        p.dir.clone()
    }
}

/// Ok(None) when the core is in no valid isolated partition (or not live). An error when it is and this process
/// cannot join it: outside the partition the core is not among this process's CPUs, so pinning would fail anyway
/// ("Invalid argument") — the error says why instead.
pub(crate) fn enter(host: &Host, core: usize) -> Result<Option<Placed>, Error> {
    if !host.is_live() {
        return Ok(None);
    }
    let cg = of_core(host, core);
    let (Some(p), Some(mount)) = (
        cg.partition.as_ref().filter(|_| cg.isolated(core)),
        cg.support.mount(),
    ) else {
        return Ok(None);
    };
    // cgroup v2's line: "0::/user.slice/…".
    let own = host
        .read(SELF_CGROUP)?
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        .ok_or_else(|| {
            Error::failed(format!(
                "CPU{core} is in the isolated cgroup partition {}, but this process is in no cgroup v2 \
                 ({SELF_CGROUP}): cannot measure there",
                p.name
            ))
        })?;
    let dir = join_dir(host, p);
    let pid = std::process::id().to_string();
    host.write_value(&format!("{dir}/cgroup.procs"), &pid)
        .map_err(|e| {
            Error::failed(format!(
                "CPU{core} is in the isolated cgroup partition {}; moving this process into {dir} failed \
                 ({}): cannot measure on that core",
                p.name,
                e.reason()
            ))
        })?;
    Ok(Some(Placed {
        host: host.clone(),
        back: format!("{mount}{}/cgroup.procs", own.trim_end_matches('/')),
        name: p.name.clone(),
    }))
}

impl Drop for Placed {
    fn drop(&mut self) {
        let _ = self
            .host
            .write_value(&self.back, &std::process::id().to_string());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_slice_is_a_child_of_the_root() {
        // systemd reads "a-b.slice" as b inside a.slice: no dash, or the partition would not be under the root.
        assert!(!super::SLICE.trim_end_matches(".slice").contains('-'));
    }
}

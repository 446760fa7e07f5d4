//! cgroup text: where cgroup2 is mounted (/proc/mounts), which controllers a cgroup offers
//! (cgroup.controllers) and the state of a cpuset partition (cpuset.cpus.partition).

/// The mount point of the first cgroup2 filesystem in /proc/mounts text, with the kernel's octal escapes
/// ("\040" for a space) undone. None when cgroup2 is not mounted (a cgroup v1-only machine).
pub fn cgroup2_mount(mounts: &str) -> Option<String> {
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 3 && f[2] == "cgroup2").then(|| unescape(f[1]))
    })
}

/// The mount point of a cgroup v1 hierarchy in /proc/mounts text that carries `controller` (among its mount
/// options, as "cpuset" in "rw,nosuid,nodev,noexec,relatime,cpuset").
pub(crate) fn cgroup1_mount_with(mounts: &str, controller: &str) -> Option<String> {
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 4 && f[2] == "cgroup" && f[3].split(',').any(|o| o == controller))
            .then(|| unescape(f[1]))
    })
}

fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = |c: u8| (b'0'..=b'7').contains(&c);
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|&c| oct(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// True when `controllers` (a cgroup.controllers or cgroup.subtree_control line) names `name`.
pub fn has_controller(controllers: &str, name: &str) -> bool {
    controllers.split_whitespace().any(|c| c == name)
}

/// cpuset.cpus.partition as the kernel prints it (Documentation/admin-guide/cgroup-v2.rst, "Cpuset Interface
/// Files"): "member", "root", "isolated", or "<root|isolated> invalid (<reason>)" — the reason only since 5.17.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionState {
    Member,
    Root,
    Isolated,
    Invalid {
        /// "root" or "isolated": what was asked for.
        kind: String,
        /// The kernel's reason, when it gives one.
        reason: Option<String>,
    },
}

impl PartitionState {
    pub fn parse(raw: &str) -> Option<PartitionState> {
        let t = raw.trim();
        match t {
            "member" => return Some(PartitionState::Member),
            "root" => return Some(PartitionState::Root),
            "isolated" => return Some(PartitionState::Isolated),
            _ => {}
        }
        let (kind, rest) = t.split_once(' ')?;
        if !matches!(kind, "root" | "isolated") {
            return None;
        }
        let rest = rest.trim().strip_prefix("invalid")?.trim();
        let reason = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .map(str::to_string)
            .filter(|r| !r.is_empty());
        if reason.is_none() && !rest.is_empty() {
            return None;
        }
        Some(PartitionState::Invalid {
            kind: kind.to_string(),
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/mounts of the development VM (kernel 6.18, hybrid layout: cpuset on v1, cgroup2 without it),
    /// captured with `grep cgroup /proc/mounts` on 2026-12-03.
    const HYBRID: &str = "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
";
    /// Debian 12's unified layout, as systemd 252 mounts it ([kernel]: the line format of /proc/mounts).
    const UNIFIED: &str = "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0
";

    #[test]
    fn mount_points() {
        assert_eq!(
            cgroup2_mount(HYBRID).as_deref(),
            Some("/sys/fs/cgroup/unified")
        );
        assert_eq!(cgroup2_mount(UNIFIED).as_deref(), Some("/sys/fs/cgroup"));
        assert_eq!(
            cgroup2_mount("cgroup /sys/fs/cgroup/cpuset cgroup rw 0 0\n"),
            None
        );
        assert_eq!(cgroup2_mount(""), None);
        assert_eq!(
            cgroup2_mount("none /mnt/my\\040cg cgroup2 rw 0 0").as_deref(),
            Some("/mnt/my cg")
        );
        assert_eq!(
            cgroup2_mount("x /a\\04 cgroup2 rw").as_deref(),
            Some("/a\\04")
        );
    }

    #[test]
    fn controllers() {
        // Debian 12 guest's /sys/fs/cgroup/cgroup.controllers ([kernel] 6.1 with systemd 252).
        let c = "cpuset cpu io memory hugetlb pids rdma misc";
        assert!(has_controller(c, "cpuset"));
        assert!(!has_controller("cpu io memory", "cpuset"));
        assert!(!has_controller("", "cpuset"));
    }

    #[test]
    fn partition_states() {
        use PartitionState::*;
        assert_eq!(PartitionState::parse("member\n"), Some(Member));
        assert_eq!(PartitionState::parse("root"), Some(Root));
        assert_eq!(PartitionState::parse("isolated"), Some(Isolated));
        // kernel/cgroup/cpuset.c, sched_partition_show: "%s invalid (%s)\n" with perr_strings[].
        assert_eq!(
            PartitionState::parse("isolated invalid (Cpu list in cpuset.cpus not exclusive)\n"),
            Some(Invalid {
                kind: "isolated".into(),
                reason: Some("Cpu list in cpuset.cpus not exclusive".into())
            })
        );
        // Before 5.17 the kernel gave no reason.
        assert_eq!(
            PartitionState::parse("root invalid"),
            Some(Invalid {
                kind: "root".into(),
                reason: None
            })
        );
        for bad in [
            "",
            "isolatedx",
            "member invalid (x)",
            "isolated broken",
            "isolated invalid junk",
        ] {
            assert_eq!(PartitionState::parse(bad), None, "{bad:?}");
        }
    }
}

//! Kernel same-page merging (KSM): the check that ksmd is not running and the step that stops it.
//!
//! ksmd wakes every `sleep_millisecs` to scan the memory regions marked mergeable (qemu/KVM guests, programs
//! that ask with madvise or prctl) and merges identical pages copy-on-write. Its scan takes the scanned
//! processes' mmap locks, and the first write to a merged page is a page fault and a copy. Real-time tuning
//! guides (Red Hat's among them) stop ksm and ksmtuned.

use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, unknown};
use crate::fix::runtime::{Target, step, value};
use crate::fix::{Step, StepId, ValueKind};
use crate::host::Host;
use crate::parse::kint::{self, Range};

use super::{Persistence, Tunable};

/// 0: stopped; 1: ksmd runs; 2: stopped and every merged page unmerged (Documentation/admin-guide/mm/ksm.rst).
pub(crate) const KSM_RUN: &str = "/sys/kernel/mm/ksm/run";
/// How many more places share the merged pages: the pages merging saved (pages_shared counts the shared
/// pages themselves, one per set of identical pages).
const PAGES_SHARING: &str = "/sys/kernel/mm/ksm/pages_sharing";
/// The service that starts ksmd again under memory pressure (Debian and Fedora's ksmtuned package).
const KSMTUNED: &[&str] = &[
    "/lib/systemd/system/ksmtuned.service",
    "/usr/lib/systemd/system/ksmtuned.service",
];

pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Ksm,
    persistence: Persistence::Boot,
    plan: |host, t, failed| Ok(plan(host, t, failed)),
    risks,
};

pub(crate) const CHECK: Check = Check {
    id: CheckId::Ksm,
    section: Section::System,
    title: "KSM page merging stopped",
    doc: "Kernel same-page merging: ksmd scans the memory of qemu/KVM guests and of programs that ask for it, \
          merges identical pages copy-on-write, and takes the scanned processes' mmap locks while it does; the \
          first write to a merged page is a page fault and a copy. Passes when /sys/kernel/mm/ksm/run is 0 or 2 \
          (stopped) or the kernel has no KSM; fails when ksmd runs (1).",
    remedy: Some(StepId::Ksm),
    by_hand: None,
    evaluate: ksm,
};

fn ksm(host: &Host, _: &Ctx) -> Eval {
    let run = match host.read_trimmed(KSM_RUN) {
        Ok(v) => v,
        Err(e) if e.is_not_found() && host.lacks(KSM_RUN) => {
            return Ok(Assessment::info("no KSM in this kernel"));
        }
        Err(e) if e.is_not_found() => return Err(crate::checks::absent(host, KSM_RUN)),
        Err(e) => return Err(unknown(format!("{KSM_RUN}: {}", e.reason()))),
    };
    let saved = host
        .read_trimmed(PAGES_SHARING)
        .ok()
        .and_then(|v| kint::uint(&v, &Range::U64).ok());
    let saved = match saved {
        Some(n) if n > 0 => format!(", {n} pages saved by merging"),
        _ => String::new(),
    };
    match run.as_str() {
        "1" => Ok(Assessment::fail(format!("run=1 (ksmd scanning{saved})"))),
        "0" => Ok(Assessment::pass(format!("run=0 (stopped{saved})"))),
        "2" => Ok(Assessment::pass("run=2 (stopped, pages unmerged)")),
        v => Err(unknown(format!(
            "{KSM_RUN}: unexpected value '{}'",
            crate::parse::text::sanitize(v, 24)
        ))),
    }
}

/// Stops ksmd (0), leaving pages merged so far as they are: unmerging them all (2) can need more memory than
/// the machine has free.
fn plan(host: &Host, _: &Target, _: &[CheckId]) -> Step {
    let mut s = step(
        StepId::Ksm,
        "KSM page merging: stopped",
        "ksmd's scans take the mmap locks of the processes they scan, and a write to a merged page faults",
    );
    match host.read_trimmed(KSM_RUN).as_deref() {
        Ok("1") => value(&mut s, host, KSM_RUN, "0", ValueKind::Exact, false),
        Ok(_) => {}
        Err(e) if e.is_not_found() => s.note("no KSM in this kernel (nothing to stop)"),
        Err(e) => s.note(format!("{KSM_RUN}: {}", e.reason())),
    }
    if KSMTUNED.iter().any(|p| host.exists(p)) {
        s.note(
            "ksmtuned is installed and starts ksmd again when memory runs low: `systemctl disable --now \
             ksmtuned` by hand",
        );
    }
    s
}

fn risks(_: &Step, _: &Target) -> Vec<String> {
    vec![
        "ksmd stops merging: guests and programs that shared pages through it use more memory as they write them"
            .into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;

    fn tree(run: Option<&str>, sharing: Option<&str>) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("sys/kernel/mm/ksm");
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(r) = run {
            std::fs::write(dir.join("run"), r).unwrap();
        }
        // One page shared by 256 mappings: pages_shared 1, pages_sharing 255 (mm/ksm.c counts the extra ones).
        std::fs::write(dir.join("pages_shared"), "1\n").unwrap();
        if let Some(s) = sharing {
            std::fs::write(dir.join("pages_sharing"), s).unwrap();
        }
        d
    }

    fn status(run: Option<&str>) -> (Status, String) {
        let d = tree(run, Some("255\n"));
        let host = Host::with_root(d.path());
        let ctx = Ctx {
            core: 1,
            nic: None,
            pid: None,
            smi_seconds: None,
        };
        let f = crate::checks::finding(&CHECK, ksm(&host, &ctx));
        (f.status, f.detail)
    }

    #[test]
    fn ksmd_running_fails_stopped_passes_garbage_is_unknown() {
        // The kernel writes "0\n", "1\n" or "2\n" (mm/ksm.c run_show).
        assert_eq!(status(Some("1\n")).0, Status::Fail);
        assert_eq!(
            status(Some("1\n")).1,
            "run=1 (ksmd scanning, 255 pages saved by merging)"
        );
        assert_eq!(status(Some("0\n")).0, Status::Pass);
        assert_eq!(status(Some("2\n")).0, Status::Pass);
        assert_eq!(status(Some("yes\n")).0, Status::Unknown);
        assert_eq!(status(Some("")).0, Status::Unknown);
        // Absent from a tree: not captured (the snapshot records what the machine lacked).
        assert_eq!(status(None).0, Status::Unknown);
    }

    #[test]
    fn the_step_writes_0_only_when_ksmd_runs() {
        let t = Target {
            core: 1,
            nic: None,
            online: vec![0, 1],
            isolated: vec![1],
            cmdline_extra: vec![],
        };
        let running = tree(Some("1\n"), None);
        let s = plan(&Host::with_root(running.path()), &t, &[]);
        assert_eq!(s.changes.len(), 1, "{s:?}");
        let unmerged = tree(Some("2\n"), None);
        assert!(
            plan(&Host::with_root(unmerged.path()), &t, &[])
                .changes
                .is_empty()
        );
    }
}

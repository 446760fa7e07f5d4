//! `rmp-eval snapshot OUT`: copies exactly the files the checks read (for every online CPU as the RT core and
//! every network interface) into OUT, a directory or OUT.tar.gz, so that `check --root` on it gives the same
//! verdicts on another machine. Links on the way (/sys/class/net/X, device, driver) are kept as links inside the
//! copy; what could not be read is recorded with the reason (see snapshot/copy.rs).
//!
//! Cost stays linear in the machine's size: the checks whose work grows with the machine (every IRQ row, every
//! thread) are traced for a few cores, and the per-IRQ and per-thread files they read are widened to every IRQ
//! and thread; the other checks are traced for every core.

mod copy;
mod tar;

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::checks::{CheckId, Ctx, Section};
use crate::cli::SnapshotArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::{Host, UNREADABLE, normalize};
use crate::machine::irq::PROC_IRQ;
use crate::machine::net::NET;
use crate::machine::{self, PROC};
use crate::output::Output;
use copy::Copier;

/// Checks that read every IRQ row or every thread: traced for a few cores only, then widened.
const HEAVY: [CheckId; 3] = [
    CheckId::UnrelatedIrqs,
    CheckId::RtCoreThreads,
    CheckId::Irqbalance,
];

/// What a snapshot did, for the report line and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub(crate) files: usize,
    pub(crate) unreadable: usize,
    /// Paths the traced checks touched (each counted once per access).
    pub touched: usize,
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit())
}

/// A few cores spread over the machine: first, second, middle, last two.
fn sample(cpus: &[usize]) -> BTreeSet<usize> {
    let n = cpus.len();
    [0, 1, n / 2, n.saturating_sub(2), n.saturating_sub(1)]
        .into_iter()
        .filter_map(|i| cpus.get(i).copied())
        .collect()
}

/// Runs the checks on a traced Host the way `check` could be asked to, and returns the paths they touched and
/// how many accesses that took.
pub(crate) fn accessed_paths(host: &Host) -> Result<(Vec<String>, usize)> {
    let (traced, trace) = host.traced();
    let cpus = machine::online_cpus(&traced)
        .map_err(|e| Error::failed(format!("cannot tell which CPUs are online ({e})")))?;
    let last = *cpus.last().ok_or_else(|| Error::failed("no online CPUs"))?;
    let few = sample(&cpus);
    for &core in &cpus {
        let ctx = Ctx {
            core,
            nic: None,
            pid: None,
            smi_seconds: None,
        };
        // System checks do not depend on the core: run_all below traces them once.
        for c in crate::registry::CHECKS
            .iter()
            .filter(|c| c.section == Section::Core)
        {
            if few.contains(&core) || !HEAVY.contains(&c.id) {
                let _ = (c.evaluate)(&traced, &ctx);
            }
        }
    }
    let ctx = Ctx {
        core: last,
        nic: None,
        pid: None,
        smi_seconds: None,
    };
    let _ = crate::registry::run_all(&traced, &ctx);
    // The report's header reads these files too (which machine this is).
    let _ = crate::checks::machine_id::describe(&traced, &ctx);
    for nic in traced.list(NET).unwrap_or_default() {
        let ctx = Ctx {
            core: last,
            nic: Some(nic),
            pid: None,
            smi_seconds: None,
        };
        for c in crate::registry::CHECKS
            .iter()
            .filter(|c| c.section == Section::Nic)
        {
            let _ = (c.evaluate)(&traced, &ctx);
        }
    }
    Ok((trace.paths(), trace.touched()))
}

/// The per-IRQ and per-thread files read for some IRQs and threads, for all of them: each path under
/// /proc/irq/N or /proc/P/task/T gives its suffix, applied to every IRQ directory and every thread seen.
fn widen(host: &Host, paths: Vec<String>) -> Vec<String> {
    let mut irq_suffixes = BTreeSet::new();
    let mut task_suffixes = BTreeSet::new();
    let mut tasks = BTreeSet::new();
    for p in &paths {
        if let Some(rest) = p.strip_prefix("/proc/irq/") {
            let (n, suffix) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if digits(n) && !suffix.is_empty() {
                irq_suffixes.insert(suffix.to_string());
            }
        } else if let Some(rest) = p.strip_prefix("/proc/") {
            let mut it = rest.splitn(4, '/');
            if let (Some(pid), Some("task"), Some(tid)) = (it.next(), it.next(), it.next())
                && digits(pid)
                && digits(tid)
            {
                tasks.insert((pid.to_string(), tid.to_string()));
                if let Some(s) = it.next() {
                    task_suffixes.insert(format!("/{s}"));
                }
            }
        }
    }
    let irqs: Vec<String> = host
        .list(PROC_IRQ)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| digits(n))
        .collect();
    let mut out: BTreeSet<String> = paths.into_iter().collect();
    for n in &irqs {
        for s in &irq_suffixes {
            out.insert(format!("{PROC_IRQ}/{n}{s}"));
        }
    }
    for (pid, tid) in &tasks {
        for s in &task_suffixes {
            out.insert(format!("{PROC}/{pid}/task/{tid}{s}"));
        }
    }
    out.into_iter().collect()
}

/// What the tree records of the paths it lacks (host::recorded reads it back).
#[derive(serde::Serialize)]
struct Manifest<'a> {
    absent: &'a std::collections::BTreeSet<String>,
    rmp_eval_version: &'static str,
    unreadable: &'a std::collections::BTreeMap<String, crate::host::Failure>,
}

/// Copies what the checks read from `src` into the directory `out` (created; must be empty if it exists).
pub fn snapshot_into(src: &Host, out: &Path) -> Result<Stats> {
    let (paths, touched) = accessed_paths(src)?;
    let paths = widen(src, paths);
    let failed = |what: &str, e: std::io::Error| Error::failed(format!("snapshot: {what}: {e}"));
    fs::create_dir_all(out).map_err(|e| failed("output directory", e))?;
    let mut c = Copier::new(src, out, &paths);
    for p in &paths {
        let p = normalize(p);
        if p == UNREADABLE {
            continue;
        }
        c.copy(&p).map_err(|e| failed(&format!("copying {p}"), e))?;
    }
    let facts_path = machine::facts::SNAPSHOT_FACTS;
    if let Some(b) = machine::facts::snapshot_facts(src) {
        c.put(facts_path, &b).map_err(|e| failed("facts", e))?;
    }
    let stats = Stats {
        files: c.copied,
        unreadable: c.unreadable.len(),
        touched,
    };
    let manifest = Manifest {
        absent: &c.absent,
        rmp_eval_version: env!("CARGO_PKG_VERSION"),
        unreadable: &c.unreadable,
    };
    let manifest = serde_json::to_string(&manifest).map_err(|e| Error::failed(e.to_string()))?;
    c.put(UNREADABLE, manifest.as_bytes())
        .map_err(|e| failed("recording unreadable files", e))?;
    Ok(stats)
}

pub(crate) fn execute(
    host: &Host,
    _out: Output,
    w: &mut dyn Write,
    args: &SnapshotArgs,
) -> Result<Outcome> {
    let out = &args.out;
    let name = out.to_string_lossy();
    let tarball = name.ends_with(".tar.gz") || name.ends_with(".tgz");
    let shown = crate::parse::text::sanitize(&name, 200);
    let dir: PathBuf = if tarball {
        if fs::symlink_metadata(out).is_ok() {
            return Err(Error::usage(format!("snapshot: {shown} exists")));
        }
        tar::private_dir(out)
            .map_err(|e| Error::failed(format!("snapshot: temporary directory: {e}")))?
    } else {
        if fs::symlink_metadata(out).is_ok()
            && fs::read_dir(out)
                .map(|mut d| d.next().is_some())
                .unwrap_or(true)
        {
            return Err(Error::usage(format!(
                "snapshot: {shown} exists and is not an empty directory"
            )));
        }
        fs::create_dir_all(out).map_err(|e| Error::failed(format!("snapshot: {shown}: {e}")))?;
        out.clone()
    };
    let result = snapshot_into(host, &dir).and_then(|n| {
        if tarball {
            tar::write(&dir, out)
                .map_err(|e| Error::failed(format!("snapshot: writing {shown}: {e}")))?;
        }
        Ok(n)
    });
    if tarball {
        let _ = fs::remove_dir_all(&dir);
    }
    let s = result?;
    let unread = if s.unreadable > 0 {
        format!(" ({} unreadable, recorded with the reason)", s.unreadable)
    } else {
        String::new()
    };
    crate::outln!(
        w,
        "snapshot: {} files{unread} in {shown}; run `rmp-eval --root {shown} check`",
        s.files
    );
    Ok(Outcome::Good)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_spreads_over_the_machine() {
        assert_eq!(sample(&[0, 1]), BTreeSet::from([0, 1]));
        let big: Vec<usize> = (0..1024).collect();
        assert_eq!(sample(&big), BTreeSet::from([0, 1, 512, 1022, 1023]));
    }

    #[test]
    fn widen_applies_suffixes_to_every_irq_and_thread() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        for n in ["1", "2", "default_smp_affinity"] {
            h.write_atomic(&format!("/proc/irq/{n}/x"), b"", None)
                .unwrap();
        }
        let w = widen(
            &h,
            vec![
                "/proc/irq/1/effective_affinity_list".into(),
                "/proc/7/task/7/stat".into(),
                "/proc/7/task/8/stat".into(),
                "/proc/7/task/8/status".into(),
            ],
        );
        for p in [
            "/proc/irq/2/effective_affinity_list",
            "/proc/7/task/7/status",
        ] {
            assert!(w.contains(&p.to_string()), "{p} missing from {w:?}");
        }
        assert!(!w.iter().any(|p| p.contains("default_smp_affinity/")));
    }

    #[test]
    fn processes_started_after_the_checks_are_not_in_the_copy() {
        let src = tempfile::tempdir().unwrap();
        let h = Host::with_root(src.path());
        for p in ["/proc/7/comm", "/proc/7/task/7/stat", "/proc/7/task/9/stat"] {
            h.write_atomic(p, b"x\n", None).unwrap();
        }
        // What the checks read; PID 8 and thread 9 start afterwards, directories with nothing captured.
        let wanted: Vec<String> = [
            "/proc",
            "/proc/7/comm",
            "/proc/7/task",
            "/proc/7/task/7/stat",
        ]
        .map(String::from)
        .to_vec();
        h.write_atomic("/proc/8/comm", b"new\n", None).unwrap();
        let out = tempfile::tempdir().unwrap();
        let mut c = Copier::new(&h, out.path(), &wanted);
        for p in &wanted {
            c.copy(p).unwrap();
        }
        let copy = Host::with_root(out.path());
        assert_eq!(copy.list("/proc").unwrap(), vec!["7".to_string()]);
        assert_eq!(copy.list("/proc/7/task").unwrap(), vec!["7".to_string()]);
    }
}

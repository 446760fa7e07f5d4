//! Planners of the sysctl step and the helpers every runtime planner uses (the tunables with a module of their
//! own: crate::tunable; the interrupt steps: irq.rs).
//! Each reads what is there and proposes only the changes that differ; nothing is written here.

use super::kind::file::FileChange;
use super::kind::value::ValueChange;
use super::{Change, Step, StepId, ValueKind};
use crate::checks::knob::{SYSCTLS, Want};
use crate::host::Host;

pub(crate) const SYSCTL_FILE: &str = "/etc/sysctl.d/99-rmp-eval.conf";

/// What the runtime planners work for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub core: usize,
    pub nic: Option<String>,
    pub online: Vec<usize>,
}

impl Target {
    /// The width of the machine's CPU masks.
    pub(crate) fn nbits(&self) -> usize {
        self.online.last().map_or(1, |m| m + 1)
    }
    pub(crate) fn housekeeping(&self) -> Vec<usize> {
        self.online
            .iter()
            .copied()
            .filter(|&c| c != self.core)
            .collect()
    }
}

pub(crate) fn step(id: StepId, title: &str, why: &str) -> Step {
    Step {
        id,
        title: title.into(),
        why: why.into(),
        changes: vec![],
        notes: vec![],
    }
}

/// Adds a value change when the present value differs; a value that cannot be read becomes a note.
pub(crate) fn value(
    s: &mut Step,
    host: &Host,
    path: &str,
    want: &str,
    kind: ValueKind,
    refusable: bool,
) {
    match host.read(path) {
        Ok(now) if kind.same(&now, want) => {}
        Ok(now) => s.changes.push(Change::Value(ValueChange {
            path: path.into(),
            before: kind.normal(&now),
            after: want.into(),
            kind,
            refusable,
            label: None,
        })),
        Err(e) => s.note(format!("{path}: {}", e.reason())),
    }
}

pub(super) fn file(s: &mut Step, host: &Host, path: &str, want: String) {
    let before = host.read_bytes(path).ok();
    if before.as_deref() != Some(want.as_bytes()) {
        s.changes.push(Change::File(FileChange::new(
            path,
            before,
            want.into_bytes(),
            false,
        )));
    }
}

/// The settings whose checks failed (with --only and none failing: those not yet as wanted), merged with the
/// keys an earlier fix wrote to the same file.
pub(crate) fn sysctl(host: &Host, t: &Target, failed: &[&str]) -> Step {
    let mut s = step(
        StepId::Sysctl,
        "Kernel settings (sysctl)",
        "RT throttling stops the RT thread for 50 ms each second; timer migration, vmstat and watchdogs put \
         work on the RT core",
    );
    let any = SYSCTLS.iter().any(|k| failed.contains(&k.check));
    let mut lines: Vec<(String, String)> = host
        .read(SYSCTL_FILE)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    for knob in SYSCTLS {
        let (check, key) = (&knob.check, knob.key);
        let path = knob.path();
        let Ok(now) = host.read(&path) else { continue };
        let want = knob.target(&t.housekeeping());
        let kind = match knob.want {
            Want::NotOnCore => ValueKind::CpuList,
            Want::Equals(_) | Want::AtLeast(_) => ValueKind::Exact,
        };
        // A failing check's key; with --only and no failing check, the keys not yet as wanted; and the keys an
        // earlier fix put in the file. Nothing else, so that a second fix changes nothing.
        let in_file = lines.iter().any(|(k, _)| k == key);
        let as_wanted = knob.satisfied(&now, t.core) == Some(true);
        let wanted = failed.contains(check) || (!any && !as_wanted) || in_file;
        if !wanted {
            continue;
        }
        match lines.iter_mut().find(|(k, _)| k == key) {
            Some(l) => l.1 = want.clone(),
            None => lines.push((key.to_string(), want.clone())),
        }
        value(&mut s, host, &path, &want, kind, false);
    }
    let mut conf = String::from("# Written by `rmp-eval fix`; `rmp-eval rollback` removes it.\n");
    for (k, v) in &lines {
        conf.push_str(&format!("{k} = {v}\n"));
    }
    file(&mut s, host, SYSCTL_FILE, conf);
    // The file first, so that a value the kernel refuses is reported after the persistent part is in place.
    s.changes.sort_by_key(|c| !matches!(c, Change::File(_)));
    s
}

//! Results under /var/lib/rmp-eval/results/ (through Host, so under --root when given), named
//! `<UTC yyyymmddThhmmssZ>-<label>.json`; a second result in the same second gets `-<label>-2.json`.
//! `compare` names them "last" (newest of any label), "before", "after" (newest of that label), or by path.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::result::RunResult;

pub const RESULTS_DIR: &str = "/var/lib/rmp-eval/results";
pub(crate) const LABELS: [&str; 3] = ["run", "before", "after"];
/// Where results go instead, when set: an absolute directory outside any --root (a CI job collecting results, and
/// the test suite, which must not write into the machine's own results/).
pub const RESULTS_ENV: &str = "RMP_EVAL_RESULTS_DIR";

/// The host and directory results live in: `RESULTS_DIR` through `host`, or the directory `RESULTS_ENV` names.
fn place(host: &Host) -> (Host, &'static str) {
    match std::env::var_os(RESULTS_ENV) {
        Some(dir) if Path::new(&dir).is_absolute() => (Host::with_root(dir), "/"),
        _ => (host.clone(), RESULTS_DIR),
    }
}

fn join(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

pub(crate) use crate::wallclock::{rfc3339, stamp, unix_now};

/// (stamp, label, sequence) of a result file name, or None for any other file.
pub(crate) fn parse_name(name: &str) -> Option<(&str, &str, u32)> {
    let base = name.strip_suffix(".json")?;
    let (ts, rest) = base.split_once('-')?;
    let ok_ts = ts.len() == 16
        && ts.as_bytes()[8] == b'T'
        && ts.ends_with('Z')
        && ts
            .bytes()
            .enumerate()
            .all(|(i, b)| i == 8 || i == 15 || b.is_ascii_digit());
    if !ok_ts {
        return None;
    }
    let (label, seq) = match rest.rsplit_once('-') {
        Some((l, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            (l, n.parse().ok()?)
        }
        _ => (rest, 1),
    };
    LABELS.contains(&label).then_some((ts, label, seq))
}

/// A result file under results/, named once (by the run's label and start) and written as often as needed: the
/// checkpoints of a long run and its final result go to the same file, each write atomic.
pub(crate) struct Slot {
    host: Host,
    abs: String,
}

impl Slot {
    /// The first free name for `label` at `unix`.
    pub(crate) fn new(host: &Host, label: &str, unix: u64) -> Result<Slot> {
        let (host, dir) = place(host);
        let ts = stamp(unix);
        for seq in 1..1000u32 {
            let name = if seq == 1 {
                format!("{ts}-{label}.json")
            } else {
                format!("{ts}-{label}-{seq}.json")
            };
            let abs = join(dir, &name);
            if !host.exists(&abs) {
                return Ok(Slot { host, abs });
            }
        }
        Err(Error::failed(format!(
            "too many results named {ts}-{label} in {}",
            host.path(dir).display()
        )))
    }

    /// A `--trace` result's raw trace, written beside the result as `<name>.trace.txt`; `r` then names the file.
    pub(crate) fn attach_trace(&self, r: &mut RunResult) -> Result<()> {
        if let Some(t) = r.trace.as_mut().filter(|t| !t.raw.is_empty()) {
            let side = format!("{}.trace.txt", self.abs.trim_end_matches(".json"));
            self.host.write_atomic(&side, t.raw.as_bytes(), None)?;
            t.file = Some(self.host.path(&side).display().to_string());
        }
        Ok(())
    }

    /// Writes `r` (replacing what was there); returns the real path.
    pub(crate) fn write(&self, r: &RunResult) -> Result<PathBuf> {
        let json = serde_json::to_vec_pretty(r)
            .map_err(|e| Error::failed(format!("encoding the result: {e}")))?;
        self.host.write_atomic(&self.abs, &json, None)?;
        Ok(self.host.path(&self.abs))
    }
}

/// Saves `r` under results/ with its label; returns the real path written.
#[cfg(test)]
pub(crate) fn save(host: &Host, r: &RunResult, unix: u64) -> Result<PathBuf> {
    Slot::new(host, &r.label, unix)?.write(r)
}

/// The newest saved result with this label ("last": of any label).
pub(crate) fn newest(host: &Host, which: &str) -> Result<Option<PathBuf>> {
    let (host, dir) = place(host);
    let names = match host.list(dir) {
        Ok(n) => n,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    // Within one second the name cannot order two results: the modification time does.
    let mtime = |n: &str| {
        std::fs::metadata(host.path(&join(dir, n)))
            .and_then(|m| m.modified())
            .ok()
    };
    let best = names
        .iter()
        .filter_map(|n| parse_name(n).map(|(ts, label, seq)| (ts, label, seq, n)))
        .filter(|(_, label, _, _)| which == "last" || *label == which)
        .max_by_key(|(ts, _, seq, n)| (*ts, mtime(n), *seq));
    Ok(best.map(|(_, _, _, n)| host.path(&join(dir, n))))
}

/// A result named on the command line: "last", "before", "after", or a file path (taken as given, not under --root).
pub(crate) fn resolve(host: &Host, arg: &str) -> Result<PathBuf> {
    if arg == "last" || LABELS.contains(&arg) {
        return newest(host, arg)?.ok_or_else(|| {
            let (host, dir) = place(host);
            Error::usage(format!(
                "no saved result for '{arg}' in {}",
                host.path(dir).display()
            ))
        });
    }
    let p = Path::new(arg);
    if p.is_file() {
        Ok(p.to_path_buf())
    } else {
        Err(Error::usage(format!(
            "'{arg}' is not a result file (nor last, before, after)"
        )))
    }
}

/// Result files larger than this are refused before reading (a run's result is kilobytes; histograms make
/// it a few megabytes).
pub(crate) const MAX_RESULT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a saved result; a file that is not one is a one-line usage error. Results are mailed around: the
/// file is opened without blocking (a FIFO is refused, not waited on) and its size is bounded.
pub fn load(path: &Path) -> Result<RunResult> {
    let name = crate::parse::text::sanitize(&path.display().to_string(), 200);
    let bytes = read_bounded(path)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::usage(format!(
            "{name}: not an rmp-eval result ({})",
            crate::parse::text::sanitize(&e.to_string(), 120)
        ))
    })
}

/// A result file's bytes: opened without blocking (a FIFO is refused, not waited on), a regular file, bounded.
pub(crate) fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let name = crate::parse::text::sanitize(&path.display().to_string(), 200);
    let err = |e: String| Error::usage(format!("{name}: {e}"));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| err(e.to_string()))?;
    let m = f.metadata().map_err(|e| err(e.to_string()))?;
    if !m.is_file() {
        return Err(err("not a regular file".into()));
    }
    if m.len() > MAX_RESULT_BYTES {
        return Err(err(format!("larger than {MAX_RESULT_BYTES} bytes")));
    }
    let mut bytes = Vec::with_capacity(m.len() as usize);
    f.take(MAX_RESULT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(e.to_string()))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests;

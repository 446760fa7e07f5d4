//! Results under /var/lib/rmp-eval/results/ (through Host, so under --root when given), named
//! `<UTC yyyymmddThhmmssZ>-<label>.json`; a second result in the same second gets `-<label>-2.json`.
//! `compare` names them "last" (newest of any label), "before", "after" (newest of that label), or by path.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::result::RunResult;

pub const RESULTS_DIR: &str = "/var/lib/rmp-eval/results";
pub const LABELS: [&str; 3] = ["run", "before", "after"];

/// (year, month, day, hour, minute, second) in UTC of a Unix time.
pub fn utc(secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        (rem / 60 % 60) as u32,
        (rem % 60) as u32,
    )
}

pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// 2026-12-02T10:39:39Z
pub fn rfc3339(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = utc(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// 20261202T103939Z
pub fn stamp(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = utc(secs);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// (stamp, label, sequence) of a result file name, or None for any other file.
pub fn parse_name(name: &str) -> Option<(&str, &str, u32)> {
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

/// Saves `r` under results/ with its label; returns the real path written.
pub fn save(host: &Host, r: &RunResult, unix: u64) -> Result<PathBuf> {
    let json = serde_json::to_vec_pretty(r)
        .map_err(|e| Error::failed(format!("encoding the result: {e}")))?;
    let ts = stamp(unix);
    for seq in 1..1000u32 {
        let name = if seq == 1 {
            format!("{ts}-{}.json", r.label)
        } else {
            format!("{ts}-{}-{seq}.json", r.label)
        };
        let abs = format!("{RESULTS_DIR}/{name}");
        if host.exists(&abs) {
            continue;
        }
        host.write_atomic(&abs, &json, None)?;
        return Ok(host.path(&abs));
    }
    Err(Error::failed(format!(
        "too many results named {ts}-{} in {RESULTS_DIR}",
        r.label
    )))
}

/// The newest saved result with this label ("last": of any label).
pub fn newest(host: &Host, which: &str) -> Result<Option<PathBuf>> {
    let names = match host.list(RESULTS_DIR) {
        Ok(n) => n,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    // Within one second the name cannot order two results: the modification time does.
    let mtime = |n: &str| {
        std::fs::metadata(host.path(&format!("{RESULTS_DIR}/{n}")))
            .and_then(|m| m.modified())
            .ok()
    };
    let best = names
        .iter()
        .filter_map(|n| parse_name(n).map(|(ts, label, seq)| (ts, label, seq, n)))
        .filter(|(_, label, _, _)| which == "last" || *label == which)
        .max_by_key(|(ts, _, seq, n)| (*ts, mtime(n), *seq));
    Ok(best.map(|(_, _, _, n)| host.path(&format!("{RESULTS_DIR}/{n}"))))
}

/// A result named on the command line: "last", "before", "after", or a file path (taken as given, not under --root).
pub fn resolve(host: &Host, arg: &str) -> Result<PathBuf> {
    if arg == "last" || LABELS.contains(&arg) {
        return newest(host, arg)?.ok_or_else(|| {
            Error::usage(format!(
                "no saved result for '{arg}' in {}",
                host.path(RESULTS_DIR).display()
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

/// Reads a saved result; a file that is not one is a one-line usage error.
pub fn load(path: &Path) -> Result<RunResult> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::usage(format!("{}: not an rmp-eval result ({e})", path.display())))
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;

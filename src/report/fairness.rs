//! Whether two runs can be compared fairly (issue 16 item 12). A longer run meets more of the rare events that make
//! the maximum, and a run under load meets more of them than one without: "better" between a 10 s run and a 3 s
//! run, or between an idle run and a loaded one, says more about the runs than about the machine. Pure: two
//! results in, the reasons not to trust the comparison out.

use crate::measure::result::RunResult;

/// Lengths (seconds or cycles) that differ by this factor or more make the comparison unfair.
pub(crate) const LENGTH_RATIO: f64 = 2.0;

fn cycles(r: &RunResult) -> u64 {
    r.series.first().map_or(0, |s| s.count)
}

fn ratio(a: f64, b: f64) -> f64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    if lo <= 0.0 { f64::INFINITY } else { hi / lo }
}

fn load(r: &RunResult) -> String {
    match &r.load {
        None => "no load".into(),
        Some(l) if l.kinds.is_empty() => "no load".into(),
        Some(l) => {
            let kinds: Vec<&str> = l.kinds.iter().map(|k| k.name()).collect();
            format!("--load {}", kinds.join(","))
        }
    }
}

/// A result's SMBIOS identity, when it recorded one that names something.
fn firmware(r: &RunResult) -> Option<&crate::checks::firmware_id::Firmware> {
    r.identity.as_ref()?.firmware.as_ref()
}

/// Two results from different boards, or from one board under different firmware: the hardware changed, not
/// (only) the tuning. Said only when both results know what they ran on.
fn machines(before: &RunResult, after: &RunResult) -> Vec<String> {
    let (Some(b), Some(a)) = (firmware(before), firmware(after)) else {
        return Vec::new();
    };
    let shown = |s: String| crate::parse::text::sanitize(&s, 200);
    let (bm, am) = (b.machine_key(), a.machine_key());
    if !bm.is_empty() && !am.is_empty() && bm != am {
        return vec![format!(
            "the runs come from different machines ({} before, {} after): the hardware differs, not only the \
             tuning",
            shown(b.machine_line()),
            shown(a.machine_line())
        )];
    }
    let (bb, ab) = (b.bios_key(), a.bios_key());
    if !bb.is_empty() && !ab.is_empty() && bb != ab {
        return vec![format!(
            "the machine's firmware changed between the runs (BIOS {} before, {} after): a BIOS update or \
             setting can move latency by itself",
            shown(bb),
            shown(ab)
        )];
    }
    Vec::new()
}

/// Why the comparison of `before` and `after` may not be fair; empty when the runs are alike.
pub(crate) fn warnings(before: &RunResult, after: &RunResult) -> Vec<String> {
    let mut w = Vec::new();
    let (bs, a_s) = (before.duration_s, after.duration_s);
    let (bc, ac) = (cycles(before), cycles(after));
    if ratio(bs, a_s) >= LENGTH_RATIO || ratio(bc as f64, ac as f64) >= LENGTH_RATIO {
        w.push(format!(
            "the runs differ in length ({:.0} s / {bc} cycles before, {:.0} s / {ac} cycles after): a longer run \
             meets more rare delays, so its maximum is not comparable — measure both with the same --duration",
            bs, a_s
        ));
    }
    let (bl, al) = (load(before), load(after));
    if bl != al {
        w.push(format!(
            "the runs were measured under different loads ({bl} before, {al} after): measure both under the \
             same load"
        ));
    }
    w.extend(machines(before, after));
    if before.period_us != after.period_us {
        w.push(format!(
            "the runs have different periods ({} us before, {} us after)",
            before.period_us, after.period_us
        ));
    }
    w
}

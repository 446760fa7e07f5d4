//! Whether two runs can be compared fairly. A longer run meets more of the rare events that make
//! the maximum, and a run under load meets more of them than one without: "better" between a 10 s run and a 3 s
//! run, or between an idle run and a loaded one, says more about the runs than about the machine. Pure: two
//! results in, the reasons not to trust the comparison out.

use crate::measure::result::RunResult;

/// Lengths (seconds or cycles) that differ by this factor or more make the comparison unfair.
pub(crate) const LENGTH_RATIO: f64 = 2.0;

fn cycles(r: &RunResult) -> u64 {
    r.series.first().map_or(0, |s| s.count)
}

/// How many times longer the longer of two lengths is; two equal lengths (two empty runs too) are alike.
fn ratio(a: f64, b: f64) -> f64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    if lo == hi {
        1.0
    } else if lo <= 0.0 {
        f64::INFINITY
    } else {
        hi / lo
    }
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
    if let (Some(b), Some(a)) = (&before.rtt, &after.rtt)
        && b.path != a.path
    {
        w.push(format!(
            "the runs took different NIC paths ({} before, {} after): AF_PACKET's round trip is timed between the \
             kernel's own stamps, AF_XDP's from the sender's kick to the receiver reading its ring (both wakeups \
             included), so the RTT rows differ by what is timed as well as by the path; the sender and receiver \
             rows compare alike",
            b.path, a.path
        ));
    }
    if let (Some(b), Some(a)) = (&before.rtt, &after.rtt) {
        let added = |r: &crate::measure::result::RttSummary| {
            r.arrival.as_ref().map_or(0, |x| x.frame_bytes_added)
        };
        w.extend(frame_growth(added(b), added(a)));
    }
    let threaded = |r: &RunResult| r.series.iter().any(|s| s.thread.is_some());
    if threaded(before) || threaded(after) {
        w.extend(threads(before, after));
    } else if before.period_us != after.period_us {
        w.push(format!(
            "the runs have different periods ({} us before, {} us after)",
            before.period_us, after.period_us
        ));
    }
    w
}

/// EtherCAT frames with and without the arrival datagrams (`before`/`after`: the bytes they added). The RTT rows
/// stay comparable within what the bytes take on a wire: 80 ns a byte at 100 Mbit/s, 8 at 1 Gbit/s, once each
/// way for every hop that stores and forwards the frame (a NIC, a switch; an ESC forwards on the fly); on veth or
/// the kernel's path, copies of a few bytes more. The sender's row is not touched.
fn frame_growth(before: u32, after: u32) -> Option<String> {
    if before == after {
        return None;
    }
    let d = before.abs_diff(after);
    Some(format!(
        "the frames differ by {d} bytes ({before} added before, {after} after: the arrival datagrams,          --no-arrival leaves them out): the RTT rows compare within {:.1} us a store-and-forward hop each way at          100 Mbit/s ({:.2} us at 1 Gbit/s); the sender row compares alike",
        f64::from(d) * 0.08,
        f64::from(d) * 0.008
    ))
}

/// Runs with several threads (`run --thread`, `--profile`) compare thread by thread, by name: a thread only one
/// run has is not compared at all, and a thread whose period or priority changed measured something else.
fn threads(before: &RunResult, after: &RunResult) -> Vec<String> {
    use std::collections::HashMap;
    let by_name = |r: &'_ RunResult| -> HashMap<String, (f64, Option<u8>)> {
        r.series
            .iter()
            .map(|s| {
                (
                    s.label.clone(),
                    (r.period_of(s), s.thread.map(|t| t.priority)),
                )
            })
            .collect()
    };
    let (b, a) = (by_name(before), by_name(after));
    let listed = |mut v: Vec<String>| {
        v.sort();
        let more = v.len().saturating_sub(5);
        let mut shown: Vec<String> = v
            .iter()
            .take(5)
            .map(|l| super::compare_input::shown_label(l))
            .collect();
        if more > 0 {
            shown.push(format!("{more} more"));
        }
        shown.join(", ")
    };
    let mut w = Vec::new();
    let only = |x: &HashMap<String, (f64, Option<u8>)>, y: &HashMap<String, (f64, Option<u8>)>| {
        x.keys()
            .filter(|k| !y.contains_key(*k))
            .cloned()
            .collect::<Vec<String>>()
    };
    let (ob, oa) = (only(&b, &a), only(&a, &b));
    if !ob.is_empty() || !oa.is_empty() {
        let side = |v: Vec<String>| {
            if v.is_empty() {
                "none".to_string()
            } else {
                listed(v)
            }
        };
        w.push(format!(
            "the runs measured different threads (only before: {}; only after: {}): threads compare by name, \
             those are left out",
            side(ob),
            side(oa)
        ));
    }
    let changed: Vec<String> = b
        .iter()
        .filter(|(k, v)| a.get(*k).is_some_and(|x| x != *v))
        .map(|(k, _)| k.clone())
        .collect();
    if !changed.is_empty() {
        w.push(format!(
            "a thread's period or priority differs between the runs ({}): it measured something else",
            listed(changed)
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    #[test]
    fn frames_grown_by_the_arrival_datagrams_say_by_how_much_the_rtt_may_differ() {
        assert_eq!(super::frame_growth(36, 36), None);
        let w = super::frame_growth(0, 36).unwrap();
        assert!(
            w.contains("differ by 36 bytes") && w.contains("within 2.9 us"),
            "{w}"
        );
    }
}

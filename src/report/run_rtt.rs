//! The round-trip section of a NIC run's report: counts, what went wrong (frames not sent, late replies, working
//! counters), the 1 µs histogram and the NRTM statistics line; and the -v timestamp rows.

use crate::measure::result::{RttSummary, Timestamps};
use crate::report::table::us;

/// The round-trip section: counts, the NRTM min/avg/max line, percentiles and the 1 µs histogram.
pub(crate) fn render_rtt(r: &RttSummary) -> String {
    let ts = match r.timestamps {
        Timestamps::Hardware => "hardware",
        Timestamps::Software => "software",
    };
    let mut s = format!(
        "Round trips: {} measured, {} lost, {} late, {} unmatched, {} duplicate(s); timestamps: {ts}",
        r.count, r.lost, r.late, r.unmatched, r.duplicates
    );
    if let Some(w) = r.wkc {
        let all: u64 = r.checks.wkc_seen.values().sum();
        match r.checks.wkc_seen.get(&w) {
            Some(&n) if n < all => {
                s.push_str(&format!("; working counter {w} in {n} of {all} replies"))
            }
            _ => s.push_str(&format!("; working counter {w}")),
        }
    }
    s.push('\n');
    s.push_str(&render_checks(r));
    if let Some(q) = &r.queue {
        s.push_str(&render_queue(q));
    }
    if let Some(x) = &r.xdp {
        s.push_str(&render_xdp(x));
    }
    if let Some(a) = &r.arrival {
        s.push_str(&a.line());
        s.push('\n');
    }
    const MAX_BINS: usize = 40;
    let bins = r.bins_us();
    let shown = bins.iter().filter(|b| b.1 > 0).count();
    for (lo, n) in bins
        .iter()
        .filter(|b| shown <= MAX_BINS || b.1 > 0)
        .take(MAX_BINS)
    {
        s.push_str(&format!("| {lo:>5} - {:>5} us: | {n:>9} |\n", lo + 1));
    }
    if shown > MAX_BINS {
        s.push_str(&format!(
            "({} more non-empty bins in the JSON)\n",
            shown - MAX_BINS
        ));
    }
    s.push_str(&format!(
        "Statistics based on {} RTT measurements:\nmin={}us, avg={}us, max={}us; p50={}us, p99={}us, p99.9={}us, p99.99={}us\n",
        r.count,
        us(r.min_us),
        us(r.avg_us),
        us(r.max_us),
        us(r.p50_us),
        us(r.p99_us),
        us(r.p999_us),
        us(r.p9999_us)
    ));
    s
}

/// --path af_xdp: what the path got, and why not the faster choice; the round trips are timed in user space.
fn render_xdp(x: &crate::measure::result::XdpReport) -> String {
    let copy = if x.zero_copy {
        "zero-copy"
    } else {
        "copy mode"
    };
    let mut s = format!(
        "Path: AF_XDP on queue {}, XDP {}, {copy}; round trips timed in user space at both ends\n",
        x.queue, x.xdp_mode
    );
    for (what, why) in [("native XDP", &x.why_generic), ("zero-copy", &x.why_copy)] {
        if let Some(why) = why {
            s.push_str(&format!("  {what} refused: {why}\n"));
        }
    }
    s
}

/// --txq/--rxq: where the driver's counters say the frames went, or why they could not say.
fn render_queue(q: &crate::measure::nic::queue::QueueReport) -> String {
    let mut s = String::new();
    for (dir, want, got) in [("transmit", q.txq, &q.tx), ("receive", q.rxq, &q.rx)] {
        let (Some(n), Some(c)) = (want, got) else {
            continue;
        };
        let verdict = if c.verified {
            "verified"
        } else {
            "NOT on that queue"
        };
        s.push_str(&format!(
            "{dir} queue {n}: {} frame(s) there, {} on other queues ({}): {verdict}\n",
            c.on_queue, c.elsewhere, c.counter
        ));
    }
    for note in &q.notes {
        s.push_str(&format!("queue: {note}\n"));
    }
    s
}

/// Frames not sent, late replies and working counters, each said only when it has something to say.
fn render_checks(r: &RttSummary) -> String {
    let c = &r.checks;
    let mut s = String::new();
    let ring_full = r.xdp.as_ref().map_or(0, |x| x.ring_full);
    let refused = c.not_sent.saturating_sub(ring_full);
    if refused > 0 {
        s.push_str(&format!(
            "Not sent: {refused} frame(s) the kernel refused (not on the wire, not counted as lost)\n"
        ));
    }
    if ring_full > 0 {
        s.push_str(&format!(
            "Not sent: {ring_full} frame(s) while the AF_XDP socket's own transmit ring was full (its frames \
             waiting for the kernel; not counted as lost)\n"
        ));
    }
    if let Some(x) = r.xdp.as_ref().filter(|x| x.sent_late > 0) {
        s.push_str(&format!(
            "Sent late: {} frame(s) waited on the AF_XDP transmit ring for a kick the kernel took (their replies \
             count as late)\n",
            x.sent_late
        ));
    }
    if r.late > 0 {
        s.push_str(&format!(
            "Late: {} reply(ies) after the {} us budget: for a MainDevice each is a missed cycle\n",
            r.late, c.budget_us
        ));
    }
    if let Some(e) = c.expected_wkc {
        let seen: Vec<String> = c
            .wkc_seen
            .iter()
            .map(|(w, n)| format!("{w}: {n}"))
            .collect();
        let from = if c.preflight_wkc.is_empty() {
            String::new()
        } else {
            let p: Vec<String> = c.preflight_wkc.iter().map(u16::to_string).collect();
            format!(" (learned from the preflight: {})", p.join(", "))
        };
        s.push_str(&format!(
            "Working counter: expected {e}{from}, {} error(s); seen {}",
            c.wkc_errors,
            seen.join(", ")
        ));
        if let Some(id) = c.esc {
            s.push_str(&format!(
                "; ESC type {:#04x} revision {:#04x} at 0x0000",
                id.kind, id.revision
            ));
        }
        s.push('\n');
    }
    s
}

/// The -v rows: which timestamps the round trips used, "not supported" where the NIC has none.
pub(crate) fn render_stamps(r: &RttSummary, nic: &str) -> String {
    let Some(s) = &r.stamps else {
        return String::new();
    };
    let hw = match (&s.why_software, s.hardware_supported) {
        (_, true) => format!("{} round trips", s.hardware),
        (Some(why), false) => format!("not used: {why}"),
        (None, false) => format!("not supported by {nic}"),
    };
    let mut t = format!(
        "HW timestamps: {hw}\nSW timestamps: {} round trips\n",
        s.software
    );
    if s.send_time > 0 {
        t.push_str(&format!(
            "Without a TX timestamp (send() time used): {} round trips\n",
            s.send_time
        ));
    }
    t
}

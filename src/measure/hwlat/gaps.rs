//! What `run --hwlat` keeps of the detector's lines (the `hwlat` key of a run's JSON), and the SMI counters read
//! beside it, stamped with CLOCK_REALTIME as the detector's `ts` is.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::measure::cyclic::series::Bands;
use crate::measure::result::Buckets;
use crate::parse::hwlat::{HwlatLine, Parsed, parse_line};

/// Gaps listed in a result; the bands, the count and the max cover every gap.
pub(crate) const MAX_GAPS: usize = 10_000;
/// SMI intervals kept (only those that held an SMI).
const MAX_SMI_INTERVALS: usize = 100_000;
/// A line longer than this without its newline is not the detector's.
const MAX_PENDING: usize = 64 * 1024;

/// One gap the detector recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Gap {
    pub(crate) seq: u64,
    pub(crate) cpu: usize,
    pub(crate) inner_us: u64,
    pub(crate) outer_us: u64,
    /// CLOCK_REALTIME of the sample as the kernel printed it, "seconds.nanoseconds" (exact: no float).
    pub(crate) ts: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) count: Option<u64>,
    /// Time in NMIs during the sample, µs, and how many (present when the kernel printed them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nmi_total_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nmi_count: Option<u64>,
    /// SMIs the CPU's counter took around the sample (None: not counted, or outside the readings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) smis: Option<u64>,
    #[serde(skip)]
    pub(crate) ts_ns: i128,
}

impl Gap {
    pub(crate) fn us(&self) -> u64 {
        self.inner_us.max(self.outer_us)
    }

    fn of(l: HwlatLine) -> Gap {
        Gap {
            seq: l.seq,
            cpu: l.cpu,
            inner_us: l.inner_us,
            outer_us: l.outer_us,
            ts: format!("{}.{:09}", l.ts_s, l.ts_ns),
            count: l.count,
            nmi_total_us: l.nmi_total_us,
            nmi_count: l.nmi_count,
            smis: None,
            ts_ns: l.ts_ns_total(),
        }
    }
}

/// The `hwlat` key of a run's result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HwlatReport {
    pub(crate) width_us: u64,
    pub(crate) window_us: u64,
    pub(crate) threshold_us: u64,
    /// hwlat_detector/mode as set ("round-robin"); None on kernels without the file.
    pub(crate) mode: Option<String>,
    pub(crate) cpus: Vec<usize>,
    /// The gaps, in the order recorded; the worst MAX_GAPS when there were more (`dropped` the others).
    pub(crate) gaps: Vec<Gap>,
    /// Every gap recorded, listed or not.
    pub(crate) total: u64,
    pub(crate) dropped: u64,
    /// Lines that were not the detector's (never a gap, never a pass).
    pub(crate) unparsed: u64,
    /// The largest gap, µs (0: none).
    pub(crate) max_us: u64,
    /// Gaps per band of the run's band width (max(inner, outer)).
    pub(crate) buckets: Buckets,
    /// SMIs over the run on each of `cpus`; None when not counted (`smi_not_counted` says why).
    pub(crate) smis: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) smi_not_counted: Option<String>,
}

/// A gap ordered by its size, then by arrival, for keeping the worst.
struct Ranked(u64, u64, Gap);

impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ranked {
    // Among equal gaps the earlier is kept.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.0, Reverse(self.1)).cmp(&(o.0, Reverse(o.1)))
    }
}

/// The detector's text as it arrives, cut into lines and counted.
pub(crate) struct Gaps {
    bands: Bands,
    kept: BinaryHeap<Reverse<Ranked>>,
    arrived: u64,
    pending: Vec<u8>,
    pub(crate) report: HwlatReport,
}

impl Gaps {
    pub(crate) fn new(bands: Bands, report: HwlatReport) -> Gaps {
        Gaps {
            bands,
            kept: BinaryHeap::new(),
            arrived: 0,
            pending: Vec::new(),
            report,
        }
    }

    /// Bytes read from the pipe; a line cut by the read waits for its end.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        let Some(end) = self.pending.iter().rposition(|&b| b == b'\n') else {
            if self.pending.len() > MAX_PENDING {
                self.pending.clear();
                self.report.unparsed += 1;
            }
            return;
        };
        let whole: Vec<u8> = self.pending.drain(..=end).collect();
        for line in String::from_utf8_lossy(&whole).lines() {
            self.line(line);
        }
    }

    fn line(&mut self, line: &str) {
        match parse_line(line) {
            Parsed::Gap(l) => self.add(Gap::of(l)),
            Parsed::Comment => {}
            Parsed::Garbage => self.report.unparsed += 1,
        }
    }

    fn add(&mut self, g: Gap) {
        let r = &mut self.report;
        r.total += 1;
        r.max_us = r.max_us.max(g.us());
        let b = &mut r.buckets;
        *[
            &mut b.great,
            &mut b.good,
            &mut b.poor,
            &mut b.bad,
            &mut b.pathetic,
        ][self.bands.classify(g.us().saturating_mul(1000))] += 1;
        self.arrived += 1;
        self.kept.push(Reverse(Ranked(g.us(), self.arrived, g)));
        if self.kept.len() > MAX_GAPS {
            self.kept.pop();
            r.dropped += 1;
        }
    }

    /// The report so far with the gaps listed (no SMIs yet: they are given at the end), for a checkpoint.
    pub(crate) fn so_far(&self) -> HwlatReport {
        let mut kept: Vec<&Ranked> = self.kept.iter().map(|Reverse(r)| r).collect();
        kept.sort_by_key(|r| r.1);
        HwlatReport {
            gaps: kept.into_iter().map(|r| r.2.clone()).collect(),
            ..self.report.clone()
        }
    }

    /// The report with the last line (one the pipe ended without a newline) and the kept gaps in arrival order,
    /// each with the SMIs around it.
    pub(crate) fn finish(mut self, smi: &SmiTimeline) -> HwlatReport {
        let rest = std::mem::take(&mut self.pending);
        self.line(&String::from_utf8_lossy(&rest));
        let mut kept: Vec<Ranked> = self.kept.into_iter().map(|Reverse(r)| r).collect();
        kept.sort_by_key(|r| r.1);
        let width_ns = i128::from(self.report.width_us) * 1000;
        self.report.gaps = kept
            .into_iter()
            .map(|Ranked(_, _, mut g)| {
                g.smis = smi.between(g.cpu, g.ts_ns - width_ns, g.ts_ns + width_ns);
                g
            })
            .collect();
        self.report.smis = smi.total.clone();
        self.report.smi_not_counted = smi.not_counted.clone();
        self.report
    }
}

/// The SMI counters of the detector's CPUs, read every few hundred milliseconds: the intervals that held SMIs.
#[derive(Debug, Default)]
pub(crate) struct SmiTimeline {
    cpus: Vec<usize>,
    last: Option<(i128, Vec<u64>)>,
    first_ns: Option<i128>,
    /// (from, to, SMIs per CPU) of each interval with an SMI on any CPU.
    held: Vec<(i128, i128, Vec<u64>)>,
    total: Option<Vec<u64>>,
    not_counted: Option<String>,
}

impl SmiTimeline {
    pub(crate) fn counting(cpus: Vec<usize>, at_ns: i128, first: Vec<u64>) -> Self {
        SmiTimeline {
            total: Some(vec![0; cpus.len()]),
            cpus,
            last: Some((at_ns, first)),
            first_ns: Some(at_ns),
            ..Default::default()
        }
    }

    pub(crate) fn not_counted(why: String) -> Self {
        SmiTimeline {
            not_counted: Some(why),
            ..Default::default()
        }
    }

    /// The counters stopped being readable: nothing is claimed for the run.
    pub(crate) fn lost(&mut self, why: &str) {
        self.total = None;
        self.not_counted = Some(format!(
            "the counter stopped being readable during the run: {why}"
        ));
    }

    /// A reading taken in `(earliest, latest)` (each CPU's counter by its own thread, at its own moment): its SMIs
    /// go into the interval from the previous reading's earliest moment to this one's latest, which holds them
    /// whatever order the CPUs were read in.
    pub(crate) fn reading(&mut self, (earliest, latest): (i128, i128), now: Vec<u64>) {
        let (Some(total), Some((from, prev))) = (&mut self.total, &self.last) else {
            return;
        };
        let deltas: Vec<u64> = now
            .iter()
            .zip(prev)
            .map(|(n, p)| crate::machine::msr::smi_delta(*p, *n))
            .collect();
        for (t, d) in total.iter_mut().zip(&deltas) {
            *t += d;
        }
        if deltas.iter().any(|&d| d > 0) && self.held.len() < MAX_SMI_INTERVALS {
            self.held.push((*from, latest, deltas));
        }
        self.last = Some((earliest, now));
    }

    /// SMIs on `cpu`'s counter in the intervals that overlap [from, to]; None when not counted or the span lies
    /// outside the readings.
    pub(crate) fn between(&self, cpu: usize, from_ns: i128, to_ns: i128) -> Option<u64> {
        self.total.as_ref()?;
        let i = self.cpus.iter().position(|&c| c == cpu)?;
        let (first, (last, _)) = (self.first_ns?, self.last.as_ref()?);
        if to_ns < first || from_ns > *last {
            return None;
        }
        Some(
            self.held
                .iter()
                .filter(|(a, b, _)| *a <= to_ns && *b >= from_ns)
                .map(|(_, _, d)| d[i])
                .sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, cpu: usize, inner: u64, ts_s: i64) -> String {
        format!(
            "   hwlatd-220     [{cpu:03}] d....  5321.000100: #{seq:<5} inner/outer(us): {inner:4}/0     \
             ts:{ts_s}.500000000 count:1\n"
        )
    }

    fn gaps() -> Gaps {
        Gaps::new(
            Bands::new(1000, None),
            HwlatReport {
                width_us: 500_000,
                cpus: vec![1, 0],
                ..Default::default()
            },
        )
    }

    #[test]
    fn lines_cut_by_the_reads_count_once_in_their_bands() {
        let mut g = gaps();
        let text = [
            line(1, 1, 19, 100),
            line(2, 0, 212, 101),
            "junk\n".into(),
            line(3, 1, 1000, 102),
        ]
        .concat();
        let (a, b) = text.as_bytes().split_at(70);
        g.feed(a);
        g.feed(b);
        let r = g.finish(&SmiTimeline::not_counted("x".into()));
        assert_eq!((r.total, r.max_us, r.unparsed, r.dropped), (3, 1000, 1, 0));
        assert_eq!(r.buckets.as_array(), [1, 1, 0, 0, 1]);
        let seqs: Vec<u64> = r.gaps.iter().map(|x| x.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
        assert_eq!(r.gaps[1].ts, "101.500000000");
        assert_eq!(r.smi_not_counted.as_deref(), Some("x"));
        assert!(r.gaps.iter().all(|x| x.smis.is_none()));
    }

    #[test]
    fn the_last_line_without_newline_is_read_and_the_list_keeps_the_worst() {
        let mut g = gaps();
        for i in 0..(MAX_GAPS as u64 + 5) {
            // Five large gaps among the small ones, one of them last.
            let us = if i % 3000 == 7 || i == MAX_GAPS as u64 + 4 {
                900
            } else {
                11
            };
            g.feed(line(i, 0, us, 100).as_bytes());
        }
        g.feed(line(99_999, 1, 500, 200).trim_end().as_bytes());
        let r = g.finish(&SmiTimeline::not_counted(String::new()));
        assert_eq!(r.total, MAX_GAPS as u64 + 6);
        assert_eq!(r.gaps.len(), MAX_GAPS);
        assert_eq!(r.dropped, 6);
        assert_eq!(r.gaps.iter().filter(|x| x.inner_us == 900).count(), 5);
        assert_eq!(r.gaps.last().unwrap().seq, 99_999);
        // Arrival order, not size order.
        assert!(
            r.gaps
                .windows(2)
                .all(|w| w[0].seq < w[1].seq || w[1].seq == 99_999)
        );
    }

    #[test]
    fn a_gap_gets_the_smis_of_the_readings_around_it() {
        let s = |x: f64| (x * 1e9) as i128;
        let mut t = SmiTimeline::counting(vec![1, 0], s(100.0), vec![5, 7]);
        t.reading((s(100.1), s(100.1)), vec![5, 7]);
        t.reading((s(100.2), s(100.2)), vec![6, 8]);
        t.reading((s(102.0), s(102.0)), vec![6, 8]);
        // The kernel stamps a sample once: an SMI within its width on either side is in it.
        assert_eq!(t.between(1, s(99.9), s(100.15)), Some(1));
        assert_eq!(t.between(1, s(101.0), s(102.0)), Some(0));
        assert_eq!(t.between(3, s(100.0), s(101.0)), None, "a CPU not counted");
        assert_eq!(t.between(1, s(200.0), s(201.0)), None, "after the readings");
        let mut g = gaps();
        g.feed(line(1, 1, 212, 100).as_bytes());
        let r = g.finish(&t);
        assert_eq!(r.gaps[0].smis, Some(1));
        assert_eq!(r.smis, Some(vec![1, 1]));
        // A counter that stops being readable claims nothing.
        t.lost("EIO");
        assert_eq!(t.between(1, s(99.9), s(100.15)), None);
        assert!(t.not_counted.unwrap().contains("EIO"));
    }

    #[test]
    fn each_cpus_own_reading_moment_bounds_its_smis() {
        // CPU 1 read at 100.0 and 100.5, CPU 0 at 100.4 and 100.9: an SMI that CPU 1 counted is put between 100.0
        // (the earlier reading's earliest) and 100.9, so a gap at 100.2 gets it.
        let s = |x: f64| (x * 1e9) as i128;
        let mut t = SmiTimeline::counting(vec![1, 0], s(100.0), vec![5, 7]);
        t.reading((s(100.5), s(100.9)), vec![6, 7]);
        assert_eq!(t.between(1, s(100.2), s(100.2)), Some(1));
        assert_eq!(t.between(1, s(99.0), s(99.9)), None, "before the readings");
    }
}

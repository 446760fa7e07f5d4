//! The hwlat tracer's trace lines (trace_pipe or trace), one gap each:
//! `<...>-1453 [001] dn... 123.456789: #1     inner/outer(us):   19/26    ts:1700000000.123456789 count:3`.
//! The event's text is `trace_hwlat_print` of kernel/trace/trace_output.c (Linux 6.1):
//! `"#%-5u inner/outer(us): %4llu/%-5llu ts:%lld.%09ld count:%d"`, then, only when nmi_count != 0,
//! ` nmi-total:%llu` (absent under CONFIG_GENERIC_SCHED_CLOCK) and ` nmi-count:%u`. Kernels up to 5.x may
//! lack `count:`. nmi-total is in µs: get_sample() divides it by NSEC_PER_USEC before recording it.

/// One gap the detector recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwlatLine {
    /// The CPU the detector ran on (the `[001]` field).
    pub(crate) cpu: usize,
    pub(crate) seq: u64,
    /// The largest gap between two consecutive time readings inside the sample, and between samples, µs.
    pub(crate) inner_us: u64,
    pub(crate) outer_us: u64,
    /// CLOCK_REALTIME when the sample was taken.
    pub(crate) ts_s: i64,
    pub ts_ns: u32,
    /// Readings over the threshold in the sample (None on kernels that do not print it).
    pub(crate) count: Option<u64>,
    pub(crate) nmi_total_us: Option<u64>,
    pub(crate) nmi_count: Option<u64>,
}

impl HwlatLine {
    /// `ts` in nanoseconds since the epoch.
    pub(crate) fn ts_ns_total(&self) -> i128 {
        i128::from(self.ts_s) * 1_000_000_000 + i128::from(self.ts_ns)
    }
}

/// What a line is: a gap, a comment or blank (the `trace` file's header), or something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Gap(HwlatLine),
    Comment,
    Garbage,
}

/// Longest line looked at: a hwlat line is ~130 bytes; anything much longer is not one.
const MAX_LINE: usize = 1024;

/// Reads one line; never panics, whatever the input.
pub fn parse_line(line: &str) -> Parsed {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Parsed::Comment;
    }
    if t.len() > MAX_LINE {
        return Parsed::Garbage;
    }
    gap(t).map_or(Parsed::Garbage, Parsed::Gap)
}

fn gap(t: &str) -> Option<HwlatLine> {
    // The task name may hold anything (spaces, brackets): the CPU is the last `[N]` before the event's text.
    let (head, event) = t.split_once(": #")?;
    let close = head.rfind(']')?;
    let open = head[..close].rfind('[')?;
    let cpu = head[open + 1..close].trim().parse().ok()?;
    let mut words = event.split_whitespace();
    let seq = words.next()?.parse().ok()?;
    if words.next()? != "inner/outer(us):" {
        return None;
    }
    let (inner, outer) = words.next()?.split_once('/')?;
    let (inner_us, outer_us) = (inner.parse().ok()?, outer.parse().ok()?);
    let (secs, nanos) = words.next()?.strip_prefix("ts:")?.split_once('.')?;
    if nanos.len() != 9 {
        return None;
    }
    let mut line = HwlatLine {
        cpu,
        seq,
        inner_us,
        outer_us,
        ts_s: secs.parse().ok()?,
        ts_ns: nanos.parse().ok()?,
        count: None,
        nmi_total_us: None,
        nmi_count: None,
    };
    for w in words {
        let (key, value) = w.split_once(':')?;
        let v = Some(value.parse().ok()?);
        match key {
            "count" => line.count = v,
            "nmi-total" => line.nmi_total_us = v,
            "nmi-count" => line.nmi_count = v,
            _ => return None,
        }
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    // No line here was captured on a machine: the development machine's kernel has no hwlat tracer
    // (available_tracers: blk function nop). The lines are the Linux 6.1 format string of trace_hwlat_print
    // (kernel/trace/trace_output.c) printed by hand, behind trace_pipe's usual task/CPU/flags/timestamp prefix.
    const FULL: &str = "           <...>-1453    [001] dn...   123.456789: #1     inner/outer(us):   19/26    \
                        ts:1700000000.123456789 count:3 nmi-total:4 nmi-count:1";
    const NO_NMI: &str = "   hwlatd-220     [000] d....  5321.000100: #12    inner/outer(us):  212/0      \
                          ts:1700000042.000000001 count:1";
    // A 5.x kernel without `count:`, the sequence past five digits.
    const OLD: &str = " kworker/0:1 [x]-77 [003] ....   88.5: #123456 inner/outer(us): 10/11    ts:1600000000.900000000";

    #[test]
    fn the_kernels_format_reads_back() {
        let Parsed::Gap(g) = parse_line(FULL) else {
            panic!("{FULL}")
        };
        assert_eq!(
            g,
            HwlatLine {
                cpu: 1,
                seq: 1,
                inner_us: 19,
                outer_us: 26,
                ts_s: 1_700_000_000,
                ts_ns: 123_456_789,
                count: Some(3),
                nmi_total_us: Some(4),
                nmi_count: Some(1),
            }
        );
        assert_eq!(g.ts_ns_total(), 1_700_000_000_123_456_789);
        let Parsed::Gap(g) = parse_line(NO_NMI) else {
            panic!("{NO_NMI}")
        };
        assert_eq!(
            (g.cpu, g.seq, g.inner_us, g.outer_us, g.count),
            (0, 12, 212, 0, Some(1))
        );
        assert_eq!((g.nmi_total_us, g.nmi_count, g.ts_ns), (None, None, 1));
        let Parsed::Gap(g) = parse_line(OLD) else {
            panic!("{OLD}")
        };
        assert_eq!((g.cpu, g.seq, g.inner_us, g.count), (3, 123_456, 10, None));
    }

    #[test]
    fn headers_are_comments_and_anything_else_is_garbage() {
        assert_eq!(parse_line("# tracer: hwlat"), Parsed::Comment);
        assert_eq!(parse_line("   "), Parsed::Comment);
        for bad in [
            "garbage",
            "x-1 [001] d... 1.0: #1 inner/outer(us): 19/26",
            "x-1 [001] d... 1.0: #1 inner/outer(us): 19 ts:1.123456789",
            "x-1 [001] d... 1.0: #1 inner/outer(us): 19/26 ts:1.12",
            "x-1 [001] d... 1.0: #1 inner/outer(us): 19/26 ts:1.123456789 count:x",
            "x-1 [001] d... 1.0: #1 inner/outer(us): 19/26 ts:1.123456789 colour:3",
            "x-1 [abc] d... 1.0: #1 inner/outer(us): 19/26 ts:1.123456789",
            "x-1 [001] d... 1.0: #1 inner/outer(us): -19/26 ts:1.123456789",
            "x-1 [001] d... 1.0: #1 outer(us): 19/26 ts:1.123456789",
            "x-1 [001] d... 1.0: #99999999999999999999999 inner/outer(us): 1/2 ts:1.123456789",
            "sleep-5 [000] d... 1.0: sched_switch: prev_comm=sleep",
        ] {
            assert_eq!(parse_line(bad), Parsed::Garbage, "{bad}");
        }
        // Bounded: a huge line is refused before it is split.
        assert_eq!(parse_line(&"a: #1 ".repeat(10_000)), Parsed::Garbage);
    }

    #[test]
    fn no_byte_string_panics() {
        // Every cut of a valid line, and every byte swapped for junk, at every position.
        for cut in 0..=FULL.len() {
            if FULL.is_char_boundary(cut) {
                let _ = parse_line(&FULL[..cut]);
            }
        }
        for i in 0..FULL.len() {
            for junk in ["\u{0}", "/", ":", ".", "é", "[", "]"] {
                let mut s = FULL.to_string();
                s.replace_range(i..i + 1, junk);
                let _ = parse_line(&s);
            }
        }
    }
}

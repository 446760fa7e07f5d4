//! tracefs text output (`trace`, `trace_pipe`, `per_cpu/cpuN/trace_pipe` with the default options, the format
//! `trace-cmd report` prints too): `COMM-PID [CPU] FLAGS SECS.FRAC: EVENT: BODY`. The task name may hold spaces
//! and '-' ("opt 4u885od4bna-18861"), so the line is split at the "[CPU]" column; FLAGS is absent when the
//! irq-info option is off. Bodies are `key=value` pairs whose values may hold spaces (sched_switch's comm) and
//! bracketed pairs (`vec=3 [action=NET_RX]`).

/// One event line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    pub(crate) comm: &'a str,
    pub(crate) pid: u32,
    /// The task's process, when the record-tgid option printed it ("bash-19702   (  19702) [000]").
    pub(crate) tgid: Option<u32>,
    pub(crate) cpu: usize,
    /// The irq-info column ("dNh1."), absent when that option is off.
    pub(crate) flags: Option<&'a str>,
    /// The timestamp in ns of the trace clock (µs resolution in the text: the last three digits are 0).
    pub(crate) ts_ns: u64,
    pub(crate) event: &'a str,
    pub(crate) body: &'a str,
}

/// Parses one event line; None for headers ("# …"), "CPU:1 [LOST 12 EVENTS]" and anything else.
pub(crate) fn parse_line(l: &str) -> Option<Line<'_>> {
    // The CPU column: the first " [digits]" preceded by "-PID".
    let mut from = 0;
    let (open, close) = loop {
        let o = from + l[from..].find(" [")?;
        let c = o + l[o..].find(']')?;
        let inner = &l[o + 2..c];
        if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) {
            break (o, c);
        }
        from = o + 2;
    };
    let cpu = l[open + 2..close].parse().ok()?;
    let mut task = l[..open].trim();
    let mut tgid = None;
    if let Some((t, g)) = task.strip_suffix(')').and_then(|t| t.rsplit_once('(')) {
        tgid = Some(g.trim().parse().ok()?);
        task = t.trim_end();
    }
    let dash = task.rfind('-')?;
    let pid = task[dash + 1..].parse().ok()?;
    let comm = &task[..dash];
    let rest = &l[close + 1..];
    // The timestamp is the first word "digits.digits:"; flags come before it.
    let (mut pos, mut flags) = (0, None);
    let (ts_ns, after) = loop {
        let r = &rest[pos..];
        let start = r.len() - r.trim_start().len();
        let word_end = r[start..].find(' ').map_or(r.len(), |e| start + e);
        let word = &r[start..word_end];
        if word.is_empty() {
            return None;
        }
        if let Some(ts) = word.strip_suffix(':').and_then(parse_ts) {
            break (ts, &r[word_end..]);
        }
        flags = Some(word);
        pos += word_end;
    };
    let after = after.trim_start();
    let colon = after
        .find(": ")
        .or_else(|| after.strip_suffix(':').map(|s| s.len()))?;
    let event = &after[..colon];
    if event.is_empty() || event.contains(' ') {
        return None;
    }
    let body = after.get(colon + 2..).unwrap_or("").trim_end();
    Some(Line {
        comm,
        pid,
        tgid,
        cpu,
        flags,
        ts_ns,
        event,
        body,
    })
}

impl Line<'_> {
    /// Whether the event came in interrupt context (hard or soft IRQ, NMI: the irq-info column's third letter),
    /// where the task named is only the one interrupted.
    pub(crate) fn in_irq(&self) -> bool {
        self.flags
            .and_then(|f| f.chars().nth(2))
            .is_some_and(|c| matches!(c, 'h' | 'H' | 's' | 'z' | 'Z'))
    }
}

/// "4494.247463" → ns; any number of fraction digits up to 9.
fn parse_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.')?;
    if sec.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    if !sec.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let sec: u64 = sec.parse().ok()?;
    let f: u64 = frac.parse().ok()?;
    let scale = 10u64.pow(9 - frac.len() as u32);
    sec.checked_mul(1_000_000_000)?.checked_add(f * scale)
}

/// The `key=value` pairs of a body, in order. A word without '=' continues the previous value (a name with
/// spaces); "==>" is skipped; "[action=NET_RX]" loses its brackets.
pub(crate) fn fields(body: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for w in body.split(' ').filter(|w| !w.is_empty()) {
        if w == "==>" {
            continue;
        }
        let w = w
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .unwrap_or(w);
        match w.split_once('=') {
            Some((k, v))
                if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                out.push((k, v.to_string()));
            }
            _ => {
                if let Some(last) = out.last_mut() {
                    last.1.push(' ');
                    last.1.push_str(w);
                }
            }
        }
    }
    out
}

/// The value of `key` in `fields`.
pub(crate) fn get<'a>(f: &'a [(&str, String)], key: &str) -> Option<&'a str> {
    f.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
}

/// The value of `key` as a number.
pub(crate) fn num(f: &[(&str, String)], key: &str) -> Option<u64> {
    get(f, key).and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured on the development VM (kernel 6.18, trace_clock mono, events of sched/irq/timer/ipi/irq_vectors
    /// on CPU 1): a python SCHED_FIFO 50 loop writing "rmp-eval c= dl= lat=" markers, delayed by a SCHED_FIFO 90
    /// python spinner (300 µs every 50 ms) pinned to the same CPU.
    const SAMPLE: &str =
        include_str!("../../tests/fixtures/samples/trace-firecracker-vm-fifo90-spinner.txt");

    #[test]
    fn captured_lines() {
        let lines: Vec<Line> = SAMPLE.lines().filter_map(parse_line).collect();
        assert!(lines.len() > 100);
        assert!(lines.iter().all(|l| l.cpu == 1));
        let sw = lines
            .iter()
            .find(|l| l.event == "sched_switch" && l.comm == "opt 47o5uubed8u")
            .unwrap();
        assert_eq!(sw.pid, 19062);
        assert_eq!(sw.ts_ns, 4_494_245_638_000);
        let f = fields(sw.body);
        assert_eq!(get(&f, "prev_comm"), Some("opt 47o5uubed8u"));
        assert_eq!(get(&f, "prev_state"), Some("R"));
        assert_eq!(get(&f, "next_comm"), Some("coordinator"));
        assert_eq!(num(&f, "next_pid"), Some(18963));
        let mark = lines
            .iter()
            .find(|l| l.event == "tracing_mark_write")
            .unwrap();
        let m = fields(mark.body);
        assert_eq!(num(&m, "c"), Some(0));
        assert_eq!(num(&m, "lat"), Some(63241));
        let soft = lines.iter().find(|l| l.event == "softirq_entry").unwrap();
        assert_eq!(get(&fields(soft.body), "action"), Some("RCU"));
        // Headers are not events.
        assert_eq!(SAMPLE.lines().filter(|l| l.starts_with('#')).count(), 12);
        assert!(
            SAMPLE
                .lines()
                .filter(|l| l.starts_with('#'))
                .all(|l| parse_line(l).is_none())
        );
    }

    #[test]
    fn other_shapes() {
        // irq-info off (no flags column), nanosecond timestamps, an idle task, a lost-events line.
        let l =
            parse_line("          <idle>-0     [003]  54.029328123: local_timer_entry: vector=236")
                .unwrap();
        assert_eq!(
            (l.comm, l.pid, l.cpu, l.ts_ns),
            ("<idle>", 0, 3, 54_029_328_123)
        );
        let l =
            parse_line(" a [b]-c-7 [000] d.h1. 1.5: irq_handler_entry: irq=31 name=virtio0-input")
                .unwrap();
        assert_eq!((l.comm, l.pid), ("a [b]-c", 7));
        assert_eq!(get(&fields(l.body), "name"), Some("virtio0-input"));
        assert!(parse_line("CPU:1 [LOST 12 EVENTS]").is_none());
        assert!(parse_line("garbage [1] x").is_none());
        assert!(parse_line("").is_none());
        assert!(parse_ts("1.1234567890").is_none());
    }
}

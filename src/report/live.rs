//! The live view, drawn by the main thread from the RT threads' relaxed counters: a band table redrawn in place on
//! a terminal (the caller draws at most 10 times a second), or a plain progress line (every 10 s) otherwise.

use std::sync::Arc;

use crate::measure::cyclic::series::{Bands, Live};
use crate::measure::result::confidence::tail_rates;
use crate::report::run::band_headers;
use crate::report::table::{Cell, Paint, duration, painted, render, us};

type Extra = Box<dyn Fn() -> String>;

pub(crate) struct LiveView {
    sources: Vec<(String, Arc<Live>)>,
    width_us: f64,
    period_us: u32,
    /// The terminal's columns: below the wide table's width, the narrow layout (bands beyond Great summed).
    columns: usize,
    /// Lines of the frame on screen, to move back over on the next draw.
    drawn: usize,
    extra: Option<Extra>,
    /// `r` and `q` are read (stdin is a terminal); else the footer names what works: SIGUSR1 and Ctrl+C.
    keys: bool,
    /// A reset restarts the statistics (not in fix's before/after): the footer names it only then.
    resets: bool,
    /// Each source's period and band width when they differ (`run --thread`); empty: `period_us`, `width_us`.
    own: Vec<(u32, f64)>,
}

impl LiveView {
    pub(crate) fn new(
        period_us: u32,
        bucket_width_us: Option<u32>,
        sources: Vec<(String, Arc<Live>)>,
    ) -> Self {
        let width_us = Bands::new(period_us, bucket_width_us).width_ns() as f64 / 1000.0;
        LiveView {
            sources,
            width_us,
            period_us,
            columns: usize::MAX,
            drawn: 0,
            extra: None,
            keys: false,
            resets: true,
            own: Vec::new(),
        }
    }

    /// Gives each source its own period (its bands scaled to it); the band columns are then named, not timed.
    pub(crate) fn with_periods(
        mut self,
        periods_us: Vec<u32>,
        bucket_width_us: Option<u32>,
    ) -> Self {
        self.own = periods_us
            .into_iter()
            .map(|p| (p, Bands::new(p, bucket_width_us).width_ns() as f64 / 1000.0))
            .collect();
        self
    }

    /// Source `i`'s period and band width.
    fn of(&self, i: usize) -> (u32, f64) {
        self.own
            .get(i)
            .copied()
            .unwrap_or((self.period_us, self.width_us))
    }

    /// Whether `r` and `q` are read from the terminal (they are only when stdin is one).
    pub(crate) fn with_keys(mut self, keys: bool) -> Self {
        self.keys = keys;
        self
    }

    /// Whether a reset (`r`, SIGUSR1) restarts the statistics.
    pub(crate) fn with_resets(mut self, resets: bool) -> Self {
        self.resets = resets;
        self
    }

    /// Fits the frame to a terminal of this many columns.
    pub(crate) fn with_columns(mut self, columns: usize) -> Self {
        self.columns = columns.max(20);
        self
    }

    /// Lines added under the table (the NIC mode's round-trip counters).
    pub(crate) fn with_extra(mut self, f: impl Fn() -> String + 'static) -> Self {
        self.extra = Some(Box::new(f));
        self
    }

    /// The table for a terminal, preceded by the escapes that move over the previous frame. Every line fits the
    /// terminal: a wrapped line would throw the count of lines to move back over off, leaving stale headers.
    pub(crate) fn frame(&mut self, elapsed_s: f64, color: bool) -> String {
        let mut body = self.table(true, color);
        if widest(&body) > self.columns {
            body = self.table(false, color);
        }
        for l in self.tail_lines() {
            body.push_str(&fit(&l, self.columns));
            body.push('\n');
        }
        if let Some(f) = &self.extra {
            for l in f().lines() {
                body.push_str(&fit(l, self.columns));
                body.push('\n');
            }
        }
        let footer = format!("Elapsed {}  ({})", duration(elapsed_s), self.controls());
        body.push_str(&fit(&footer, self.columns));
        body.push('\n');
        let mut s = self.clear();
        self.drawn = body.lines().count();
        s.push_str(&body);
        s
    }

    /// What the user can do, as the footer says it: the keys when they are read, else the signal that resets.
    fn controls(&self) -> String {
        match (self.keys, self.resets) {
            (true, true) => "r resets, q or Ctrl+C stops".into(),
            (true, false) => "q or Ctrl+C stops".into(),
            (false, true) => format!("kill -USR1 {} resets, Ctrl+C stops", std::process::id()),
            (false, false) => "Ctrl+C stops".into(),
        }
    }

    /// The band table: `wide` has a column per band; the narrow one the Great band and the rest summed.
    fn table(&self, wide: bool, color: bool) -> String {
        let heads = band_headers(self.width_us);
        let mut head: Vec<Cell> = vec!["Label".into(), "Count".into()];
        if wide && !self.own.is_empty() {
            head.extend(Bands::NAMES.iter().map(|h| Cell::from(*h)));
        } else if wide {
            head.extend(heads.iter().map(|h| Cell::from(h.as_str())));
        } else {
            head.push("Not Great".into());
        }
        head.extend(["Max dev us".into(), "at".into(), "Max wakeup us".into()]);
        if wide {
            head.push("Missed".into());
        }
        let mut rows = vec![Some(head), None];
        for (i, (label, live)) in self.sources.iter().enumerate() {
            let s = live.snapshot();
            let (period_us, _) = self.of(i);
            let mut row: Vec<Cell> = vec![label.as_str().into(), s.count.to_string().into()];
            if wide {
                for (i, n) in s.bands.into_iter().enumerate() {
                    row.push(painted(n.to_string(), Paint::band(i, n)));
                }
            } else {
                let others: u64 = s.bands[1..].iter().sum();
                row.push(painted(others.to_string(), Paint::band(4, others)));
            }
            row.push(us(s.max_dev_ns as f64 / 1000.0).into());
            row.push(at(s.max_index, period_us).into());
            row.push(us(s.max_wakeup_ns as f64 / 1000.0).into());
            if wide {
                row.push(s.missed.to_string().into());
            }
            rows.push(Some(row));
        }
        let mut t = render(&rows, color);
        if !wide {
            // The narrow table has no Missed column: say it under the table when there are any.
            for (label, live) in &self.sources {
                let m = live.snapshot().missed;
                if m > 0 {
                    t.push_str(&format!("{label}: {m} periods missed\n"));
                }
            }
        }
        t
    }

    /// What each series has proved so far about cycles beyond the Great band (report/tail.rs).
    fn tail_lines(&self) -> Vec<String> {
        self.sources
            .iter()
            .enumerate()
            .filter_map(|(i, (label, live))| {
                let s = live.snapshot();
                let (period_us, width_us) = self.of(i);
                let rates = tail_rates(s.bands, width_us, f64::from(period_us));
                (s.count > 0).then(|| super::tail::live_line(label, &rates[0]))
            })
            .collect()
    }

    /// Escapes that erase the frame on screen (empty when none is drawn).
    pub(crate) fn clear(&mut self) -> String {
        let s = if self.drawn > 0 {
            format!("\x1b[{}A\x1b[J", self.drawn)
        } else {
            String::new()
        };
        self.drawn = 0;
        s
    }

    /// One plain line for logs and pipes.
    pub(crate) fn progress_line(&self, elapsed_s: f64) -> String {
        let parts: Vec<String> = self
            .sources
            .iter()
            .enumerate()
            .map(|(i, (label, live))| {
                let s = live.snapshot();
                format!(
                    "{label}: {} periods, {} outside Great, max dev {}us at {}, max wakeup {}us, missed {}",
                    s.count,
                    s.count - s.bands[0],
                    us(s.max_dev_ns as f64 / 1000.0),
                    at(s.max_index, self.of(i).0),
                    us(s.max_wakeup_ns as f64 / 1000.0),
                    s.missed
                )
            })
            .collect();
        let mut line = format!("[{}] {}", duration(elapsed_s), parts.join("; "));
        for t in self.tail_lines() {
            line.push_str("; ");
            line.push_str(&t);
        }
        if let Some(f) = &self.extra {
            line.push_str("; ");
            line.push_str(f().trim_end().replace('\n', "; ").as_str());
        }
        line.push('\n');
        line
    }
}

/// Where in the run the worst cycle came: its index times the period, as a time ("12.3s"); an estimate when
/// periods were missed (they are not counted).
pub(crate) fn at(index: u64, period_us: u32) -> String {
    let secs = (index + 1) as f64 * f64::from(period_us) / 1e6;
    let whole = secs as u64;
    if secs < 10.0 {
        format!("{secs:.3}s")
    } else if secs < 1000.0 {
        format!("{secs:.1}s")
    } else if whole < 3600 {
        format!("{}m{:02}s", whole / 60, whole % 60)
    } else {
        format!("{}h{:02}m", whole / 3600, whole % 3600 / 60)
    }
}

/// The widest line's columns (text without escapes).
fn widest(s: &str) -> usize {
    s.lines()
        .map(|l| strip_escapes(l).chars().count())
        .max()
        .unwrap_or(0)
}

fn strip_escapes(l: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in l.chars() {
        match (esc, c) {
            (false, '\x1b') => esc = true,
            (true, c) if c.is_ascii_alphabetic() => esc = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

/// A line cut to `columns` (only plain lines are cut: a coloured one is left whole rather than cut mid-escape).
fn fit(l: &str, columns: usize) -> String {
    if l.contains('\x1b') || l.chars().count() <= columns {
        l.to_string()
    } else {
        l.chars().take(columns).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::cyclic::series::Series;

    #[test]
    fn frames_redraw_in_place_and_lines_are_plain() {
        let mut s = Series::new("Cyclic", 1000, None);
        let mut v = LiveView::new(1000, None, vec![("Cyclic".into(), s.live())]);
        s.record(1_000_000, Some(5_000));
        s.record(1_300_000, Some(300_000));
        let f1 = v.frame(1.0, false);
        assert!(
            !f1.contains('\x1b'),
            "first frame has nothing to erase: {f1}"
        );
        assert!(f1.contains("< 125us"));
        let f2 = v.frame(1.1, false);
        assert!(f2.starts_with(&format!("\x1b[{}A\x1b[J", f1.lines().count())));
        let row: Vec<&str> = f2
            .lines()
            .find(|l| l.starts_with("| Cyclic"))
            .unwrap()
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(
            row[1..11],
            [
                "Cyclic", "2", "1", "0", "1", "0", "0", "300", "0.002s", "300"
            ]
        );
        // 80 columns: the narrow layout, every line within them.
        let mut narrow =
            LiveView::new(1000, None, vec![("Cyclic".into(), s.live())]).with_columns(80);
        let f = narrow.frame(1.0, false);
        assert!(f.lines().all(|l| l.chars().count() <= 80), "{f}");
        assert!(
            f.contains("| Not Great |") && f.contains("| Max dev us |"),
            "{f}"
        );
        assert_eq!(at(0, 1000), "0.001s");
        assert_eq!(at(61_999, 1000), "62.0s");
        assert_eq!(at(3_599_999, 1000), "1h00m");
        let p = v.progress_line(10.0);
        assert_eq!(
            p,
            "[00:00:10.000] Cyclic: 2 periods, 1 outside Great, max dev 300us at 0.002s, max wakeup 300us, missed 0; \
             Cyclic: 1 ≥ 125us in 2 ms: 1800000/h (95 %: 45572/h – 10028958/h)\n"
        );
        assert!(v.clear().starts_with("\x1b["));
        assert_eq!(v.clear(), "");
    }

    #[test]
    fn the_footer_names_the_keys_only_when_they_are_read() {
        let s = Series::new("Cyclic", 1000, None);
        let mut v = LiveView::new(1000, None, vec![("Cyclic".into(), s.live())]);
        let f = v.frame(1.0, false);
        let pid = std::process::id();
        assert!(
            f.contains(&format!("(kill -USR1 {pid} resets, Ctrl+C stops)")),
            "{f}"
        );
        assert!(!f.contains("r resets"), "{f}");
        let mut v = v.with_keys(true);
        let f = v.frame(2.0, false);
        assert!(f.contains("(r resets, q or Ctrl+C stops)"), "{f}");
    }

    #[test]
    fn a_measurement_without_resets_names_none() {
        let s = Series::new("Cyclic", 1000, None);
        let mut v = LiveView::new(1000, None, vec![("Cyclic".into(), s.live())]).with_resets(false);
        let f = v.frame(1.0, false);
        assert!(f.contains("(Ctrl+C stops)") && !f.contains("resets"), "{f}");
        let mut v = v.with_keys(true);
        let f = v.frame(2.0, false);
        assert!(
            f.contains("(q or Ctrl+C stops)") && !f.contains("resets"),
            "{f}"
        );
    }
}

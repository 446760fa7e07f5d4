//! The live view, drawn by the main thread from the RT threads' relaxed counters: a band table redrawn in place on
//! a terminal (the caller draws at most 10 times a second), or a plain progress line (every 10 s) otherwise.

use std::sync::Arc;

use crate::measure::series::{Bands, Live};
use crate::report::run::band_headers;
use crate::report::table::{Cell, Paint, duration, painted, render, us};

type Extra = Box<dyn Fn() -> String>;

pub struct LiveView {
    sources: Vec<(String, Arc<Live>)>,
    width_us: f64,
    /// Lines of the frame on screen, to move back over on the next draw.
    drawn: usize,
    extra: Option<Extra>,
}

impl LiveView {
    pub fn new(
        period_us: u32,
        bucket_width_us: Option<u32>,
        sources: Vec<(String, Arc<Live>)>,
    ) -> Self {
        let width_us = Bands::new(period_us, bucket_width_us).width_ns() as f64 / 1000.0;
        LiveView {
            sources,
            width_us,
            drawn: 0,
            extra: None,
        }
    }

    /// Lines added under the table (the NIC mode's round-trip counters).
    pub fn with_extra(mut self, f: impl Fn() -> String + 'static) -> Self {
        self.extra = Some(Box::new(f));
        self
    }

    /// The table for a terminal, preceded by the escapes that move over the previous frame.
    pub fn frame(&mut self, elapsed_s: f64, color: bool) -> String {
        let heads = band_headers(self.width_us);
        let mut head: Vec<Cell> = vec!["Label".into(), "Count".into()];
        head.extend(heads.iter().map(|h| Cell::from(h.as_str())));
        head.extend([
            "Max us".into(),
            "index".into(),
            "Wakeup max us".into(),
            "Missed".into(),
        ]);
        let mut rows = vec![Some(head), None];
        for (label, live) in &self.sources {
            let s = live.snapshot();
            let mut row: Vec<Cell> = vec![label.as_str().into(), s.count.to_string().into()];
            for (i, n) in s.bands.into_iter().enumerate() {
                row.push(painted(n.to_string(), Paint::band(i, n)));
            }
            row.push(us(s.max_dev_ns as f64 / 1000.0).into());
            row.push(s.max_index.to_string().into());
            row.push(us(s.max_wakeup_ns as f64 / 1000.0).into());
            row.push(s.missed.to_string().into());
            rows.push(Some(row));
        }
        let mut body = render(&rows, color);
        if let Some(f) = &self.extra {
            body.push_str(&f());
            if !body.ends_with('\n') {
                body.push('\n');
            }
        }
        body.push_str(&format!(
            "Elapsed {}  (r resets, q or Ctrl+C stops)\n",
            duration(elapsed_s)
        ));
        let mut s = self.clear();
        self.drawn = body.lines().count();
        s.push_str(&body);
        s
    }

    /// Escapes that erase the frame on screen (empty when none is drawn).
    pub fn clear(&mut self) -> String {
        let s = if self.drawn > 0 {
            format!("\x1b[{}A\x1b[J", self.drawn)
        } else {
            String::new()
        };
        self.drawn = 0;
        s
    }

    /// One plain line for logs and pipes.
    pub fn progress_line(&self, elapsed_s: f64) -> String {
        let parts: Vec<String> = self
            .sources
            .iter()
            .map(|(label, live)| {
                let s = live.snapshot();
                format!(
                    "{label}: {} periods, {} outside Great, max {}us at index {}, missed {}",
                    s.count,
                    s.count - s.bands[0],
                    us(s.max_dev_ns as f64 / 1000.0),
                    s.max_index,
                    s.missed
                )
            })
            .collect();
        let mut line = format!("[{}] {}", duration(elapsed_s), parts.join("; "));
        if let Some(f) = &self.extra {
            line.push_str("; ");
            line.push_str(f().trim_end().replace('\n', "; ").as_str());
        }
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::series::Series;

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
            row[1..10],
            ["Cyclic", "2", "1", "0", "1", "0", "0", "300", "1"]
        );
        let p = v.progress_line(10.0);
        assert_eq!(
            p,
            "[00:00:10.000] Cyclic: 2 periods, 1 outside Great, max 300us at index 1, missed 0\n"
        );
        assert!(v.clear().starts_with("\x1b["));
        assert_eq!(v.clear(), "");
    }
}

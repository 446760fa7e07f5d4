//! `run --hlog FILE`: an HdrHistogram interval log (format 1.3, as HdrHistogram's HistogramLogWriter writes and its
//! log processors and readers take): one line per series and interval, tagged with the series' label (`Cyclic`,
//! `Sender`, `Receiver`: the period deviation) and `<label>.wakeup` (the wakeup latency). Values in ns; the
//! Interval_Max column in ms (the writers' default ratio of 10^6). Timestamps are seconds after StartTime.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::dist::encode;
use crate::error::{Error, Result};
use crate::measure::cyclic::collect::Interval;

pub(crate) struct Hlog {
    path: PathBuf,
    out: BufWriter<File>,
    /// The first write error; later lines are dropped and the run says so at its end.
    failed: Option<std::io::Error>,
}

impl Hlog {
    /// Creates FILE (replacing it) and writes the header; `start_unix_s` is the run's start.
    pub(crate) fn create(path: &Path, start_unix_s: f64) -> Result<Hlog> {
        let file = File::create(path)
            .map_err(|e| Error::sys(format!("creating --hlog {}", path.display()), e))?;
        let mut out = BufWriter::new(file);
        let head = format!(
            "#[Logged with rmp-eval {}: period deviation and wakeup latency per interval, values in ns]\n\
             #[Histogram log format version 1.3]\n\
             #[StartTime: {start_unix_s:.3} (seconds since epoch)]\n\
             #[BaseTime: {start_unix_s:.3} (seconds since epoch)]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
            env!("CARGO_PKG_VERSION")
        );
        out.write_all(head.as_bytes())
            .and_then(|_| out.flush())
            .map_err(|e| Error::sys(format!("writing --hlog {}", path.display()), e))?;
        Ok(Hlog {
            path: path.to_path_buf(),
            out,
            failed: None,
        })
    }

    /// The interval's lines (deviation, and wakeup when the series has one), flushed so a crash keeps them.
    pub(crate) fn write(&mut self, label: &str, iv: &Interval) {
        if self.failed.is_some() {
            return;
        }
        let len = (iv.end_s - iv.start_s).max(0.0);
        let line = |tag: String, d: &super::dist::Dist| {
            format!(
                "Tag={tag},{:.3},{:.3},{:.6},{}\n",
                iv.start_s,
                len,
                d.max_ns() as f64 / 1e6,
                encode(d.hist())
            )
        };
        let mut text = line(label.to_string(), &iv.stats.deviation);
        if iv.stats.wakeup.count() > 0 {
            text.push_str(&line(format!("{label}.wakeup"), &iv.stats.wakeup));
        }
        if let Err(e) = self
            .out
            .write_all(text.as_bytes())
            .and_then(|_| self.out.flush())
        {
            self.failed = Some(e);
        }
    }

    /// Why lines were lost, when they were.
    pub(crate) fn finish(mut self) -> Option<String> {
        let _ = self.out.flush();
        self.failed
            .map(|e| format!("--hlog {}: writing stopped ({e})", self.path.display()))
    }
}

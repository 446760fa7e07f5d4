//! The raw reader: every traced CPU's `per_cpu/cpuN/trace_pipe_raw`, non-blocking, one page per read; the pages
//! decoded (parse::ringbuf) and their events fed to the window in time order across CPUs. With several CPUs an
//! event is held back until every CPU has been read past its time (events newer than the last poll minus a
//! margin wait for the next poll), as trace_pipe's merge does.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::sync::Arc;

use super::{RawEvent, Schema};
use crate::parse::ringbuf;
use crate::trace::window::Window;

/// Events younger than this at a poll wait for the next one (a writer may still be committing on another CPU).
const HOLD_NS: u64 = 30_000_000;

pub(crate) struct RawPipes {
    schema: Arc<Schema>,
    pipes: Vec<(usize, File)>,
    pending: Vec<VecDeque<RawEvent>>,
    page: Vec<u8>,
    /// Pages that did not decode: their events are counted as lost rather than guessed at.
    pub(crate) bad_pages: u64,
}

impl RawPipes {
    pub(crate) fn new(schema: Arc<Schema>, pipes: Vec<(usize, File)>) -> Self {
        let n = pipes.len();
        RawPipes {
            page: vec![0; schema.header.page_size],
            schema,
            pipes,
            pending: (0..n).map(|_| VecDeque::new()).collect(),
            bad_pages: 0,
        }
    }

    pub(crate) fn schema(&self) -> Arc<Schema> {
        Arc::clone(&self.schema)
    }

    /// Reads every page there is on every CPU, then feeds `w` the events every CPU has been read past (all of
    /// them when `last`, after tracing stopped, or with one CPU).
    pub(crate) fn poll(&mut self, w: &mut Window, last: bool) {
        let started = crate::sys::clock::monotonic_ns();
        for (i, (cpu, f)) in self.pipes.iter_mut().enumerate() {
            loop {
                match f.read(&mut self.page) {
                    Ok(n) if n > 0 => match ringbuf::page(&self.page[..n], &self.schema.header) {
                        Ok(p) => {
                            if let Some(lost) = p.lost {
                                w.lost(*cpu, lost);
                            }
                            self.pending[i].extend(p.records.iter().map(|r| RawEvent {
                                cpu: *cpu,
                                ts: r.ts,
                                data: r.data.into(),
                            }));
                        }
                        Err(_) => {
                            self.bad_pages += 1;
                            w.lost(*cpu, 0);
                        }
                    },
                    _ => break,
                }
            }
        }
        let cutoff = if last || self.pipes.len() == 1 {
            u64::MAX
        } else {
            started.saturating_sub(HOLD_NS)
        };
        self.release(w, cutoff);
    }

    /// Feeds the pending events up to `cutoff`, oldest first across CPUs.
    fn release(&mut self, w: &mut Window, cutoff: u64) {
        loop {
            let next = self
                .pending
                .iter()
                .enumerate()
                .filter_map(|(i, q)| q.front().map(|e| (e.ts, i)))
                .filter(|(ts, _)| *ts <= cutoff)
                .min();
            let Some((_, i)) = next else { break };
            if let Some(e) = self.pending[i].pop_front() {
                w.event(e, &self.schema);
            }
        }
    }
}

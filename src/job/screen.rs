//! What `run` shows while it measures (the `Watch` the engine calls): the live table redrawn in place on a
//! terminal with `r` (reset) and `q` (stop), a progress line every 10 s on a pipe, nothing with --json; and the
//! checkpoints, written into the result's slot so that a killed run leaves what it had measured. A before/after
//! measurement (`fixed_length`) takes no reset: `r` and SIGUSR1 do nothing there, `q` still stops.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::measure::result::RunResult;
use crate::measure::result::store::Slot;
use crate::measure::session::{Action, Gauges, Watch};
use crate::output::Output;
use crate::report::keys::Keys;
use crate::report::live::LiveView;

/// How often the live table is redrawn on a terminal (≤ 10 Hz) and a progress line printed otherwise.
const FRAME: Duration = Duration::from_millis(100);
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The live view of a run: the table redrawn in place on a terminal, a plain progress line every 10 s on a pipe
/// or into a file, nothing with --json.
pub(super) struct Screen<'a> {
    out: Output,
    /// Where the view is drawn (the command's writer).
    w: &'a mut dyn Write,
    show: Show,
    view: Option<LiveView>,
    last_progress: Instant,
    /// `r` and `q` on a terminal (live view only).
    keys: Option<Keys>,
    /// Where checkpoints go: the file the final result replaces.
    slot: Option<&'a Slot>,
    /// `r` and SIGUSR1 restart the statistics (not in a before/after measurement).
    resets: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Show {
    Live,
    Progress,
    Quiet,
}

impl<'a> Screen<'a> {
    pub(super) fn new(
        out: Output,
        w: &'a mut dyn Write,
        quiet: bool,
        slot: Option<&'a Slot>,
    ) -> Self {
        let show = match (quiet, out.terminal) {
            (true, _) => Show::Quiet,
            (false, true) => Show::Live,
            (false, false) => Show::Progress,
        };
        Screen {
            out,
            w,
            show,
            view: None,
            last_progress: Instant::now(),
            keys: None,
            slot,
            resets: true,
        }
    }

    /// For a measurement to be compared with another of the same length: no reset restarts its statistics.
    pub(super) fn fixed_length(mut self) -> Self {
        self.resets = false;
        self
    }
}

impl Watch for Screen<'_> {
    fn note(&mut self, text: &str) {
        eprintln!("rmp-eval: note: {text}");
    }

    fn start(&mut self, g: Gauges) {
        if self.show == Show::Live {
            self.keys = Keys::on_terminal();
        }
        let view = LiveView::new(g.period_us, g.bucket_width_us, g.series)
            .with_periods(g.periods_us, g.bucket_width_us)
            .with_columns(self.out.width)
            .with_keys(self.keys.is_some())
            .with_resets(self.resets);
        self.view = Some(match g.extra {
            Some(f) => view.with_extra(f),
            None => view,
        });
        self.last_progress = Instant::now();
    }

    fn checkpoint(&mut self, partial: &RunResult) {
        if let Some(slot) = self.slot
            && let Err(e) = slot.write(partial)
        {
            eprintln!("rmp-eval: note: checkpoint not saved: {e}");
        }
    }

    fn interval(&self) -> Duration {
        if self.show == Show::Live {
            FRAME
        } else {
            Duration::from_secs(1)
        }
    }

    fn tick(&mut self, elapsed: Duration) -> Action {
        let typed = self.keys.as_ref().map(Keys::pending).unwrap_or_default();
        let action = if typed.contains(&b'q') {
            Action::Stop
        } else if self.resets && typed.contains(&b'r') {
            Action::Reset
        } else {
            Action::Go
        };
        let Some(view) = &mut self.view else {
            return action;
        };
        let secs = elapsed.as_secs_f64();
        match self.show {
            Show::Live => crate::out!(self.w, "{}", view.frame(secs, self.out.color)),
            Show::Progress if self.last_progress.elapsed() >= PROGRESS_EVERY => {
                self.last_progress = Instant::now();
                crate::out!(self.w, "{}", view.progress_line(secs));
            }
            _ => {}
        }
        action
    }

    fn resets(&self) -> bool {
        self.resets
    }

    fn end(&mut self) {
        self.keys = None;
        if let (Show::Live, Some(view)) = (self.show, &mut self.view) {
            crate::out!(self.w, "{}", view.clear());
        }
    }
}

//! The caller's side of a running measurement: the counters a run publishes (`Gauges`), the live view it hands
//! them to (`Watch`: a table, progress lines, nothing — this module knows no terminal), what the user asks for
//! through it (`Action`), and the statistics besides the series that the main thread cuts and resets (`Extra`).

use std::sync::Arc;
use std::time::Duration;

use crate::measure::cyclic::series::Live;
use crate::measure::result::RunResult;

/// What a run publishes while it measures: each series' counters and, in NIC mode, lines of its own.
pub(crate) struct Gauges {
    pub(crate) period_us: u32,
    pub(crate) bucket_width_us: Option<u32>,
    pub(crate) series: Vec<(String, Arc<Live>)>,
    /// Each series' own period when they differ (`run --thread`); empty: all `period_us`.
    pub(crate) periods_us: Vec<u32>,
    pub(crate) extra: Option<Box<dyn Fn() -> String>>,
}

/// What the user asked for through the live view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Go,
    /// Restart the statistics (`r`).
    Reset,
    /// End the run as Ctrl+C does (`q`).
    Stop,
}

/// Statistics the main thread cuts, gathers and resets along with the series' collectors: NIC mode's round trips
/// (`nic::rtt::collect::RttCollector`); `()` for none.
pub(crate) trait Extra {
    /// Asks for the interval recorded so far (handed back later).
    fn cut(&mut self, now_s: f64);
    /// Merges what was handed back.
    fn gather(&mut self);
    /// Restarts the statistics (`r`, SIGUSR1).
    fn reset(&mut self, now_s: f64);
}

impl Extra for () {
    fn cut(&mut self, _: f64) {}
    fn gather(&mut self) {}
    fn reset(&mut self, _: f64) {}
}

/// The caller's view of a running measurement (a live table, progress lines, nothing).
pub(crate) trait Watch {
    /// Something the user should know that does not stop the run.
    fn note(&mut self, text: &str);
    /// The RT threads run; these are their counters.
    fn start(&mut self, gauges: Gauges);
    /// How long the supervision loop waits between ticks (it also wakes when an RT thread ends).
    fn interval(&self) -> Duration;
    fn tick(&mut self, elapsed: Duration) -> Action;
    /// The RT threads have ended.
    fn end(&mut self);
    /// The run so far, once a minute, to be saved where the final result will be (a crash keeps it).
    fn checkpoint(&mut self, _partial: &RunResult) {}
    /// Whether a reset (`r`, SIGUSR1) may restart the statistics. Not in a before/after measurement: both must
    /// cover the whole of the same length to be compared.
    fn resets(&self) -> bool {
        true
    }
    /// The statistics were restarted (`r`, SIGUSR1): what the watch counts besides the series (the interference
    /// counters' windows, worst window and SMIs) starts again too, so that the result covers one span.
    fn restarted(&mut self) {}
}

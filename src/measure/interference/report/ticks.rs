//! The tick truth: local timer interrupts per second on the RT core, less the loop's own wakeups, read against
//! `check`'s nohz_full verdict — and, when the tick keeps running, why.

use serde::{Deserialize, Serialize};

use super::{Interference, Source, SourceKind};
use crate::checks::Status;
use crate::measure::interference::cause::Remedy;
use crate::remedy::StepId;

/// Local timer interrupts on the RT core, measured, and what they mean.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct Ticks {
    /// Local timer interrupts per second on the core (median of the windows).
    pub(crate) local_timer_per_s: f64,
    /// The loop's own timer wakeups per second (each is a local timer interrupt too).
    pub(crate) loop_wakeups_per_s: f64,
    /// The difference: scheduler ticks and other timers (median of the windows).
    pub(crate) ticks_per_s: f64,
    /// Ticks per second counted in the trace (`--trace`: tick hrtimer expiries on the core), exact.
    #[serde(default)]
    pub(crate) traced_ticks_per_s: Option<f64>,
    /// `check`'s nohz_full verdict for the core ("pass", "fail", …) and its detail.
    pub(crate) nohz_full_check: String,
    /// What the numbers say, and the kernel's reason when the kernel is why.
    pub(crate) verdict: String,
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

impl Interference {
    /// Fills `ticks` from the windows; `nohz` is check's nohz_full (status, detail); `kernel` the release.
    /// `has_nohz_full`: the kernel was built with NO_HZ_FULL (check's test: /sys/devices/system/cpu/nohz_full).
    pub(crate) fn settle_ticks(
        &mut self,
        nohz: (Status, &str),
        has_nohz_full: bool,
        kernel: &str,
        traced: Option<f64>,
    ) {
        let med = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let rates = self.timer_rates.values();
        let loc = med(rates.iter().map(|r| r.0).collect());
        let own = med(rates.iter().map(|r| r.1).collect());
        let ticks = med(rates.iter().map(|r| (r.0 - r.1).max(0.0)).collect());
        let t = traced.unwrap_or(ticks);
        let verdict = self.tick_verdict(t, nohz, has_nohz_full, kernel);
        if t > 2.0 && !self.sources.iter().any(|s| s.kind == SourceKind::Tick) {
            let secs = self.seconds;
            self.sources.push(Source::new(
                SourceKind::Tick,
                "LOC".into(),
                None,
                (t * secs) as u64,
                secs,
            ));
        }
        self.ticks = Ticks {
            local_timer_per_s: round(loc),
            loop_wakeups_per_s: round(own),
            ticks_per_s: round(ticks),
            traced_ticks_per_s: traced.map(round),
            nohz_full_check: format!("{}: {}", nohz.0.name(), nohz.1),
            verdict,
        };
    }

    /// What `t` ticks per second on the core mean, and the kernel's reason when the kernel is why.
    fn tick_verdict(
        &self,
        t: f64,
        nohz: (Status, &str),
        has_nohz_full: bool,
        kernel: &str,
    ) -> String {
        let cmdline = Remedy::fix(StepId::Cmdline, "").command(self.cpu);
        if !has_nohz_full {
            format!(
                "{} ticks/s on CPU {}: the kernel is why — built without CONFIG_NO_HZ_FULL, it cannot stop the tick \
                 (a kernel with it is needed, e.g. Debian's linux-image-rt; then {cmdline})",
                round(t),
                self.cpu
            )
        } else if nohz.0 != Status::Pass {
            format!(
                "{} ticks/s on CPU {}: not a nohz_full core (check nohz_full: {}) → {cmdline}",
                round(t),
                self.cpu,
                nohz.1,
            )
        } else if t <= 2.0 {
            format!(
                "{} ticks/s on CPU {}: the tick is stopped, as nohz_full promises",
                round(t),
                self.cpu
            )
        } else {
            format!(
                "{} ticks/s on CPU {} although check says nohz_full passes: {}",
                round(t),
                self.cpu,
                self.why_ticks(kernel).join("; ")
            )
        }
    }

    /// Why the tick kept running on a nohz_full core that check passes.
    fn why_ticks(&self, kernel: &str) -> Vec<String> {
        let threads: Vec<String> = self
            .sources
            .iter()
            .filter(|s| s.kind == SourceKind::Thread)
            .take(3)
            .map(Source::describe)
            .collect();
        let rcu = self.sources.iter().any(|s| s.name == "RCU" && s.count > 0);
        let recent = crate::parse::kernel::version(kernel).is_some_and(|v| (v.0, v.1) >= (6, 12));
        let mut why = Vec::new();
        if !threads.is_empty() {
            why.push(format!(
                "other tasks ran there ({}) → check rt_core_threads",
                threads.join(", ")
            ));
        }
        if rcu {
            let cmdline = Remedy::fix(StepId::Cmdline, "").command(self.cpu);
            why.push(format!("RCU softirqs ran there → rcu_nocbs ({cmdline})"));
        }
        if recent {
            why.push(
                "on 6.12+ kernels the fair server's timer re-arms the tick while normal tasks wait"
                    .into(),
            );
        }
        if why.is_empty() {
            why.push("the kernel kept it (timers queued on the core)".into());
        }
        why
    }
}

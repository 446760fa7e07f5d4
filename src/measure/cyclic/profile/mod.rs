//! `run --profile`: the thread sets of the seed documents, as `run --thread` would give them, and what LinuxCNC's
//! documentation concludes from a LinuxCNC profile's numbers.
//!
//! - `linuxcnc`: LinuxCNC's `latency-test` with its defaults (scripts/latency-test: base 25 µs, servo 1 ms; the
//!   Latency Test chapter, docs/src/install/latency-test.adoc). On a PREEMPT_RT kernel (uspace RTAPI) HAL keeps
//!   the highest SCHED_FIFO priority (99) free and gives each thread, fastest first, the next lower one
//!   (hal_create_thread: `rtapi_prio_next_lower`): base 98, servo 97.
//! - `linuxcnc-servo`: latency-test with the servo thread only (a base period of 0 or equal to the servo's), as a
//!   machine with hardware step generation (a Mesa card) runs it: servo 1 ms at 98.
//! - `rmp`: the original tool's FAQ: RMP runs 8 threads on one isolated CPU, of which it tests the cyclic sender
//!   (SCHED_FIFO 42) and the receiver (45). Emulated: eight SCHED_FIFO threads on --core, the sender and receiver
//!   at --period with --send-priority/--receive-priority, and six periodic threads below the sender (its priority
//!   − 1 … − 6) at 2, 5, 10, 20, 50 and 100 periods. Not emulated: the FAQ names neither the other six threads'
//!   periods nor their priorities (those above are this tool's assumption), no thread does RMP's work (each only
//!   wakes and measures), and the receiver wakes on its own timer at the sender's instant, not on an EtherCAT
//!   reply (no NIC is used; `run --nic` measures the real round trip of the pair).

use serde::{Deserialize, Serialize};

use crate::measure::spec::ThreadSpec;

/// One profile of `run --profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    Linuxcnc,
    LinuxcncServo,
    Rmp,
}

/// LinuxCNC's default periods (scripts/latency-test) and its uspace priorities (99 reserved, fastest first).
const BASE_US: u32 = 25;
const SERVO_US: u32 = 1000;
const FIRST_PRIORITY: u8 = 98;

/// The rmp profile's six lower-priority threads: their periods in multiples of the cyclic period.
const RMP_PERIODIC: [u32; 6] = [2, 5, 10, 20, 50, 100];

impl Profile {
    pub(crate) const ALL: [Profile; 3] = [Profile::Linuxcnc, Profile::LinuxcncServo, Profile::Rmp];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Profile::Linuxcnc => "linuxcnc",
            Profile::LinuxcncServo => "linuxcnc-servo",
            Profile::Rmp => "rmp",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == s)
    }

    /// A LinuxCNC profile sets its own periods (`--period` does not apply).
    pub(crate) fn is_linuxcnc(self) -> bool {
        matches!(self, Profile::Linuxcnc | Profile::LinuxcncServo)
    }

    /// The profile's threads, on --core; `period_us`, `send`, `receive` are the run's --period and priorities
    /// (the rmp profile's).
    pub(crate) fn threads(self, period_us: u32, send: u8, receive: u8) -> Vec<ThreadSpec> {
        let t = |name: &str, period_us: u32, priority: u8| ThreadSpec {
            name: name.to_string(),
            period_us,
            priority: Some(priority),
            cpu: None,
        };
        match self {
            // latency-test lists the servo thread first.
            Profile::Linuxcnc => vec![
                t("servo", SERVO_US, FIRST_PRIORITY - 1),
                t("base", BASE_US, FIRST_PRIORITY),
            ],
            Profile::LinuxcncServo => vec![t("servo", SERVO_US, FIRST_PRIORITY)],
            Profile::Rmp => {
                let mut v = vec![
                    t("sender", period_us, send),
                    t("receiver", period_us, receive),
                ];
                for (i, k) in RMP_PERIODIC.iter().enumerate() {
                    let prio = send.saturating_sub(i as u8 + 1).max(1);
                    let period = period_us.saturating_mul(*k).min(1_000_000);
                    v.push(t(&format!("periodic{}", i + 1), period, prio));
                }
                v
            }
        }
    }
}

/// The profile's threads merged with `--thread`'s: a given thread of a profile thread's name replaces it (e.g.
/// `--profile linuxcnc --thread base:50us:98`, latency-test's other common base period), the others are added
/// after the profile's.
pub(crate) fn merge(profile: Vec<ThreadSpec>, given: &[ThreadSpec]) -> Vec<ThreadSpec> {
    let mut out: Vec<ThreadSpec> = profile
        .into_iter()
        .map(|p| {
            given
                .iter()
                .find(|g| g.name == p.name)
                .cloned()
                .unwrap_or(p)
        })
        .collect();
    for g in given {
        if !out.iter().any(|o| o.name == g.name) {
            out.push(g.clone());
        }
    }
    out
}

/// One thread in LinuxCNC's terms: latency-test's "Max Jitter (ns)" is timedelta's `jitter` pin, the largest
/// |interval − period| between two runs of the thread — the series' largest period deviation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JitterRow {
    pub(crate) thread: String,
    pub(crate) period_ns: u64,
    pub(crate) max_jitter_ns: u64,
    /// The same figure in rmp-eval's bands for that thread's period (Great < period/8 …).
    pub(crate) band: String,
}

impl JitterRow {
    /// A thread's row: its name, period, largest period deviation (ns) and band width (None: period/8).
    pub(crate) fn new(
        thread: &str,
        period_us: u32,
        max_jitter_ns: u64,
        width_us: Option<u32>,
    ) -> Self {
        let band =
            crate::measure::cyclic::series::Bands::new(period_us, width_us).classify(max_jitter_ns);
        JitterRow {
            thread: thread.to_string(),
            period_ns: u64::from(period_us) * 1000,
            max_jitter_ns,
            band: crate::measure::cyclic::series::Bands::NAMES[band].to_string(),
        }
    }
}

/// What LinuxCNC's Latency Test chapter concludes from the max jitter of a run under a LinuxCNC profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinuxcncReading {
    pub(crate) threads: Vec<JitterRow>,
    /// Software stepping: the base thread's max jitter (the number Stepconf asks for); None without a base thread.
    pub(crate) software_stepping: Option<String>,
    /// Hardware step generation: no base thread; the servo thread's max jitter against the chapter's 1 ms rule.
    pub(crate) hardware_stepping: Option<String>,
}

/// The chapter's ranges, in ns: "less than about 15-20 microseconds … very nice results with software stepping";
/// "30-50 microseconds … good results, but your maximum step rate might be a little disappointing"; "100 us or
/// more … not a good candidate for software stepping"; "over 1 millisecond … not a good candidate for LinuxCNC,
/// regardless of whether you use software stepping or not".
const VERY_NICE_NS: u64 = 20_000;
const GOOD_NS: u64 = 50_000;
const NOT_SOFTWARE_NS: u64 = 100_000;
const NOT_LINUXCNC_NS: u64 = 1_000_000;

/// Software stepping, from the base thread's max jitter.
pub(crate) fn software_stepping(base_ns: u64, worst_ns: u64) -> String {
    let us = base_ns as f64 / 1000.0;
    if worst_ns > NOT_LINUXCNC_NS {
        format!(
            "not a good candidate for LinuxCNC, regardless of stepping (a max jitter of {:.3} us is over 1 ms)",
            worst_ns as f64 / 1000.0
        )
    } else if base_ns < VERY_NICE_NS {
        format!(
            "very nice results with software stepping (base max jitter {us:.3} us, under about 15-20 us)"
        )
    } else if base_ns <= GOOD_NS {
        format!(
            "good results with software stepping, but the maximum step rate may disappoint (base max jitter {us:.3} us, \
             30-50 us)"
        )
    } else if base_ns < NOT_SOFTWARE_NS {
        format!(
            "software stepping between the chapter's ranges: worse than 30-50 us, not yet 100 us (base max jitter \
             {us:.3} us); expect a low maximum step rate"
        )
    } else {
        format!(
            "not a good candidate for software stepping (base max jitter {us:.3} us, 100 us or more)"
        )
    }
}

/// Hardware step generation (the servo thread only matters), from the servo thread's max jitter.
pub(crate) fn hardware_stepping(servo_ns: u64) -> String {
    let us = servo_ns as f64 / 1000.0;
    if servo_ns > NOT_LINUXCNC_NS {
        format!(
            "not a good candidate for LinuxCNC, even with hardware step generation (servo max jitter {us:.3} us, \
             over 1 ms)"
        )
    } else {
        format!(
            "usable with hardware step generation (servo max jitter {us:.3} us, under the chapter's 1 ms limit; the \
             base thread's figure does not apply)"
        )
    }
}

/// The reading of a run's threads named `servo` and `base` (a LinuxCNC profile's).
pub(crate) fn reading(threads: Vec<JitterRow>) -> LinuxcncReading {
    let of = |n: &str| {
        threads
            .iter()
            .find(|t| t.thread == n)
            .map(|t| t.max_jitter_ns)
    };
    let (servo, base) = (of("servo"), of("base"));
    let worst = threads.iter().map(|t| t.max_jitter_ns).max().unwrap_or(0);
    LinuxcncReading {
        software_stepping: base.map(|b| software_stepping(b, worst)),
        hardware_stepping: servo.map(hardware_stepping),
        threads,
    }
}

#[cfg(test)]
mod tests;

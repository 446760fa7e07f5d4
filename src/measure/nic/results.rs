//! A NIC run's result, at a checkpoint and at the end, from one builder (`result::Header`): the series, the round
//! trips judged against the run's settings, and, when the replies stopped, whose fault that was (stop.rs).

use std::sync::atomic::Ordering::Relaxed;

use super::frame;
use super::link::{Answers, Link, Ports};
use super::rtt::collect::{Context, RttCollector};
use super::shared::Shared;
use super::stop::{self, Counts, Local};
use super::tstamp::TsKind;
use crate::measure::cyclic::collect::Collector;
use crate::measure::cyclic::sampler;
use crate::measure::cyclic::series::{Series, round3};
use crate::measure::result::{
    ArrivalReport, EscId, Header, Measured, RttSummary, RunResult, SeriesSummary, Sync0Report,
    XdpReport,
};
use crate::measure::session::{Ended, Session};
use crate::measure::spec::{Mode, NicSpec, Placement, RunMode, RunSpec};

/// What a NIC run's results are made of besides the measurements: the same at a checkpoint and at the end.
pub(super) struct Results<'a> {
    pub(super) header: Header<'a>,
    /// The round trips' settings; the frames sent are filled in per summary.
    pub(super) rtt: Context,
    pub(super) nic: &'a NicSpec,
    /// The working counters of the preflight's replies when the expected one was learned from them (EtherCAT
    /// without --expect-wkc).
    preflight_wkc: Vec<u16>,
    /// `--path af_xdp`: what the path got (mode, zero-copy, queue), the same in every summary.
    xdp: Option<XdpReport>,
    /// Why software stamps, when they are used.
    stamps_why: Option<String>,
}

impl<'a> Results<'a> {
    /// The expected working counter is the one `learned` from the preflight's replies unless given (EtherCAT),
    /// the reply budget the period unless given.
    pub(super) fn new(
        (args, nic): (&'a RunSpec, &'a NicSpec),
        at: Placement,
        label: &'a str,
        link: &Link,
        (answers, learned): (&Answers, u16),
        series: &Series,
    ) -> Self {
        let first = &answers.first;
        let (mode, rt) = (nic.mode, nic.round_trip);
        let ecat = mode == Mode::Ecat;
        Results {
            header: Header {
                spec: args,
                at,
                label,
                mode: RunMode::Nic(mode),
                width_us: series.bands().width_ns() as f64 / 1000.0,
            },
            rtt: Context {
                sent: 0,
                not_sent: 0,
                hardware: link.stamps == TsKind::Hardware,
                budget_ns: u64::from(rt.budget_us.unwrap_or(args.period_us)) * 1000,
                expect_wkc: ecat.then(|| rt.expect_wkc.unwrap_or(learned)),
                esc: ecat.then_some(EscId {
                    kind: first.esc[0],
                    revision: first.esc[1],
                }),
            },
            nic,
            preflight_wkc: if ecat && rt.expect_wkc.is_none() {
                answers.wkc.clone()
            } else {
                Vec::new()
            },
            stamps_why: link.stamps_why.clone(),
            xdp: match &link.ports {
                Ports::Xdp(x) => Some(x.facts.report()),
                Ports::Packet { .. } => None,
            },
        }
    }

    /// The round trips since the start or the last reset; `ended`: the receiver has ended (see
    /// `RttCollector::sent_since_reset`).
    fn summary(&self, rtts: &RttCollector, ended: bool) -> RttSummary {
        let (sent, not_sent) = rtts.sent_since_reset(ended);
        let mut r = rtts.summary(&Context {
            sent,
            not_sent,
            ..self.rtt
        });
        r.checks.preflight_wkc.clone_from(&self.preflight_wkc);
        r.path = self.nic.path.name().to_string();
        r.xdp.clone_from(&self.xdp);
        if let Some(s) = &mut r.stamps {
            s.why_software.clone_from(&self.stamps_why);
        }
        r
    }

    /// A checkpoint: the series and the round trips so far.
    pub(super) fn partial(
        &self,
        s: &Session,
        cs: &[Collector],
        rtts: &RttCollector,
        shared: &Shared,
    ) -> RunResult {
        let mut rtt = self.summary(rtts, false);
        let series = self.with_arrival(
            cs.iter().map(Collector::summary).collect(),
            &mut rtt,
            shared,
            (None, None),
        );
        let m = Measured {
            series,
            rtt: Some(rtt),
            duration_s: round3(s.elapsed_s()),
            error: None,
        };
        self.header.result(m, &s.so_far())
    }

    /// The arrival line into `rtt`, and the arrival series kept only when it was measured: a run without it has
    /// the series it always had.
    fn with_arrival(
        &self,
        mut series: Vec<SeriesSummary>,
        rtt: &mut RttSummary,
        shared: &Shared,
        (drift, sync0): (Option<f64>, Option<Sync0Report>),
    ) -> Vec<SeriesSummary> {
        let at = series.iter().position(|x| x.label == super::ARRIVAL);
        let report = match (self.nic.mode, at) {
            (Mode::Ecat, Some(i)) => {
                let c = shared.arrival.counts(series[i].count);
                let mut r = ArrivalReport::of(c, frame::ARRIVAL_BYTES as u32, drift);
                r.sync0 = sync0.filter(|_| r.measured);
                r
            }
            (Mode::Ecat, None) => ArrivalReport::off("not measured: left out (--no-arrival)"),
            (m, _) => ArrivalReport::off(&format!(
                "not measured: {} frames carry no EtherCAT datagram to read a SubDevice's clock",
                m.name()
            )),
        };
        if let (false, Some(i)) = (report.measured, at) {
            series.remove(i);
        }
        rtt.arrival = Some(report);
        series
    }

    /// The run's result once both threads have ended. When the replies stopped: verdict incomplete, with `error`,
    /// if this machine's interface went away, else the dropout is a shortfall in the round trips.
    pub(super) fn at_end(
        &self,
        series: Vec<SeriesSummary>,
        rtts: &RttCollector,
        (ended, drift, sync0): (&sampler::Ended, Option<f64>, Option<Sync0Report>),
        shared: &Shared,
        s: &Ended,
    ) -> RunResult {
        let stopped = shared.dead.load(Relaxed).then(|| {
            let c = Counts {
                matched: shared.matched.load(Relaxed),
                sent: shared.sent.load(Relaxed),
                refused: shared.send_errors.load(Relaxed),
                ring_full: shared.ring_full.load(Relaxed),
                errno: shared.send_errno.load(Relaxed),
            };
            let local = Local::of(crate::sys::netdev::flags(&self.nic.name), c.errno);
            stop::judge(&self.nic.name, local, &c)
        });
        let (error, dropout) = match stopped {
            Some(Err(e)) => (Some(e.to_string()), None),
            Some(Ok(d)) => (None, Some(d)),
            None => (None, None),
        };
        let mut rtt = self.summary(rtts, true);
        rtt.checks.dropout = dropout;
        if let Some(x) = &mut rtt.xdp {
            x.ring_full = shared.ring_full.load(Relaxed);
            // Left on the ring by a refused kick, less what never went out at all (counted as refused at the end).
            x.sent_late = shared
                .waited
                .load(Relaxed)
                .saturating_sub(shared.unsent_at_end.load(Relaxed));
        }
        let series = self.with_arrival(series, &mut rtt, shared, (drift, sync0));
        let m = Measured {
            series,
            rtt: Some(rtt),
            duration_s: round3(ended.elapsed_ns as f64 / 1e9),
            error,
        };
        self.header.result(m, s)
    }
}

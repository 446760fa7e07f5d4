//! NIC mode of `run`: a sender thread (the cyclic loop, one probe frame per period: send.rs) and a receiver thread
//! (higher priority, same core by default: recv.rs) that takes the replies, reads the transmit stamps back from the
//! error queue and matches them (rtt.rs); what the two share is shared.rs. Before any RT thread starts, the link
//! is set up and a preflight checks that something answers within 1 s (link.rs; UDP finds its peer by ARP:
//! arp.rs). The main thread starts the threads, supervises them (here) and builds the result (results.rs).

mod arp;
mod arrival;
mod link;
mod port;
mod recv;
mod results;
mod send;
mod shared;
mod stop;
mod xdp;

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::time::Duration;

use super::frame::Probe;
use super::interference::Counting;
use super::result::RunResult;
use super::rt::RtThread;
use super::rtt::Matcher;
use super::rtt_collect::{self, Handover};
use super::sampler::{self, Limits};
use super::series::Series;
use super::session::{Gauges, Session, Watch};
use super::spec::{Mode, NicSpec, Placement, RunSpec};
use crate::error::Result;
use crate::host::Host;
use crate::trace::marker::Marker;
use crate::trace::session::{Scope, Tracing};
use arrival::Arrival;
use link::Link;
use port::{RxPort, TxPort};
use recv::Receiver;
use results::Results;
use send::Sender;
use shared::Shared;

/// How long the preflight waits for a first answer, and how long replies may pause mid-run.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(1);

/// The NIC test: validated arguments in, the run's result out. When the replies stop mid-run: verdict incomplete,
/// with `error`, if this machine's interface went away; a dropout (fail) if the chain went silent (stop.rs).
pub(crate) fn run(
    host: &Host,
    args: &RunSpec,
    nic: &NicSpec,
    at: Placement,
    label: &str,
    watch: &mut dyn Watch,
) -> Result<RunResult> {
    // Declared first, so dropped last: after the threads are joined (the sockets, then the flags guard: see Link).
    let (mut link, mut probe) = Link::open(host, nic, at, watch)?;
    let (first_seq, answers) = link.preflight(&mut probe, nic.mode)?;
    let (learned, disagreed) = link::learn_wkc(&answers.wkc);
    if let (Some(note), None, Mode::Ecat) = (&disagreed, nic.round_trip.expect_wkc, nic.mode) {
        watch.note(note);
    }
    let mut session = Session::begin(host, args, watch)?;
    let (tracing, marker) = start_tracing(host, args, &nic.name, at)?;
    let shared = Arc::new(Shared::new(first_seq, link.tag));
    let mut sender = Series::new("Sender", args.period_us, args.bucket_width_us);
    let mut receiver = Series::new("Receiver", args.period_us, args.bucket_width_us);
    let mut arrival = probe
        .has_arrival()
        .then(|| Series::new(ARRIVAL, args.period_us, args.bucket_width_us));
    let mut all: Vec<&mut Series> = vec![&mut sender, &mut receiver];
    all.extend(arrival.as_mut());
    let mut collectors = session.collectors(&mut all);
    let results = Results::new((args, nic), at, label, &link, (&answers, learned), &sender);
    let gauges = gauges(args, [&sender, &receiver], arrival.as_ref(), &shared);
    let (hand, mut rtts) = rtt_collect::pair(frames_sent(&shared));
    let ports = link
        .take_ports()
        .ok_or_else(|| crate::error::Error::failed("the run's sockets were already taken"))?;
    let threads = Threads::start(
        &results,
        ports,
        probe,
        &shared,
        (sender, receiver, arrival.map(Arrival::new)),
        hand,
        marker,
    );
    let threads = match threads {
        Ok(t) => t,
        Err(e) => {
            drop(tracing.map(Tracing::finish));
            return Err(e);
        }
    };
    // The interference counters on the RT (sender) core, as in the cyclic run.
    let mut counting = Counting::new(watch, host, at.core, args.counters);
    let stop = session.stop_flag();
    session.supervise(
        &[at.core, at.receive_cpu],
        gauges,
        &mut collectors,
        &mut rtts,
        &mut counting,
        |s, cs, rtts| results.partial(s, cs, rtts, &shared),
        || {
            if stop.load(Relaxed) {
                shared.halt.store(true, Relaxed);
            }
            threads.finished()
        },
    );
    let counted = counting.counters.report;
    let (sent, received) = threads.join(&shared);
    let trace = tracing.map(Tracing::finish);
    let ((sender, ended), (receiver, m, rtt_epoch, arrival)) = (sent?, received?);
    let drift = arrival.as_ref().and_then(|a| a.fit.drift_ppm());
    let mut all = vec![sender, receiver];
    all.extend(arrival.map(|a| a.series));
    let series = session.finish_series(collectors, all);
    let s = session.finish();
    if let Some(e) = &s.hlog_error {
        watch.note(e);
    }
    rtts.finish(m, rtt_epoch);
    let mut r = results.at_end(series, &rtts, (&ended, drift), &shared, &s);
    r.interference = args
        .counters
        .then(|| super::cyclic::settle(host, args, at, counted, None));
    r.trace = trace;
    if let (Some(st), Some(rtt)) = (&link.steering, r.rtt.as_mut()) {
        rtt.queue = Some(st.report(shared.sent.load(Relaxed), shared.matched.load(Relaxed)));
    }
    Ok(r)
}

/// --trace: every CPU, set up before the threads start; the receiver marks each reply (one write a reply), the
/// sender each frame before send() (a clone of the marker).
fn start_tracing(
    host: &Host,
    args: &RunSpec,
    nic: &str,
    at: Placement,
) -> Result<(Option<Tracing>, Option<Marker>)> {
    if !args.trace {
        return Ok((None, None));
    }
    let scope = Scope::Receive {
        nic: nic.to_string(),
        core: at.core,
        receive_cpu: at.receive_cpu,
    };
    let (t, m) = Tracing::start(host, scope, args.break_us)?;
    Ok((Some(t), Some(m)))
}

/// The label of the arrival series.
pub(crate) const ARRIVAL: &str = "Arrival";

/// The live view's counters: the series, and the round-trip line.
fn gauges(
    args: &RunSpec,
    [sender, receiver]: [&Series; 2],
    arrival: Option<&Series>,
    shared: &Arc<Shared>,
) -> Gauges {
    let extra = Arc::clone(shared);
    let mut series = vec![
        ("Sender".into(), sender.live()),
        ("Receiver".into(), receiver.live()),
    ];
    series.extend(arrival.map(|a| (ARRIVAL.into(), a.live())));
    Gauges {
        period_us: args.period_us,
        bucket_width_us: args.bucket_width_us,
        series,
        periods_us: Vec::new(),
        extra: Some(Box::new(move || extra.live_line())),
    }
}

/// Frames (sent, not sent) so far, for the round trips' collector.
fn frames_sent(shared: &Arc<Shared>) -> Box<dyn Fn() -> (u64, u64)> {
    let counted = Arc::clone(shared);
    Box::new(move || (counted.sent.load(Relaxed), counted.not_sent()))
}

/// What the sender returns: its series and how its loop ended.
type Sent = (Series, sampler::Ended);
/// What the receiver returns: its series, the matcher with the last interval of round trips, that interval's
/// reset generation, and the arrival series with its line.
type Received = (Series, Matcher, u64, Option<Arrival>);

/// The two RT threads of a run.
struct Threads {
    tx: RtThread<Sent>,
    rx: RtThread<Received>,
}

impl Threads {
    /// The receiver first, then the sender (with the series of each); when the sender cannot start, the
    /// receiver is stopped again. `marker` (--trace) goes to the receiver, a clone of it to the sender.
    fn start(
        results: &Results,
        (tx, rx): (TxPort, RxPort),
        probe: Probe,
        shared: &Arc<Shared>,
        (sender, receiver, arrival): (Series, Series, Option<Arrival>),
        hand: Handover,
        marker: Option<Marker>,
    ) -> Result<Threads> {
        let (args, at, nic) = (results.header.spec, results.header.at, results.nic);
        let sender = Sender {
            port: tx,
            probe,
            mode: nic.mode,
            shared: Arc::clone(shared),
            series: sender,
            limits: Limits::of(args),
            marker: marker.as_ref().and_then(|m| m.try_clone().ok()),
        };
        let receiver = Receiver {
            port: rx,
            mode: nic.mode,
            budget_ns: results.rtt.budget_ns,
            expect_wkc: results.rtt.expect_wkc,
            shared: Arc::clone(shared),
            series: receiver,
            arrival,
            hand,
            marker,
        };
        let rx = receiver.spawn(at.receive_cpu, args.receive_priority)?;
        match sender.spawn(at.core, args.send_priority) {
            Ok(tx) => Ok(Threads { tx, rx }),
            Err(e) => {
                shared.halt.store(true, Relaxed);
                shared.sender_done.store(true, Relaxed);
                let _ = rx.join();
                Err(e)
            }
        }
    }

    fn finished(&self) -> bool {
        self.tx.is_finished() && self.rx.is_finished()
    }

    /// What each thread returned. When the sender failed (a panic), the receiver is told it is done (it drains for
    /// at most 200 ms) and joined all the same: no thread holds a socket once the link drops.
    fn join(self, shared: &Shared) -> (Result<Sent>, Result<Received>) {
        let tx = self.tx.join();
        if tx.is_err() {
            shared.sender_done.store(true, Release);
        }
        (tx, self.rx.join())
    }
}

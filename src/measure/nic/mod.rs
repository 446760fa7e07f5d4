//! NIC mode of `run`: a sender thread (the cyclic loop, one probe frame per period: send.rs) and a receiver thread
//! (higher priority, same core by default: recv.rs) that takes the replies, reads the transmit stamps back from the
//! error queue and matches them (rtt/); what the two share is shared.rs. Before any RT thread starts, the link
//! is set up and a preflight checks that something answers within 1 s (link.rs; UDP finds its peer by ARP:
//! arp.rs). The main thread starts the threads, supervises them (here) and builds the result (results.rs).

mod arp;
mod arrival;
pub(crate) mod frame;
pub(crate) mod ipv4;
mod link;
pub mod netif;
mod port;
pub(crate) mod queue;
pub(crate) mod rawsock;
mod recv;
mod results;
pub(crate) mod rtt;
mod send;
mod shared;
mod stop;
pub mod tstamp;
mod xdp;

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::time::Duration;

use super::result::RunResult;
use super::session::{Gauges, Session, Setup, StopOnSignal, Watch};
use super::spec::{Mode, NicSpec, Placement, RunSpec};
use crate::error::Result;
use crate::host::Host;
use crate::measure::cyclic::sampler::{self, Limits};
use crate::measure::cyclic::series::Series;
use crate::measure::interference::smi::LocalSmi;
use crate::measure::session::rt::RtThread;
use crate::trace::marker::Marker;
use crate::trace::session::Scope;
use arrival::Arrival;
use frame::Probe;
use link::Link;
use port::{RxPort, TxPort};
use recv::Receiver;
use results::Results;
use rtt::Matcher;
use rtt::collect::Handover;
use send::Sender;
use shared::NicShared;

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
    // Before the first change to the interface, and dropped after the link: a signal during the setup, the
    // preflight or the putting back ends the run through the drops below instead of killing the process.
    let signals = StopOnSignal::install()?;
    // Declared before the threads, so dropped after them (the sockets, then the flags guard: see Link).
    let (mut link, mut probe) = Link::open(nic, at, watch)?;
    let (first_seq, answers) = link.preflight(&mut probe, nic.mode, &signals)?;
    let (learned, disagreed) = link::learn_wkc(&answers.wkc);
    if let (Some(note), None, Mode::Ecat) = (&disagreed, nic.round_trip.expect_wkc, nic.mode) {
        watch.note(note);
    }
    let setup = Setup {
        rt_cpus: vec![at.core, at.receive_cpu],
        core: at.core,
        trace: args.trace.then(|| Scope::Receive {
            nic: nic.name.clone(),
            core: at.core,
            receive_cpu: at.receive_cpu,
        }),
        signals: Some(signals.share()),
    };
    let mut session = Session::begin(host, args, setup, watch)?;
    let marker = session.take_marker();
    let smi = session.smi_reader(args.period_us);
    let shared = Arc::new(NicShared::new(first_seq, link.tag));
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
    let (hand, mut rtts) = rtt::collect::pair(frames_sent(&shared));
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
        (marker, smi),
    )?;
    let stop = session.stop_flag();
    session.supervise(
        gauges,
        &mut collectors,
        &mut rtts,
        watch,
        |s, cs, rtts| results.partial(s, cs, rtts, &shared),
        || {
            if stop.load(Relaxed) {
                shared.halt.store(true, Relaxed);
            }
            threads.finished()
        },
    );
    let (sent, received) = threads.join(&shared);
    let trace = session.finish_trace();
    let counted = session.take_counters().map(|c| c.into_report());
    let ((sender, ended), (receiver, m, rtt_epoch, arrival)) = (sent?, received?);
    let drift = arrival.as_ref().and_then(|a| a.fit.drift_ppm());
    let sync0 = arrival
        .as_ref()
        .and_then(|a| a.sync0.report(nic.sync0_shift_us, args.period_us));
    let mut all = vec![sender, receiver];
    all.extend(arrival.map(|a| a.series));
    let series = session.finish_series(collectors, all);
    let s = session.finish();
    if let Some(e) = &s.hlog_error {
        watch.note(e);
    }
    rtts.finish(m, rtt_epoch);
    let mut r = results.at_end(series, &rtts, (&ended, drift, sync0), &shared, &s);
    r.interference = counted
        .filter(|_| args.counters)
        .map(|c| super::cyclic::settle(host, args, at, c, None))
        .map(|mut i| {
            if at.receive_cpu == at.core {
                i.settle_receiver();
            }
            i
        });
    r.trace = trace;
    r.name_ipi_senders();
    if let (Some(st), Some(rtt)) = (&link.steering, r.rtt.as_mut()) {
        rtt.queue = Some(st.report(shared.sent.load(Relaxed), shared.matched.load(Relaxed)));
    }
    Ok(r)
}

/// Whether the SubDevice answers on `nic`: the link a run opens and its preflight (a first valid reply within 1 s,
/// then a few more), then everything put back. Nothing is measured. qualify asks this before it changes anything;
/// Ok: the working counter the replies agree on. What the link has to say (a leftover it put back, replies that
/// disagreed) goes to `note`, also when nothing answers.
pub(crate) fn answers(nic: &NicSpec, at: Placement, note: &mut dyn FnMut(&str)) -> Result<u16> {
    let signals = StopOnSignal::install()?;
    let mut notes = Notes(note);
    let (mut link, mut probe) = Link::open(nic, at, &mut notes)?;
    let (_, answers) = link.preflight(&mut probe, nic.mode, &signals)?;
    let (learned, disagreed) = link::learn_wkc(&answers.wkc);
    if let (Some(d), Mode::Ecat) = (disagreed, nic.mode) {
        notes.note(&d);
    }
    Ok(learned)
}

/// The link's notes while nothing is measured (no live view to show them in), handed on as they come.
struct Notes<'a>(&'a mut dyn FnMut(&str));

impl Watch for Notes<'_> {
    fn note(&mut self, text: &str) {
        (self.0)(text);
    }
    fn start(&mut self, _: Gauges) {}
    fn interval(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn tick(&mut self, _: Duration) -> super::session::ViewAction {
        super::session::ViewAction::Go
    }
    fn end(&mut self) {}
}

/// The label of the arrival series.
pub(crate) const ARRIVAL: &str = "Arrival";

/// The live view's counters: the series, and the round-trip line.
fn gauges(
    args: &RunSpec,
    [sender, receiver]: [&Series; 2],
    arrival: Option<&Series>,
    shared: &Arc<NicShared>,
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
fn frames_sent(shared: &Arc<NicShared>) -> Box<dyn Fn() -> (u64, u64)> {
    let counted = Arc::clone(shared);
    Box::new(move || (counted.sent.load(Relaxed), counted.not_sent()))
}

/// What the sender returns: its series and how its loop ended.
type Sent = (Series, sampler::LoopEnd);
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
    /// receiver is stopped again. `marker` (--trace) goes to the receiver, a clone of it to the sender; the RT
    /// core's SMI counter to the sender, which runs on it.
    fn start(
        results: &Results,
        (tx, rx): (TxPort, RxPort),
        probe: Probe,
        shared: &Arc<NicShared>,
        (sender, receiver, arrival): (Series, Series, Option<Arrival>),
        hand: Handover,
        (marker, smi): (Option<Marker>, Option<LocalSmi>),
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
            smi,
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
    fn join(self, shared: &NicShared) -> (Result<Sent>, Result<Received>) {
        let tx = self.tx.join();
        if tx.is_err() {
            shared.sender_done.store(true, Release);
        }
        (tx, self.rx.join())
    }
}

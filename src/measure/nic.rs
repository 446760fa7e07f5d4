//! NIC mode of `run`: a sender thread (the cyclic loop, one probe frame per period) and a receiver thread (higher
//! priority, same core by default) that takes the replies, reads the transmit stamps back from the error queue and
//! matches them (rtt.rs). Before any RT thread starts, a preflight checks that something answers within 1 s.

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::time::{Duration, Instant};

use super::frame::{self, Addrs, Probe, Reply};
use super::nic_recv::{self, Shared};
use super::rawsock::RawSocket;
use super::result::{EscId, RunResult, Verdict};
use super::rtt_collect::{self, RttCollector};
use super::sampler::{self, Limits};
use super::series::{Series, round3};
use super::session::{Gauges, Session, Watch};
use super::spec::{Mode, Placement, RunMode, RunSpec};
use super::tstamp::TsKind;
use super::{netif, nic_arp, rt};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::sys::{clock, netdev};
/// How long the preflight waits for a first answer, and how long replies may pause mid-run.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(1);

/// Whoever should answer, named for the error message.
fn answerer(mode: Mode, nic: &str) -> String {
    match mode {
        Mode::Ecat => format!("no EtherCAT SubDevice answered on {nic}"),
        Mode::Raw => format!("no raw echo (EtherType 0x88B5) answered on {nic}"),
        Mode::Udp => format!("no UDP echo (port 7) answered on {nic}"),
    }
}

/// Sends a probe every 20 ms for up to 1 s until one valid reply comes back (for EtherCAT: processed by at least
/// one SubDevice); returns the next sequence number and that reply. Runs before the RT threads, so it may take its
/// time.
fn preflight(
    txs: &RawSocket,
    sock: &RawSocket,
    probe: &mut Probe,
    mode: Mode,
) -> Result<(u32, Reply)> {
    let start = Instant::now();
    let mut seq = 0u32;
    let mut buf = [0u8; frame::MAX_FRAME + 64];
    while start.elapsed() < ANSWER_TIMEOUT {
        probe.set_seq(seq);
        seq += 1;
        if let Err(e) = txs.send(probe.frame()) {
            return Err(Error::sys(format!("sending on {}", sock.name()), e));
        }
        let until = Instant::now() + Duration::from_millis(20);
        while Instant::now() < until {
            let left = until.saturating_duration_since(Instant::now()).as_millis() as i32;
            sock.wait(left.max(1)).map_err(|e| Error::sys("poll", e))?;
            while txs.recv(&mut buf, true, true).is_ok() {}
            while let Ok(r) = sock.recv(&mut buf, false, true) {
                if let Ok(reply) = frame::parse_reply(mode, &buf[..r.len])
                    && reply.seq < seq
                    && (mode != Mode::Ecat || reply.wkc > 0)
                {
                    return Ok((seq, reply));
                }
            }
        }
    }
    let why = match mode {
        Mode::Ecat => {
            "is a drive connected and powered? `rmp-eval reflect --nic IF` on the other end stands in for one"
        }
        _ => "is `rmp-eval reflect` running on the other end?",
    };
    Err(Error::failed(format!(
        "{} within 1 s ({why})",
        answerer(mode, sock.name())
    )))
}

/// The NIC test: validated arguments in, the run's result out (verdict incomplete, with `error`, when the replies
/// stopped mid-run).
pub(crate) fn run(
    host: &Host,
    args: &RunSpec,
    at: Placement,
    label: &str,
    watch: &mut dyn Watch,
) -> Result<RunResult> {
    let Placement { core, receive_cpu } = at;
    let nic = args.nic.as_deref().unwrap_or_default();
    crate::sys::ifname::validate(nic)?;
    if !host.is_live() {
        return Err(Error::usage("--nic measures the live machine: drop --root"));
    }
    netdev::ifindex(nic)?;
    let mode = args.mode;
    let mac =
        netdev::mac(nic).map_err(|e| Error::sys(format!("reading the MAC address of {nic}"), e))?;
    let mtu = netdev::mtu(nic).map_err(|e| Error::sys(format!("reading the MTU of {nic}"), e))?;
    let wire = frame::wire_len(mode, args.pktlen, mtu).map_err(Error::usage)?;
    if !netdev::is_up(nic) {
        return Err(Error::failed(format!(
            "{nic} is down (ip link set {nic} up)"
        )));
    }
    let rt_opts = args.round_trip;
    let mut addrs = Addrs::broadcast(mac);
    // UDP: the echo peer's MAC by ARP, and ARP for our address answered for as long as the run lasts.
    let _arp = if mode == Mode::Udp {
        let (peer_mac, arp) = nic_arp::resolve(nic, mac, rt_opts.local_ip, rt_opts.peer_ip)?;
        addrs = Addrs {
            mac,
            peer_mac,
            ip: rt_opts.local_ip.octets(),
            peer_ip: rt_opts.peer_ip.octets(),
        };
        Some(nic_arp::Responder::start(arp, mac, rt_opts.local_ip)?)
    } else {
        None
    };
    let mut probe = Probe::new(mode, &addrs, wire);
    // Before the socket, so that it is dropped after it (see FlagsGuard). Promiscuous mode is never needed here:
    // EtherCAT replies come back broadcast, raw and UDP echoes to this interface's own MAC address.
    let _flags = netif::FlagsGuard::new(nic)?;
    // Two sockets: the sender's sends and gets its transmit stamps back on its error queue; the receiver's only
    // receives. Sharing one would wake the receiver for every transmit stamp, right when the frame leaves.
    let mut txs = RawSocket::open(nic, 0)?;
    for note in super::tstamp::restore_leftovers(host) {
        watch.note(&note);
    }
    let ts = txs.enable_timestamps(host)?;
    let sock = RawSocket::open(nic, frame::ethertype(mode))?;
    sock.set_timestamping(ts)?;
    let (first_seq, first) = preflight(&txs, &sock, &mut probe, mode)?;
    let expect_wkc = (mode == Mode::Ecat).then(|| rt_opts.expect_wkc.unwrap_or(first.wkc));
    let budget_ns = u64::from(rt_opts.budget_us.unwrap_or(args.period_us)) * 1000;
    sock.set_recv_timeout(Duration::from_millis(50))?;

    let mut session = Session::begin(host, args, watch)?;
    // --trace: every CPU, set up before the threads start; the receiver marks each reply (one write a reply).
    // The sender marks each frame before send() (a request with no reply is then found in the trace).
    let (tracing, marker, send_marker) = match args.trace {
        true => {
            let scope = crate::trace::session::Scope::Receive {
                nic: nic.to_string(),
                core,
                receive_cpu,
            };
            let (t, m) = crate::trace::session::Tracing::start(host, scope, args.break_us)?;
            let s = m.try_clone().ok();
            (Some(t), Some(m), s)
        }
        false => (None, None, None),
    };
    let sock = Arc::new(sock);
    let shared = Arc::new(Shared::new(first_seq));
    let mut sender = Series::new("Sender", args.period_us, args.bucket_width_us);
    let mut receiver = Series::new("Receiver", args.period_us, args.bucket_width_us);
    let mut collectors = session.collectors(&mut [&mut sender, &mut receiver]);
    let counted_sent = Arc::clone(&shared);
    let (hand, mut rtts) = rtt_collect::pair(Box::new(move || {
        (
            counted_sent.sent.load(Relaxed),
            counted_sent.send_errors.load(Relaxed),
        )
    }));
    let esc = (mode == Mode::Ecat).then_some(EscId {
        kind: first.esc[0],
        revision: first.esc[1],
    });
    let context = |(sent, not_sent)| rtt_collect::Context {
        sent,
        not_sent,
        hardware: ts == TsKind::Hardware,
        budget_ns,
        expect_wkc,
        esc,
    };
    let width_us = sender.bands().width_ns() as f64 / 1000.0;
    let extra = Arc::clone(&shared);
    let gauges = Gauges {
        period_us: args.period_us,
        bucket_width_us: args.bucket_width_us,
        series: vec![
            ("Sender".into(), sender.live()),
            ("Receiver".into(), receiver.live()),
        ],
        extra: Some(Box::new(move || extra.live_line())),
    };

    let rx = {
        let (sock, shared) = (Arc::clone(&sock), Arc::clone(&shared));
        rt::spawn_rt(
            "rmp-eval-recv",
            receive_cpu,
            args.receive_priority,
            move || {
                nic_recv::run(
                    &sock, mode, budget_ns, expect_wkc, &shared, receiver, hand, marker,
                )
            },
        )
    };
    let rx = match rx {
        Ok(rx) => rx,
        Err(e) => {
            drop(tracing.map(crate::trace::session::Tracing::finish));
            return Err(e);
        }
    };
    let plan = Limits::of(args);
    let tx = {
        let sh = Arc::clone(&shared);
        let mut sender = sender;
        let spawned = rt::spawn_rt("rmp-eval-send", core, args.send_priority, move || {
            let mut buf = [0u8; frame::MAX_FRAME + 64];
            // Software stamps are queued during send(), hardware ones a little later: each cycle takes what is there.
            let take_stamps = |buf: &mut [u8]| {
                while let Ok(r) = txs.recv(buf, true, true) {
                    if let (true, Some(seq)) = (r.stamps.tx, frame::probe_seq(mode, &buf[..r.len]))
                    {
                        sh.publish_tx(seq, r.stamps);
                    }
                }
            };
            let ended = sampler::run(&plan, &mut sender, &sh.halt, |w| {
                let i = w.index;
                // The stamps of the frames already sent first: after send() the CPU belongs to whatever answers
                // (a reflector woken on this core), so nothing else is done there.
                take_stamps(&mut buf);
                let seq = first_seq.wrapping_add(i as u32);
                probe.set_seq(seq);
                sh.user_tx[i as usize % sh.user_tx.len()].store(clock::realtime_ns(), Relaxed);
                // Counted before send(): the receiver (higher priority, same core) may take the TX stamp or even
                // the reply before send() returns here.
                sh.sent.store(i + 1, Relaxed);
                if let Some(mk) = &send_marker {
                    mk.mark_send(i);
                }
                if txs.send(probe.frame()).is_err() {
                    sh.send_errors.fetch_add(1, Relaxed);
                }
            });
            std::thread::sleep(Duration::from_millis(1));
            take_stamps(&mut buf);
            sh.sender_done.store(true, Release);
            (sender, ended)
        });
        match spawned {
            Ok(t) => t,
            Err(e) => {
                shared.halt.store(true, Relaxed);
                shared.sender_done.store(true, Relaxed);
                let _ = rx.join();
                drop(tracing.map(crate::trace::session::Tracing::finish));
                return Err(e);
            }
        }
    };
    // A checkpoint has the series and the round trips so far.
    let partial = |s: &Session, cs: &[super::collect::Collector], rtts: &RttCollector| {
        let e = s.so_far();
        let series: Vec<_> = cs.iter().map(|c| c.summary()).collect();
        let rtt = rtts.summary(&context(rtts.sent_since_reset(false)));
        RunResult {
            period_us: args.period_us,
            duration_s: round3(s.elapsed_s()),
            mode: RunMode::Nic(mode),
            verdict: RunResult::judge(&series, Some(&rtt)),
            series,
            rtt: Some(rtt),
            bucket_width_us: width_us,
            started: e.started,
            label: label.to_string(),
            core: Some(core),
            priority: Some(args.send_priority),
            kernel: super::measured_kernel(),
            interrupted: e.interrupted,
            dma_latency_held: e.dma_latency_held,
            error: None,
            checkpoint: true,
            reset_at: e.reset_at,
            resets: e.resets,
            identity: None,
            load: None,
            interference: None,
            trace: None,
        }
    };
    let halt = Arc::clone(&shared);
    let stop = session.stop_flag();
    // The interference counters on the RT (sender) core, as in the cyclic run.
    let mut counting = super::interference::Counting {
        inner: watch,
        counters: match args.counters {
            true => super::interference::Counters::new(host, core),
            false => super::interference::Counters::new(host, core).off(),
        },
    };
    session.supervise(
        &[core, receive_cpu],
        gauges,
        &mut collectors,
        &mut rtts,
        &mut counting,
        partial,
        || {
            if stop.load(Relaxed) {
                halt.halt.store(true, Relaxed);
            }
            tx.is_finished() && rx.is_finished()
        },
    );
    let counted = counting.counters.report;
    let (sender, ended) = tx.join()?;
    let joined = rx.join();
    let trace = tracing.map(crate::trace::session::Tracing::finish);
    let (receiver, m, rtt_epoch) = joined?;
    let series = session.finish_series(collectors, vec![sender, receiver]);
    let s = session.finish();
    if let Some(e) = &s.hlog_error {
        watch.note(e);
    }

    rtts.finish(m, rtt_epoch);
    let rtt = rtts.summary(&context(rtts.sent_since_reset(true)));
    let (sent, matched) = (shared.sent.load(Relaxed), shared.matched.load(Relaxed));
    let dead = shared.dead.load(Relaxed);
    let error = dead.then(|| {
        format!(
            "replies stopped on {nic} after {matched} of {sent} frames (nothing for {} s)",
            ANSWER_TIMEOUT.as_secs()
        )
    });
    let interference = args
        .counters
        .then(|| super::cyclic::settle(host, args, at, counted, None));
    Ok(RunResult {
        period_us: args.period_us,
        duration_s: round3(ended.elapsed_ns as f64 / 1e9),
        mode: RunMode::Nic(mode),
        verdict: if dead {
            Verdict::Incomplete
        } else {
            RunResult::judge(&series, Some(&rtt))
        },
        series,
        rtt: Some(rtt),
        bucket_width_us: width_us,
        started: s.started,
        label: label.to_string(),
        core: Some(core),
        priority: Some(args.send_priority),
        kernel: super::measured_kernel(),
        interrupted: s.interrupted,
        dma_latency_held: s.dma_latency_held,
        error,
        checkpoint: false,
        reset_at: s.reset_at,
        resets: s.resets,
        identity: None,
        load: None,
        interference,
        trace,
    })
}

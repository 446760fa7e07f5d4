//! A NIC run's link, set up before any RT thread starts: the interface checked (a valid name, the live machine, an
//! Ethernet port, its MAC, its MTU against --pktlen, up), for UDP the peer's MAC by ARP and a responder for our own
//! address, the flags guard, the two sockets with their timestamps; then a preflight that something answers within
//! 1 s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ANSWER_TIMEOUT;
use super::arp::{self, Responder};
use super::port::{RxPort, TxPort};
use super::xdp::{self, XdpPath};
use crate::corelock::CoreLock;
use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::frame::{self, Addrs, Probe, Reply};
use crate::measure::netif::FlagsGuard;
use crate::measure::nic::tstamp::{self, TsKind};
use crate::measure::queue::{self, Steering};
use crate::measure::rawsock::RawSocket;
use crate::measure::session::{StopOnSignal, Watch};
use crate::measure::spec::{Mode, NicPath, NicSpec, Placement};
use crate::remedy::Suggested;
use crate::sys::{ifname, netdev};

/// The run's open sockets and the guards that must outlive them.
///
/// Fields drop in declaration order, and here the order matters: the sockets close first (AF_PACKET's two, or the
/// AF_XDP path: its program detached, its record removed), then the ARP responder (with its own socket), then the
/// queue steering, and the flags guard goes last. It puts the promiscuous and all-multicast flags
/// back only when they still differ after every socket of the run is closed — a socket's promiscuous membership ends
/// when the socket closes, so what is left then is someone's leftover (see `netif::FlagsGuard`). Keep `_flags` after
/// the sockets, and the NIC's lock last (released once all is put back). The RT threads hold the sockets (clones of
/// the AF_PACKET sockets' `Arc`s, or the AF_XDP socket's halves); `nic::run` joins them before the link drops.
pub(super) struct Link {
    pub(super) ports: Ports,
    /// UDP: answers ARP for our address for as long as the run lasts.
    _arp: Option<Responder>,
    /// --txq/--rxq: the queues' XPS masks and flow rule, put back after every socket is closed.
    pub(super) steering: Option<Steering>,
    /// Promiscuous mode is never needed here: EtherCAT replies come back broadcast, raw and UDP echoes to this
    /// interface's own MAC address. The guard undoes what someone else changed meanwhile.
    _flags: FlagsGuard,
    /// What the sockets are stamped with.
    pub(super) stamps: TsKind,
    /// Why not hardware stamps, when software ones are used.
    pub(super) stamps_why: Option<String>,
    /// This run's tag, in every probe's mark.
    pub(super) tag: u32,
    /// One run per NIC (`corelock::nic_exclusive`).
    _lock: Option<CoreLock>,
}

/// The sockets of one path.
pub(super) enum Ports {
    Packet {
        /// The sender's: it sends, and gets its transmit stamps back on its error queue.
        txs: Arc<RawSocket>,
        /// The receiver's: it only receives. Sharing one socket would wake the receiver for every transmit
        /// stamp, right when the frame leaves.
        rxs: Arc<RawSocket>,
    },
    /// The AF_XDP socket and its program (`--path af_xdp`).
    Xdp(Box<XdpPath>),
}

impl Link {
    /// Checks the interface `args` names and opens the link; returns it with the probe to send (addressed, of the
    /// length asked for). Notes for the user (hardware timestamps a crashed run left on) go to `watch`.
    pub(super) fn open(
        args: &NicSpec,
        at: Placement,
        watch: &mut dyn Watch,
    ) -> Result<(Link, Probe)> {
        let nic = args.name.as_str();
        ifname::validate(nic)?;
        // The interface is the running machine's, as the RT core is: under --root (qualify on a tree) the tree
        // stands in for the checks and fix steps only, and holds nothing the link reads, locks or puts back.
        let host = &Host::live();
        netdev::ifindex(nic)?;
        if let Some(why) = crate::machine::net::kind(host, nic).refusal(nic) {
            return Err(Error::usage(why));
        }
        let key = crate::machine::net::nic_key(host, nic)?;
        let lock = crate::corelock::nic_exclusive(host, nic, &key)?;
        let mac = netdev::mac(nic)
            .map_err(|e| Error::sys(format!("reading the MAC address of {nic}"), e))?;
        let mtu =
            netdev::mtu(nic).map_err(|e| Error::sys(format!("reading the MTU of {nic}"), e))?;
        let wire = frame::wire_len(args.mode, args.pktlen, mtu)?;
        if !netdev::is_up(nic) {
            return Err(Error::failed(format!(
                "{nic} is down (ip link set {nic} up)"
            )));
        }
        let (addrs, arp) = peer(nic, mac, args)?;
        let tag = frame::run_tag();
        let probe = if args.arrival {
            Probe::with_arrival(args.mode, &addrs, wire, tag)
        } else {
            Probe::new(args.mode, &addrs, wire, tag)
        };
        // Before the sockets, as in the struct: on an error below, they close before it drops.
        let flags = FlagsGuard::new(nic)?;
        for note in queue::restore_leftovers(host) {
            watch.note(&note);
        }
        let steering = Steering::apply(host, args, at.core, &key)?;
        // On either path: a killed af_xdp run's program would take the probe's replies from an AF_PACKET run too.
        if let Some(note) = xdp::restore_leftover(host, nic, &key) {
            watch.note(&note);
        }
        let (ports, (stamps, stamps_why)) = match args.path {
            NicPath::AfPacket => packet_ports(host, (nic, &key), args, watch)?,
            NicPath::AfXdp => {
                let queue = u32::from(args.rxq.unwrap_or(0));
                let x = XdpPath::open(host, (nic, &key), frame::ethertype(args.mode), queue)?;
                let why =
                    "AF_XDP frames carry no socket timestamps: the clock is read in user space"
                        .to_string();
                (Ports::Xdp(Box::new(x)), (TsKind::Software, Some(why)))
            }
        };
        let link = Link {
            ports,
            _arp: arp,
            steering,
            _flags: flags,
            stamps,
            stamps_why,
            tag,
            _lock: lock,
        };
        Ok((link, probe))
    }

    /// The threads' sides of the sockets: clones of the AF_PACKET sockets, or the AF_XDP socket's halves (taken:
    /// a second call has none).
    pub(super) fn take_ports(&mut self) -> Option<(TxPort, RxPort)> {
        match &mut self.ports {
            Ports::Packet { txs, rxs } => Some((
                TxPort::Packet(Arc::clone(txs)),
                RxPort::Packet(Arc::clone(rxs)),
            )),
            Ports::Xdp(x) => x
                .halves
                .take()
                .map(|(tx, rx)| (TxPort::Xsk(tx), RxPort::Xsk(rx))),
        }
    }

    /// Sends a probe every 20 ms for up to 1 s until a valid reply comes back (for EtherCAT: processed by at
    /// least one SubDevice), then a few more at once, so that the working counter is learned from more than one
    /// reply; returns the next sequence number and the answers. Runs before the RT threads, so it may take its
    /// time. Then bounds the receiver's blocking reads: its loop looks at its flags between frames.
    /// A signal meanwhile ends it with an error: nothing was measured, and the link's drop puts back what it changed.
    pub(super) fn preflight(
        &mut self,
        probe: &mut Probe,
        mode: Mode,
        signals: &StopOnSignal,
    ) -> Result<(u32, Answers)> {
        test_seam_pause_preflight();
        let stopped = || {
            signals.stopped_by().map(|by| {
                Error::failed(format!(
                    "{} before the measurement began: nothing measured",
                    by.words()
                ))
            })
        };
        if let Some(e) = stopped() {
            return Err(e);
        }
        let mut seq = 0u32;
        let first = self.answer(probe, mode, &mut seq, ANSWER_TIMEOUT);
        let first = stopped().map_or(first, Err)?;
        let mut answers = Answers {
            first,
            wkc: vec![first.wkc],
        };
        while answers.wkc.len() < PREFLIGHT_REPLIES {
            match self.answer(probe, mode, &mut seq, Duration::from_millis(100)) {
                Ok(r) => answers.wkc.push(r.wkc),
                Err(_) => break,
            }
        }
        if let Some(e) = stopped() {
            return Err(e);
        }
        if let Ports::Packet { rxs, .. } = &self.ports {
            rxs.set_recv_timeout(Duration::from_millis(50))?;
        }
        Ok((seq, answers))
    }

    /// Sends probes (from sequence `seq` on, every 20 ms) until one of them is answered, for at most `limit`.
    fn answer(
        &mut self,
        probe: &mut Probe,
        mode: Mode,
        seq: &mut u32,
        limit: Duration,
    ) -> Result<Reply> {
        let tag = self.tag;
        let (txs, sock) = match &mut self.ports {
            Ports::Packet { txs, rxs } => (txs, rxs),
            Ports::Xdp(x) => return answer_xsk(x, probe, mode, tag, seq, limit),
        };
        let start = Instant::now();
        let mut buf = [0u8; frame::MAX_FRAME + 64];
        let from = *seq;
        while start.elapsed() < limit {
            probe.set_seq(*seq);
            *seq += 1;
            if let Err(e) = txs.send(probe.frame()) {
                return Err(send_refused(txs, sock.name(), probe.frame(), e));
            }
            let until = Instant::now() + Duration::from_millis(20);
            while Instant::now() < until {
                let left = until.saturating_duration_since(Instant::now()).as_millis() as i32;
                sock.wait(left.max(1)).map_err(|e| Error::sys("poll", e))?;
                while txs.recv(&mut buf, true, true).is_ok() {}
                while let Ok(r) = sock.recv(&mut buf, false, true) {
                    if let Some(reply) = valid(mode, &buf[..r.len], tag, from..*seq) {
                        return Ok(reply);
                    }
                }
            }
        }
        Err(no_answer(mode, sock.name()))
    }
}

/// A test seam (`test-seams` only, as fix/apply.rs's): with RMP_EVAL_TEST_PAUSE_PREFLIGHT=PATH, the preflight
/// writes PATH once the link is set up and waits until it is removed (at most 60 s), so that a test can signal the
/// run there: tests/nic/signalled_setup.rs.
#[cfg(feature = "test-seams")]
fn test_seam_pause_preflight() {
    let Some(flag) = std::env::var_os("RMP_EVAL_TEST_PAUSE_PREFLIGHT") else {
        return;
    };
    let _ = std::fs::write(&flag, "preflight\n");
    for _ in 0..600 {
        if !std::path::Path::new(&flag).exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_pause_preflight() {}

/// A reply the preflight takes: this run's tag, to one of its probes, and for EtherCAT processed by a SubDevice.
fn valid(mode: Mode, bytes: &[u8], tag: u32, seqs: std::ops::Range<u32>) -> Option<Reply> {
    frame::parse_reply(mode, bytes).ok().filter(|reply| {
        reply.tag == tag && seqs.contains(&reply.seq) && (mode != Mode::Ecat || reply.wkc > 0)
    })
}

/// `Link::answer` through the AF_XDP socket: the same probes and the same test of a reply.
fn answer_xsk(
    x: &mut XdpPath,
    probe: &mut Probe,
    mode: Mode,
    tag: u32,
    seq: &mut u32,
    limit: Duration,
) -> Result<Reply> {
    let nic = x.name().to_string();
    let Some((tx, rx)) = x.halves.as_mut() else {
        return Err(Error::failed(
            "the AF_XDP socket was already handed to the threads",
        ));
    };
    let start = Instant::now();
    let mut buf = [0u8; frame::MAX_FRAME + 64];
    let from = *seq;
    while start.elapsed() < limit {
        probe.set_seq(*seq);
        *seq += 1;
        tx.send(probe.frame())
            .map_err(|e| Error::sys(format!("sending on {nic} (AF_XDP)"), e))?;
        let until = Instant::now() + Duration::from_millis(20);
        while Instant::now() < until {
            let left = until.saturating_duration_since(Instant::now()).as_millis() as i32;
            match rx.recv(&mut buf, left.max(1)) {
                Ok(n) => {
                    if let Some(reply) = valid(mode, &buf[..n], tag, from..*seq) {
                        return Ok(reply);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(Error::sys("poll", e)),
            }
        }
    }
    Err(no_answer(mode, &nic))
}

/// The two AF_PACKET sockets with their timestamps (hardware where the NIC has them, after a killed run's
/// configuration is put back).
fn packet_ports(
    host: &Host,
    (nic, key): (&str, &str),
    args: &NicSpec,
    watch: &mut dyn Watch,
) -> Result<(Ports, (TsKind, Option<String>))> {
    let mut txs = RawSocket::open(nic, 0)?;
    if args.txq.is_some() {
        txs.bypass_qdisc()?;
    }
    if let Some(note) = tstamp::restore_leftover(host, nic, key) {
        watch.note(&note);
    }
    let (stamps, why) = txs.enable_timestamps(host)?;
    let mut rxs = RawSocket::open(nic, frame::ethertype(args.mode))?;
    rxs.stamp_received(stamps)?;
    let ports = Ports::Packet {
        txs: Arc::new(txs),
        rxs: Arc::new(rxs),
    };
    Ok((ports, (stamps, why)))
}

/// A probe the kernel refused to send. A veth (or macvlan) drops a frame longer than its far end allows (that
/// end's MTU + 14 for the header + 4 for a VLAN tag) with ENOBUFS: then the longest frame that passes names the
/// far end's MTU, found by sending shorter cuts of the probe (a cut frame is malformed, never answered).
fn send_refused(txs: &RawSocket, nic: &str, frame: &[u8], e: std::io::Error) -> Error {
    let fits = |n: usize| txs.send(&frame[..n]).is_ok();
    if e.raw_os_error() != Some(libc::ENOBUFS)
        || frame.len() <= frame::MIN_FRAME
        || !fits(frame::MIN_FRAME)
    {
        return Error::sys(format!("sending on {nic}"), e);
    }
    let (mut lo, mut hi) = (frame::MIN_FRAME, frame.len());
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // A queue that was merely full would let a longer frame through now.
    if fits(lo + 1) || lo < frame::MIN_FRAME + 18 {
        return Error::sys(format!("sending on {nic}"), e);
    }
    let mtu = lo - 18;
    Error::failed(format!(
        "sending on {nic}: {e}: frames of {} bytes are dropped on the way, up to {lo} pass: the far end's MTU is \
         {mtu} (a frame may be that + 14 header + 4 VLAN tag bytes) — give --pktlen {} or less, or raise the far \
         end's MTU",
        frame.len(),
        mtu + 14
    ))
}

/// Replies the preflight waits for: the working counter is learned from them.
const PREFLIGHT_REPLIES: usize = 5;

/// What the preflight got back: its first reply, and the working counters of every reply (the first included).
pub(super) struct Answers {
    pub(super) first: Reply,
    pub(super) wkc: Vec<u16>,
}

/// The working counter to expect, learned from the preflight's replies: their common value, else the one most of
/// them carried (the first on a tie) with a note that says they disagreed and how to say it (`--expect-wkc`).
pub(super) fn learn_wkc(seen: &[u16]) -> (u16, Option<String>) {
    let count = |w: u16| seen.iter().filter(|&&x| x == w).count();
    let Some(&best) = seen.iter().max_by_key(|&&w| {
        (
            count(w),
            std::cmp::Reverse(seen.iter().position(|&x| x == w)),
        )
    }) else {
        return (0, None);
    };
    if count(best) == seen.len() {
        return (best, None);
    }
    let list: Vec<String> = seen.iter().map(u16::to_string).collect();
    let first = if seen[0] == best {
        String::new()
    } else {
        format!("the first said {}, ", seen[0])
    };
    let note = format!(
        "the preflight's {} replies disagree on the working counter ({}): {first}expecting {best}, what {} of them \
         carried; if the chain has another number of SubDevices, give it with --expect-wkc N",
        seen.len(),
        list.join(", "),
        count(best)
    );
    (best, Some(note))
}

/// Where the probes go: broadcast (EtherCAT, raw) or, for UDP, the echo peer's MAC by ARP — with ARP for our
/// address answered for as long as the run lasts.
fn peer(nic: &str, mac: [u8; 6], args: &NicSpec) -> Result<(Addrs, Option<Responder>)> {
    if args.mode != Mode::Udp {
        return Ok((Addrs::broadcast(mac), None));
    }
    let rt = args.round_trip;
    let (peer_mac, sock) = arp::resolve(nic, mac, rt.local_ip, rt.peer_ip)?;
    let addrs = Addrs {
        mac,
        peer_mac,
        ip: rt.local_ip.octets(),
        peer_ip: rt.peer_ip.octets(),
    };
    Ok((addrs, Some(Responder::start(sock, mac, rt.local_ip)?)))
}

/// The preflight's error: whoever should have answered, and what to look at.
fn no_answer(mode: Mode, nic: &str) -> Error {
    let reflect = Suggested::Reflect { nic: None };
    let echo = format!("is `{reflect}` running on the other end?");
    let (who, why) = match mode {
        Mode::Ecat => (
            format!("no EtherCAT SubDevice answered on {nic}"),
            format!(
                "is a drive connected and powered? `{}` on the other end stands in for one",
                Suggested::Reflect { nic: Some("IF") }
            ),
        ),
        Mode::Raw => (
            format!("no raw echo (EtherType 0x88B5) answered on {nic}"),
            echo,
        ),
        Mode::Udp => (format!("no UDP echo (port 7) answered on {nic}"), echo),
    };
    Error::failed(format!("{who} within 1 s ({why})"))
}

#[cfg(test)]
mod tests {
    use super::learn_wkc;

    #[test]
    fn the_working_counter_is_what_the_preflight_replies_agree_on() {
        assert_eq!(learn_wkc(&[2, 2, 2, 2, 2]), (2, None));
        assert_eq!(learn_wkc(&[3]), (3, None));
        // Every tenth reply wrong, the first among them: the others win, and the note says so plainly.
        let (w, note) = learn_wkc(&[1, 2, 2, 2, 2]);
        assert_eq!(w, 2);
        let note = note.unwrap();
        assert!(
            note.contains("disagree on the working counter (1, 2, 2, 2, 2)"),
            "{note}"
        );
        assert!(
            note.contains("the first said 1, expecting 2") && note.contains("--expect-wkc"),
            "{note}"
        );
        // A tie goes to the value seen first.
        assert_eq!(learn_wkc(&[1, 2, 1, 2]).0, 1);
        assert_eq!(learn_wkc(&[]), (0, None));
    }
}

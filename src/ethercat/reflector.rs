//! `reflect`'s loop: frames received on one interface pass the chain of software SubDevices (esc) or are echoed
//! (echo), and go back out. It rides through link flaps and send/receive errors, counting them, and ends when it
//! is told to stop, after `count` answers, or when the interface is gone.

use std::io;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::echo::{Echo, Echoer, Skip};
use super::esc::{Chain, DcSpec};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::nic::frame::MAX_FRAME;
use crate::measure::nic::netif::FlagsGuard;
use crate::measure::nic::rawsock::{ETH_P_ALL, RawSocket};
use crate::measure::nic::tstamp::{Stamps, TsKind};
use crate::sys::netdev;

/// What the reflector is: where it answers, as how many SubDevices, for which IP address.
#[derive(Debug, Clone)]
pub(crate) struct ReflectorSetup {
    pub(crate) nic: String,
    pub(crate) subdevices: u16,
    pub(crate) station: u16,
    /// The SubDevices' distributed clocks (None: none).
    pub(crate) dc: Option<DcSpec>,
    pub(crate) ip: Ipv4Addr,
    pub(crate) promisc: bool,
}

/// What the reflector answered and what it could not.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) ecat: u64,
    pub(crate) raw: u64,
    pub(crate) udp: u64,
    pub(crate) arp: u64,
    /// Answers (an ESC's, another reflector's, an echo) seen and not answered again.
    pub(crate) answers: u64,
    pub(crate) ignored: u64,
    pub(crate) recv_errors: u64,
    pub(crate) send_errors: u64,
    pub(crate) last_error: Option<String>,
}

impl Counts {
    pub(crate) fn answered(&self) -> u64 {
        self.ecat + self.raw + self.udp
    }

    fn error(&mut self, send: bool, e: &io::Error) {
        if send {
            self.send_errors += 1;
        } else {
            self.recv_errors += 1;
        }
        self.last_error = Some(format!(
            "{} failed: {e}",
            if send { "send" } else { "receive" }
        ));
    }
}

/// The time a frame arrived, for the distributed clocks: its hardware stamp where the NIC stamps, else its software
/// one. A frame without it takes its software stamp (or CLOCK_REALTIME now) moved by the last frame's difference
/// between the two, so that the clocks never jump between time bases.
struct RxClock {
    hardware: bool,
    /// The last (chosen − software) difference.
    skew: i64,
}

impl RxClock {
    fn new(hardware: bool) -> RxClock {
        RxClock { hardware, skew: 0 }
    }

    fn of(&mut self, st: &Stamps) -> u64 {
        let sw = if st.sw_ns != 0 {
            st.sw_ns
        } else {
            crate::sys::clock::realtime_ns()
        };
        if self.hardware && st.hw_ns != 0 && st.sw_ns != 0 {
            self.skew = st.hw_ns as i64 - st.sw_ns as i64;
        }
        if self.hardware && st.hw_ns != 0 {
            return st.hw_ns;
        }
        sw.saturating_add_signed(self.skew)
    }
}

/// The reflector on its interface, ready to answer.
pub(crate) struct Reflector {
    // Declared before the socket so that it is dropped after it (see FlagsGuard).
    _flags: FlagsGuard,
    sock: RawSocket,
    /// Our own replies must not be read back as requests (where the socket cannot ignore them itself).
    skip_outgoing: bool,
    nic: String,
    echo: Echoer,
    clock: RxClock,
    /// Which receive stamps the distributed clocks run from.
    pub(crate) stamps: TsKind,
}

/// How a reflector's run ended: what it counted, the SubDevices' states, and the error that stopped it early.
#[derive(Debug)]
pub(crate) struct Reflected {
    pub(crate) counts: Counts,
    /// Each SubDevice's station address and AL status.
    pub(crate) states: Vec<(u16, u16)>,
    pub(crate) error: Option<Error>,
}

impl Reflector {
    /// Opens the interface (its flags kept and put back), the socket and its receive stamps, and locks memory as
    /// an RT loop does: every page resident before the first frame, nothing given back while it answers.
    pub(crate) fn open(host: &Host, s: &ReflectorSetup) -> Result<Reflector> {
        let name = s.nic.as_str();
        netdev::ifindex(name)?;
        let flags = FlagsGuard::new(name)?;
        let mut sock = RawSocket::open(name, ETH_P_ALL)?;
        let skip_outgoing = !sock.ignore_outgoing();
        if s.promisc {
            sock.join_promiscuous()?;
        }
        let mac = netdev::mac(name)
            .map_err(|e| Error::sys(format!("reading the MAC address of {name}"), e))?;
        sock.set_recv_timeout(Duration::from_millis(200))?;
        // The distributed clocks run from the receive stamps: the NIC's where it stamps, the kernel's otherwise.
        let (stamps, _) = sock.enable_rx_timestamps(host)?;
        let chain = Chain::with_dc(usize::from(s.subdevices), s.station, s.dc);
        crate::measure::session::rt::lock_memory()?;
        Ok(Reflector {
            _flags: flags,
            sock,
            skip_outgoing,
            nic: s.nic.clone(),
            echo: Echoer::new(chain, mac, s.ip.octets()),
            clock: RxClock::new(stamps == TsKind::Hardware),
            stamps,
        })
    }

    /// Answers until `stop`, `count` answers, or the interface is gone.
    pub(crate) fn run(mut self, stop: &AtomicBool, count: Option<u64>) -> Reflected {
        let mut c = Counts::default();
        let mut buf = [0u8; MAX_FRAME + 4];
        let mut error = None;
        while !stop.load(Ordering::Relaxed) && count.is_none_or(|n| c.answered() < n) {
            if let Err(e) = self.one(&mut buf, &mut c) {
                error = Some(e);
                break;
            }
        }
        let states = self
            .echo
            .chain
            .devices
            .iter()
            .map(|d| (d.station(), d.al_status()))
            .collect();
        Reflected {
            counts: c,
            states,
            error,
        }
    }

    /// Receives one frame (or times out) and answers it; an error only when the interface is gone.
    fn one(&mut self, buf: &mut [u8], c: &mut Counts) -> Result<()> {
        let r = match self.sock.recv(buf, false, false) {
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                return Ok(());
            }
            Err(e) => {
                // A link going down reports ENETDOWN once; a vanished interface never comes back.
                c.error(false, &e);
                if netdev::ifindex(&self.nic).is_err() {
                    let what = format!("receiving on {} (interface gone)", self.nic);
                    return Err(Error::sys(what, e));
                }
                std::thread::sleep(Duration::from_millis(20));
                return Ok(());
            }
        };
        if self.skip_outgoing && r.pkttype == libc::PACKET_OUTGOING {
            return Ok(());
        }
        let f = &mut buf[..r.len];
        let kind = match self.echo.echo_in_place(f, self.clock.of(&r.stamps)) {
            Ok(k) => k,
            Err(Skip::Answer) => {
                c.answers += 1;
                return Ok(());
            }
            Err(Skip::NotForUs) => {
                c.ignored += 1;
                return Ok(());
            }
        };
        if let Err(e) = self.sock.send(f) {
            // Link down, a full queue, a frame over the MTU: counted, and the next frame is answered.
            c.error(true, &e);
            return Ok(());
        }
        match kind {
            Echo::Ecat => c.ecat += 1,
            Echo::Raw => c.raw += 1,
            Echo::Udp => c.udp += 1,
            Echo::Arp => c.arp += 1,
        }
        Ok(())
    }
}

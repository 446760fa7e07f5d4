//! `reflect --nic IF`: software EtherCAT SubDevices for testing without a drive. EtherCAT frames pass a chain of
//! `--subdevices N` emulated ESCs (ethercat::esc: addressing, registers, AL states; frames that are already answers are
//! never answered again); raw (EtherType 0x88B5) requests and UDP datagrams to port 7 of `--ip` are echoed for
//! `run --mode raw|udp`, and ARP for `--ip` is answered. It rides through link flaps and send/receive errors,
//! counts them and reports them at the end. Ctrl+C or SIGTERM stops it cleanly.

use std::io;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::cli::ReflectArgs;
use crate::error::{Error, Outcome, Result};
use crate::ethercat::echo::{Echo, Echoer, Skip};
use crate::ethercat::esc::{Chain, DcSpec};
use crate::host::Host;
use crate::measure::nic::frame::MAX_FRAME;
use crate::measure::nic::netif::FlagsGuard;
use crate::measure::nic::rawsock::{ETH_P_ALL, RawSocket};
use crate::measure::nic::tstamp::{Stamps, TsKind};
use crate::outln;
use crate::output::Output;
use crate::sys::netdev;

#[derive(Debug, Default)]
struct Counts {
    ecat: u64,
    raw: u64,
    udp: u64,
    arp: u64,
    /// Answers (an ESC's, another reflector's, an echo) seen and not answered again.
    answers: u64,
    ignored: u64,
    recv_errors: u64,
    send_errors: u64,
    last_error: Option<String>,
}

impl Counts {
    fn answered(&self) -> u64 {
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

pub(crate) fn execute(
    host: &Host,
    _out: Output,
    w: &mut dyn Write,
    args: &ReflectArgs,
) -> Result<Outcome> {
    if !host.is_live() {
        return Err(Error::usage("reflect needs the live machine: drop --root"));
    }
    let name = args.nic.as_str();
    crate::checks::nic::require(host, name)?;
    netdev::ifindex(name)?;
    // Declared before the socket so that it is dropped after it (see FlagsGuard).
    let _flags = FlagsGuard::new(name)?;
    let mut sock = RawSocket::open(name, ETH_P_ALL)?;
    // Our own replies must not be read back as requests.
    let skip_outgoing = !sock.ignore_outgoing();
    if args.promisc {
        sock.join_promiscuous()?;
    }
    let mac = netdev::mac(name)
        .map_err(|e| Error::sys(format!("reading the MAC address of {name}"), e))?;
    sock.set_recv_timeout(Duration::from_millis(200))?;
    // The distributed clocks run from the receive stamps: the NIC's where it stamps, the kernel's otherwise.
    let (stamps, _) = sock.enable_rx_timestamps(host)?;
    let dc = (!args.no_dc).then_some(DcSpec {
        drift_ppm: args.dc_drift_ppm,
    });
    let mut echo = Echoer::new(
        Chain::with_dc(usize::from(args.subdevices), args.station, dc),
        mac,
        args.ip.octets(),
    );
    let mut clock = RxClock::new(stamps == TsKind::Hardware);

    // As an RT loop: every page resident before the first frame, nothing given back while it answers.
    crate::measure::session::rt::lock_memory()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| Error::sys("installing the signal handler", e))?;
    }
    outln!(
        w,
        "reflect: answering on {name} as {} EtherCAT SubDevice{} (station address {}{}; {}; and echoing raw \
         0x88B5 and UDP port 7 frames to {}){}; Ctrl+C stops",
        args.subdevices,
        if args.subdevices == 1 { "" } else { "s" },
        args.station,
        if args.subdevices == 1 { "" } else { " and up" },
        dc_line(args, stamps),
        args.ip,
        if args.promisc { ", promiscuous" } else { "" }
    );

    let mut c = Counts::default();
    let mut buf = [0u8; MAX_FRAME + 4];
    let mut err = None;
    while !stop.load(Ordering::Relaxed) && args.count.is_none_or(|n| c.answered() < n) {
        let r = match sock.recv(&mut buf, false, false) {
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => {
                // A link going down reports ENETDOWN once; a vanished interface never comes back.
                c.error(false, &e);
                if netdev::ifindex(name).is_err() {
                    err = Some(Error::sys(
                        format!("receiving on {name} (interface gone)"),
                        e,
                    ));
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        if skip_outgoing && r.pkttype == libc::PACKET_OUTGOING {
            continue;
        }
        let f = &mut buf[..r.len];
        let kind = match echo.echo_in_place(f, clock.of(&r.stamps)) {
            Ok(k) => k,
            Err(Skip::Answer) => {
                c.answers += 1;
                continue;
            }
            Err(Skip::NotForUs) => {
                c.ignored += 1;
                continue;
            }
        };
        if let Err(e) = sock.send(f) {
            // Link down, a full queue, a frame over the MTU: counted, and the next frame is answered.
            c.error(true, &e);
            continue;
        }
        match kind {
            Echo::Ecat => c.ecat += 1,
            Echo::Raw => c.raw += 1,
            Echo::Udp => c.udp += 1,
            Echo::Arp => c.arp += 1,
        }
    }
    outln!(
        w,
        "reflect: answered {} frames on {name}: {} EtherCAT, {} raw, {} UDP (and {} ARP); {} answers not answered \
         again; {} other frames ignored; {} receive errors, {} send errors{}",
        c.answered(),
        c.ecat,
        c.raw,
        c.udp,
        c.arp,
        c.answers,
        c.ignored,
        c.recv_errors,
        c.send_errors,
        c.last_error
            .as_deref()
            .map(|e| format!(" (last: {e})"))
            .unwrap_or_default()
    );
    let states: Vec<String> = echo
        .chain
        .devices
        .iter()
        .map(|d| format!("{}:{:#06x}", d.station(), d.al_status()))
        .collect();
    outln!(
        w,
        "reflect: SubDevices (station:AL status) {}",
        states.join(" ")
    );
    match err {
        Some(e) => Err(e),
        None => Ok(Outcome::Good),
    }
}

/// What the SubDevices' distributed clocks are, for the first line.
fn dc_line(args: &ReflectArgs, stamps: TsKind) -> String {
    if args.no_dc {
        return "no distributed clocks".to_string();
    }
    let base = match stamps {
        TsKind::Hardware => "the NIC's receive stamps",
        TsKind::Software => "the kernel's receive stamps",
    };
    if args.dc_drift_ppm == 0.0 {
        format!("distributed clocks from {base}")
    } else {
        format!(
            "distributed clocks from {base}, drifting {:+} ppm",
            args.dc_drift_ppm
        )
    }
}

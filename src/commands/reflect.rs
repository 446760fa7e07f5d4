//! `reflect --nic IF`: a software EtherCAT SubDevice for testing without a drive. EtherCAT frames come back as one
//! ESC would return them (working counters incremented, bit 0x02 set in the source MAC); raw (EtherType 0x88B5)
//! requests and UDP datagrams to port 7 are echoed for `run --mode raw|udp`. Ctrl+C or SIGTERM stops it cleanly.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::cli::ReflectArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::frame::{self, Echo, MAX_FRAME};
use crate::measure::netif::FlagsGuard;
use crate::measure::rawsock::{ETH_P_ALL, RawSocket};
use crate::outln;
use crate::output::Output;
use crate::sys::netdev;

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    ecat: u64,
    raw: u64,
    udp: u64,
    ignored: u64,
}

impl Counts {
    fn answered(&self) -> u64 {
        self.ecat + self.raw + self.udp
    }
}

pub fn execute(host: &Host, _out: Output, args: &ReflectArgs) -> Result<Outcome> {
    if !host.is_live() {
        return Err(Error::usage("reflect needs the live machine: drop --root"));
    }
    let name = args.nic.as_str();
    netdev::ifindex(name)?;
    // Declared before the socket so that it is dropped after it (see FlagsGuard).
    let _flags = FlagsGuard::new(name)?;
    let sock = RawSocket::open(name, ETH_P_ALL)?;
    // Our own replies must not be read back as requests.
    let skip_outgoing = !sock.ignore_outgoing();
    if args.promisc {
        sock.join_promiscuous()?;
    }
    let mac = netdev::mac(name)
        .map_err(|e| Error::sys(format!("reading the MAC address of {name}"), e))?;
    sock.set_recv_timeout(Duration::from_millis(200))?;

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| Error::sys("installing the signal handler", e))?;
    }
    outln!(
        "reflect: answering on {name} as one EtherCAT SubDevice (and echoing raw 0x88B5 and UDP port 7 frames){}; \
         Ctrl+C stops",
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
                err = Some(Error::sys(format!("receiving on {name}"), e));
                break;
            }
        };
        if skip_outgoing && r.pkttype == libc::PACKET_OUTGOING {
            continue;
        }
        let f = &mut buf[..r.len];
        let Some(kind) = frame::echo_in_place(f, mac) else {
            c.ignored += 1;
            continue;
        };
        if let Err(e) = sock.send(f) {
            // The link went down or the interface went away: say so once, as the result.
            err = Some(Error::sys(format!("sending on {name}"), e));
            break;
        }
        match kind {
            Echo::Ecat => c.ecat += 1,
            Echo::Raw => c.raw += 1,
            Echo::Udp => c.udp += 1,
        }
    }
    outln!(
        "reflect: answered {} frames on {name}: {} EtherCAT, {} raw, {} UDP; {} other frames ignored",
        c.answered(),
        c.ecat,
        c.raw,
        c.udp,
        c.ignored
    );
    match err {
        Some(e) => Err(e),
        None => Ok(Outcome::Good),
    }
}

//! `reflect --nic IF`: software EtherCAT SubDevices for testing without a drive. EtherCAT frames pass a chain of
//! `--subdevices N` emulated ESCs (ethercat::esc: addressing, registers, AL states; frames that are already answers are
//! never answered again); raw (EtherType 0x88B5) requests and UDP datagrams to port 7 of `--ip` are echoed for
//! `run --mode raw|udp`, and ARP for `--ip` is answered. It rides through link flaps and send/receive errors,
//! counts them and reports them at the end. Ctrl+C or SIGTERM stops it cleanly.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::cli::ReflectArgs;
use crate::error::{Error, Outcome, Result};
use crate::ethercat::esc::DcSpec;
use crate::ethercat::reflector::{Counts, Reflected, Reflector, ReflectorSetup};
use crate::host::Host;
use crate::measure::nic::tstamp::TsKind;
use crate::outln;
use crate::output::Output;

pub(crate) fn execute(
    host: &Host,
    _out: Output,
    w: &mut dyn Write,
    args: &ReflectArgs,
) -> Result<Outcome> {
    if !host.is_live() {
        return Err(Error::usage("reflect needs the live machine: drop --root"));
    }
    crate::checks::nic::require(host, &args.nic)?;
    let setup = ReflectorSetup {
        nic: args.nic.clone(),
        subdevices: args.subdevices,
        station: args.station,
        dc: (!args.no_dc).then_some(DcSpec {
            drift_ppm: args.dc_drift_ppm,
        }),
        ip: args.ip,
        promisc: args.promisc,
    };
    let reflector = Reflector::open(host, &setup)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| Error::sys("installing the signal handler", e))?;
    }
    outln!(w, "{}", first_line(args, reflector.stamps));
    let ended = reflector.run(&stop, args.count);
    outln!(w, "{}", counts_line(&args.nic, &ended.counts));
    outln!(w, "{}", states_line(&ended));
    match ended.error {
        Some(e) => Err(e),
        None => Ok(Outcome::Good),
    }
}

/// What the reflector answers as, and how to stop it.
fn first_line(args: &ReflectArgs, stamps: TsKind) -> String {
    let one = args.subdevices == 1;
    format!(
        "reflect: answering on {} as {} EtherCAT SubDevice{} (station address {}{}; {}; and echoing raw \
         0x88B5 and UDP port 7 frames to {}){}; Ctrl+C stops",
        args.nic,
        args.subdevices,
        if one { "" } else { "s" },
        args.station,
        if one { "" } else { " and up" },
        dc_line(args, stamps),
        args.ip,
        if args.promisc { ", promiscuous" } else { "" }
    )
}

/// What the reflector answered, ignored and could not do.
fn counts_line(nic: &str, c: &Counts) -> String {
    format!(
        "reflect: answered {} frames on {nic}: {} EtherCAT, {} raw, {} UDP (and {} ARP); {} answers not answered \
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
    )
}

/// The SubDevices' AL states at the end.
fn states_line(ended: &Reflected) -> String {
    let states: Vec<String> = ended
        .states
        .iter()
        .map(|(station, al)| format!("{station}:{al:#06x}"))
        .collect();
    format!(
        "reflect: SubDevices (station:AL status) {}",
        states.join(" ")
    )
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

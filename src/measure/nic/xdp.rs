//! `run --path af_xdp`: the AF_XDP socket on one queue and the XDP program that feeds it the probe's replies
//! (xdp/probe.bpf.c), with the record that lets the next run clean up after a killed one.
//!
//! Before the program is attached, a record "IFINDEX MODE" is written under /run/rmp-eval/xdp/KEY (`machine::net::nic_key`, through Host), and
//! rewritten before the generic-mode attempt; it is removed once the program is detached (`XdpPath` drops). Where the
//! kernel attaches through a bpf_link (5.9 on), it detaches the program itself when the process dies, even by
//! kill -9; before that, or if the link outlived the process, the next run on IF finds the record, sees the
//! interface's program through rtnetlink, and detaches it when it is rmp-eval's (by name) in the recorded mode.
//! A program this run did not attach is never replaced: the run refuses.

use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::result::{XdpMode, XdpReport};
use crate::measure::spec::NicPath;
use crate::remedy::Suggested;
use crate::sys::xdp::{self, AttachError, AttachMode};
use crate::sys::xsk::{self, Xsk, XskRx, XskTx};
use crate::sys::{ifname, netdev};

/// Where a run's attachment is recorded until its program is detached (tmpfs: a reboot detaches it too).
pub(crate) const RECORD_DIR: &str = "/run/rmp-eval/xdp";

/// What the result says of the path: the program's mode, zero-copy or not, the queue, and why the faster choice
/// was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct XdpFacts {
    pub(crate) mode: AttachMode,
    pub(crate) zero_copy: bool,
    pub(crate) queue: u32,
    pub(crate) native_refused: Option<String>,
    pub(crate) zero_copy_refused: Option<String>,
}

/// The program attached to the interface for this run, and the socket's two halves until the threads take them.
/// Dropping it detaches the program (before the record goes).
pub(crate) struct XdpPath {
    /// `Some` until drop; taken there so that the program is detached before the record is removed.
    program: Option<xdp::Program>,
    pub(crate) facts: XdpFacts,
    /// The sender's and the receiver's halves of the socket, until `Link::take_ports`.
    pub(crate) halves: Option<(XskTx, XskRx)>,
    host: Host,
    name: String,
    /// The record's name (`machine::net::nic_key`).
    key: String,
    /// The link had its carrier when the run began: a driver that restarts the port to detach a native program
    /// drops it for a few seconds, and the interface is left as found only once it is back.
    was_running: bool,
}

impl XdpPath {
    /// Opens the socket on `nic`'s queue `queue` (zero-copy, else copy), loads the program for `ethertype` and
    /// attaches it (native, else generic). Refuses an interface that has an XDP program already.
    /// `key` names the record (`machine::net::nic_key`).
    pub(crate) fn open(
        host: &Host,
        (nic, key): (&str, &str),
        ethertype: u16,
        queue: u32,
    ) -> Result<XdpPath> {
        let ifindex = netdev::ifindex(nic)? as u32;
        if let Some((id, _)) = xdp::attached(ifindex)
            .map_err(|e| Error::sys(format!("reading the XDP program of {nic}"), e))?
        {
            return Err(someones_program(nic, id));
        }
        let was_running = running(nic);
        let sock = open_socket(nic, queue)?;
        let mut program = xdp::load(ethertype, queue, sock.fd())?;
        let (mode, native_refused) = attach(host, (nic, key), ifindex, &mut program)?;
        wait_carrier(nic);
        let facts = XdpFacts {
            mode,
            zero_copy: sock.binding == xsk::Binding::ZeroCopy,
            queue,
            native_refused,
            zero_copy_refused: sock.zero_copy_refused.as_ref().map(ToString::to_string),
        };
        Ok(XdpPath {
            program: Some(program),
            facts,
            halves: Some((sock.tx, sock.rx)),
            host: host.clone(),
            name: nic.to_string(),
            key: key.to_string(),
            was_running,
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

/// Some drivers (igc, ixgbe, …) restart the port to attach a native XDP program, and the link renegotiates: the
/// preflight's 1 s starts once the carrier is back (IFF_RUNNING), or after 10 s, when it will say nothing answers.
fn wait_carrier(nic: &str) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(10) && !running(nic) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn running(nic: &str) -> bool {
    netdev::flags(nic).is_ok_and(|f| f & libc::IFF_RUNNING as u32 != 0)
}

/// The socket, retried for up to 2 s while the queue is busy: the kernel releases a closed socket's hold on its
/// queue (its buffer pool) in deferred work, so a run right after a killed one can find the queue still taken.
fn open_socket(nic: &str, queue: u32) -> Result<Xsk> {
    let start = std::time::Instant::now();
    loop {
        match Xsk::open(nic, queue) {
            Err(e)
                if e.raw_os_error() == Some(libc::EBUSY)
                    && start.elapsed() < std::time::Duration::from_secs(2) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            r => {
                return r.map_err(|e| {
                    let busy = if e.raw_os_error() == Some(libc::EBUSY) {
                        " (another AF_XDP socket holds that queue)"
                    } else {
                        ""
                    };
                    Error::sys(format!("an AF_XDP socket on {nic} queue {queue}{busy}"), e)
                });
            }
        }
    }
}

impl Drop for XdpPath {
    fn drop(&mut self) {
        drop(self.program.take());
        let _ = self.host.remove_file(&record_path(&self.key));
        // igb restarts the port to detach a native program (seen in the PREEMPT_RT guest): the next run would
        // find the link down and its first send refused. The kernel releases the program's link in deferred work,
        // so the restart may come after the drop: first until no program is attached (2 s at most), then until
        // the carrier is back.
        if self.was_running && self.facts.mode == AttachMode::Native {
            if let Ok(ifindex) = netdev::ifindex(&self.name) {
                let start = std::time::Instant::now();
                while start.elapsed() < std::time::Duration::from_secs(2)
                    && xdp::attached(ifindex as u32).is_ok_and(|p| p.is_some())
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            }
            wait_carrier(&self.name);
        }
    }
}

/// Native mode first, generic when the driver refuses it; each attempt recorded before it is made.
fn attach(
    host: &Host,
    (nic, key): (&str, &str),
    ifindex: u32,
    program: &mut xdp::Program,
) -> Result<(AttachMode, Option<String>)> {
    let mut refused = None;
    for mode in [AttachMode::Native, AttachMode::Generic] {
        record(host, (nic, key), ifindex, mode)?;
        match program.attach(ifindex, mode) {
            Ok(()) => return Ok((mode, refused)),
            Err(AttachError::Busy) => {
                let _ = host.remove_file(&record_path(key));
                return Err(Error::failed(format!(
                    "{nic} already has an XDP program: rmp-eval does not replace it ({} measures without one)",
                    Suggested::Path(NicPath::AfPacket.name())
                )));
            }
            Err(AttachError::Failed(e)) => refused = Some(e.to_string()),
        }
    }
    let _ = host.remove_file(&record_path(key));
    Err(Error::failed(format!(
        "attaching the XDP program to {nic}: {}",
        refused.unwrap_or_default()
    )))
}

fn someones_program(nic: &str, id: u32) -> Error {
    let name = xdp::program_name(id).unwrap_or_else(|| "unknown".into());
    Error::failed(format!(
        "{nic} already has an XDP program (id {id}, {name}): rmp-eval does not replace it (detach it, or measure \
         with {})",
        Suggested::Path(NicPath::AfPacket.name())
    ))
}

fn record_path(key: &str) -> String {
    format!("{RECORD_DIR}/{key}")
}

/// The result's name of the XDP mode.
fn result_mode(m: AttachMode) -> XdpMode {
    match m {
        AttachMode::Native => XdpMode::Native,
        AttachMode::Generic => XdpMode::Generic,
    }
}

/// The record's text: "IFINDEX MODE".
fn encode(ifindex: u32, mode: AttachMode) -> String {
    format!("{ifindex} {}\n", result_mode(mode))
}

fn decode(s: &str) -> Option<(u32, AttachMode)> {
    let mut w = s.split_whitespace();
    let ifindex = w.next()?.parse().ok()?;
    let mode = match w.next()? {
        "native" => AttachMode::Native,
        "generic" => AttachMode::Generic,
        _ => return None,
    };
    w.next().is_none().then_some((ifindex, mode))
}

fn record(host: &Host, (nic, key): (&str, &str), ifindex: u32, mode: AttachMode) -> Result<()> {
    let io = |e: crate::host::HostError| {
        Error::failed(format!("recording the XDP attachment of {nic}: {e}"))
    };
    host.create_dir_all(RECORD_DIR).map_err(io)?;
    host.write_atomic(&record_path(key), encode(ifindex, mode).as_bytes(), None)
        .map_err(io)
}

/// What a killed run left on `nic` (whose NIC lock this run holds, so no live run owns the record): its program
/// detached when it is still there and rmp-eval's; one line for the user, or none without a record.
pub(crate) fn restore_leftover(host: &Host, nic: &str, key: &str) -> Option<String> {
    let path = record_path(key);
    let text = host.read(&path).ok()?;
    let msg = match (ifname::validate(nic), decode(&text)) {
        (Ok(()), Some((ifindex, mode))) => settle(nic, ifindex, mode),
        _ => format!("dropped an unreadable XDP record {path}"),
    };
    let _ = host.remove_file(&path);
    Some(msg)
}

fn settle(nic: &str, ifindex: u32, mode: AttachMode) -> String {
    if netdev::ifindex(nic).ok().map(|i| i as u32) != Some(ifindex) {
        return format!(
            "dropped the XDP record of an earlier run on {nic}: the interface was replaced since (index {ifindex})"
        );
    }
    match xdp::attached(ifindex) {
        Ok(None) => format!(
            "an earlier run on {nic} was killed: the kernel had already detached its XDP program (record dropped)"
        ),
        Ok(Some((id, _))) if xdp::program_name(id).as_deref() != Some(xdp::PROGRAM) => format!(
            "an earlier run on {nic} was killed; the XDP program now there (id {id}) is not rmp-eval's: left alone"
        ),
        Ok(Some(_)) => match xdp::detach(ifindex, mode) {
            Ok(()) => format!(
                "detached the XDP program ({}) an earlier, killed run left on {nic}",
                result_mode(mode)
            ),
            Err(e) => format!("could not detach the XDP program an earlier run left on {nic}: {e}"),
        },
        Err(e) => format!("could not read the XDP program of {nic}: {e}; record dropped"),
    }
}

impl XdpFacts {
    /// The result's `xdp` key.
    pub(crate) fn report(&self) -> XdpReport {
        XdpReport {
            xdp_mode: result_mode(self.mode),
            zero_copy: self.zero_copy,
            queue: self.queue,
            why_generic: self.native_refused.clone(),
            why_copy: self.zero_copy_refused.clone(),
            ring_full: 0,
            sent_late: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_junk_is_refused() {
        assert_eq!(
            decode(&encode(7, AttachMode::Generic)),
            Some((7, AttachMode::Generic))
        );
        assert_eq!(
            decode(&encode(3, AttachMode::Native)),
            Some((3, AttachMode::Native))
        );
        for junk in ["", "7", "x native", "7 hw", "7 native extra"] {
            assert_eq!(decode(junk), None, "{junk}");
        }
    }

    #[test]
    fn an_unreadable_record_is_dropped_with_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::with_root(dir.path());
        assert_eq!(restore_leftover(&host, "lo", "net1-if1"), None);
        host.create_dir_all(RECORD_DIR).unwrap();
        host.write_atomic(&record_path("net1-if1"), b"junk", None)
            .unwrap();
        let said = restore_leftover(&host, "lo", "net1-if1").unwrap();
        assert!(said.contains("unreadable"), "{said}");
        assert!(!host.exists(&record_path("net1-if1")));
    }

    #[test]
    fn a_record_of_an_interface_with_no_program_is_dropped() {
        // lo is index 1 and has no XDP program: the kernel (or nobody) detached it.
        let dir = tempfile::tempdir().unwrap();
        let host = Host::with_root(dir.path());
        host.create_dir_all(RECORD_DIR).unwrap();
        host.write_atomic(
            &record_path("net1-if1"),
            encode(1, AttachMode::Generic).as_bytes(),
            None,
        )
        .unwrap();
        let said = restore_leftover(&host, "lo", "net1-if1").unwrap();
        assert!(said.contains("already detached"), "{said}");
        assert!(!host.exists(&record_path("net1-if1")));
    }
}

//! UDP mode against a stock echo service: the peer's MAC found by ARP before the run, and ARP requests for our
//! own address answered while it lasts (the peer's kernel asks before it sends the echo, and again every few
//! seconds). This end has no IP stack on the interface, so nothing else would answer. Runs on an ordinary thread,
//! outside the RT threads.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::rawsock::RawSocket;
use crate::error::{Error, Result};
use crate::measure::nic::ipv4::{ETHERTYPE_ARP, arp_reply_from, arp_reply_in_place, arp_request};

/// Asks for `peer`'s MAC (every 100 ms, up to 1 s) from `ip` at `mac`; the ARP socket comes back for the responder.
pub(crate) fn resolve(
    nic: &str,
    mac: [u8; 6],
    ip: Ipv4Addr,
    peer: Ipv4Addr,
) -> Result<([u8; 6], RawSocket)> {
    let sock = RawSocket::open(nic, ETHERTYPE_ARP)?;
    let mut req = [0u8; 64];
    let n = arp_request(&mut req, mac, ip.octets(), peer.octets());
    let mut buf = [0u8; 128];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        sock.send(&req[..n])
            .map_err(|e| Error::sys(format!("sending an ARP request on {nic}"), e))?;
        let until = Instant::now() + Duration::from_millis(100);
        while Instant::now() < until {
            let _ = sock.wait(10);
            while let Ok(r) = sock.recv(&mut buf, false, true) {
                if let Some(m) = arp_reply_from(&buf[..r.len], peer.octets()) {
                    return Ok((m, sock));
                }
            }
        }
    }
    Err(Error::failed(format!(
        "no ARP answer from {peer} on {nic} within 1 s: the UDP echo peer must have the address {peer} on that \
         link (--peer-ip) and reach {ip} (--local-ip) there"
    )))
}

/// Answers ARP requests for `ip` until dropped.
pub(crate) struct Responder {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Responder {
    pub(crate) fn start(sock: RawSocket, mac: [u8; 6], ip: Ipv4Addr) -> Result<Responder> {
        sock.set_recv_timeout(Duration::from_millis(100))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("rmp-eval-arp".into())
            .spawn(move || {
                let mut buf = [0u8; 128];
                while !flag.load(Ordering::Relaxed) {
                    if let Ok(r) = sock.recv(&mut buf, false, false)
                        && r.pkttype != libc::PACKET_OUTGOING
                        && arp_reply_in_place(&mut buf[..r.len], mac, ip.octets())
                    {
                        let _ = sock.send(&buf[..r.len]);
                    }
                }
            })
            .map_err(|e| Error::sys("starting the ARP responder", e))?;
        Ok(Responder {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

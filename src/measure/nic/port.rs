//! What the two RT threads send and receive through: the AF_PACKET sockets (`--path af_packet`), or the two halves
//! of the AF_XDP socket (`--path af_xdp`). One `match` a frame; nothing allocates.

use std::io;
use std::sync::Arc;

use super::rawsock::{RawSocket, Received};
use crate::sys::xsk::{Sent, XskRx, XskTx};

/// How long the receiver waits for a frame before it looks at its flags again (AF_PACKET: the socket's
/// SO_RCVTIMEO, set by the preflight; AF_XDP: poll()'s timeout).
const RECV_WAIT_MS: i32 = 50;

/// The sender's side.
pub(super) enum TxPort {
    Packet(Arc<RawSocket>),
    Xsk(XskTx),
}

impl TxPort {
    /// Sends one frame: AF_PACKET's send() (out, or refused by the kernel), or a transmit descriptor and a
    /// sendto() kick (see `Sent`).
    #[inline]
    pub(super) fn send(&mut self, frame: &[u8]) -> io::Result<Sent> {
        match self {
            TxPort::Packet(s) => s.send(frame).map(|()| Sent::Out),
            TxPort::Xsk(x) => x.send(frame),
        }
    }

    /// At the end: frames that never left (AF_XDP: still on the transmit ring; AF_PACKET: none, send() is done
    /// with a frame when it returns).
    pub(super) fn unsent(&mut self) -> u32 {
        match self {
            TxPort::Packet(_) => 0,
            TxPort::Xsk(x) => x.unsent(),
        }
    }

    /// The socket whose error queue returns the transmit stamps; AF_XDP has none.
    pub(super) fn stamped(&self) -> Option<Arc<RawSocket>> {
        match self {
            TxPort::Packet(s) => Some(Arc::clone(s)),
            TxPort::Xsk(_) => None,
        }
    }
}

/// The receiver's side.
pub(super) enum RxPort {
    Packet(Arc<RawSocket>),
    Xsk(XskRx),
}

impl RxPort {
    /// One frame into `buf`, waiting at most `RECV_WAIT_MS`; WouldBlock when none came. AF_XDP frames carry no
    /// stamp (zero).
    #[inline]
    pub(super) fn recv(&mut self, buf: &mut [u8]) -> io::Result<Received> {
        match self {
            RxPort::Packet(s) => s.recv(buf, false, false),
            RxPort::Xsk(x) => x.recv(buf, RECV_WAIT_MS).map(|len| Received {
                len,
                ..Received::default()
            }),
        }
    }

    /// The round trip is measured in user space (the sender's clock before its kick to this thread's at the read
    /// of the ring): no transmit stamp will come, so a reply completes at once.
    pub(super) fn user_stamps(&self) -> bool {
        matches!(self, RxPort::Xsk(_))
    }
}

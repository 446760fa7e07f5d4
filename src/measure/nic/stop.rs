//! Whose fault it is when the replies stop mid-run. This machine's own interface going away (deleted, set down) is
//! no measurement of the machine or the chain: the run could not finish (incomplete, exit 2), and the message says
//! so with the sends the kernel refused. A chain that goes silent while the local link is up, or whose link drops
//! (no carrier), is a dropout: a shortfall of the chain as the run measured it (fail, exit 1), kept in the result.

use std::io;

use super::ANSWER_TIMEOUT;

/// What this machine's interface looked like when the replies had stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Local {
    /// The interface no longer exists (deleted, its driver unloaded, its USB adapter unplugged).
    Vanished,
    /// Set down on this machine (IFF_UP cleared).
    SetDown,
    /// Up, without carrier: the cable or the far end's port went down.
    NoCarrier,
    /// Up with carrier.
    Up,
}

impl Local {
    /// From the interface's flags (SIOCGIFFLAGS, read once the replies stopped) and the errno of the last send
    /// the kernel refused (0: none), which says it even when the interface came back meanwhile.
    pub(super) fn of(flags: io::Result<u32>, send_errno: i32) -> Local {
        match (flags, send_errno) {
            (Err(_), _) | (_, libc::ENXIO | libc::ENODEV) => Local::Vanished,
            (_, libc::ENETDOWN) => Local::SetDown,
            (Ok(f), _) if f & libc::IFF_UP as u32 == 0 => Local::SetDown,
            (Ok(f), _) if f & libc::IFF_RUNNING as u32 == 0 => Local::NoCarrier,
            (Ok(_), _) => Local::Up,
        }
    }
}

/// The frames of a run that stopped, and the sends the kernel refused.
#[derive(Debug, Clone, Copy)]
pub(super) struct StopCounts {
    pub(super) matched: u64,
    pub(super) sent: u64,
    pub(super) refused: u64,
    /// AF_XDP: frames not sent because the socket's own transmit ring was full.
    pub(super) ring_full: u64,
    /// errno of the last refused send (0: none).
    pub(super) errno: i32,
}

impl StopCounts {
    fn answered(&self) -> String {
        format!(
            "after {} of {} frames were answered",
            self.matched, self.sent
        )
    }

    fn refused(&self) -> String {
        let mut s = String::new();
        if self.refused > 0 {
            s = format!(
                "; the kernel refused {} send(s) ({})",
                self.refused,
                io::Error::from_raw_os_error(self.errno)
            );
        }
        if self.ring_full > 0 {
            s.push_str(&format!(
                "; {} frame(s) not sent: the AF_XDP socket's own transmit ring was full (its frames waiting for \
                 the kernel)",
                self.ring_full
            ));
        }
        s
    }
}

/// This machine's interface went away mid-run: the run could not finish (incomplete, exit 2).
#[derive(Debug, thiserror::Error)]
pub(super) enum LinkLost {
    #[error(
        "{nic} vanished mid-run (deleted, its driver unloaded or its adapter unplugged) {}{}",
        .counts.answered(),
        .counts.refused()
    )]
    Vanished { nic: String, counts: StopCounts },
    #[error(
        "the local link went down: {nic} was set down on this machine mid-run (ip link set {nic} up) {}{}",
        .counts.answered(),
        .counts.refused()
    )]
    SetDown { nic: String, counts: StopCounts },
}

/// How a stopped run ends: `Err` when this machine's interface went away (the verdict is incomplete),
/// `Ok(dropout)` when the chain dropped out (a shortfall).
pub(super) fn judge(nic: &str, local: Local, c: &StopCounts) -> Result<String, LinkLost> {
    let (answered, refused) = (c.answered(), c.refused());
    let silent = format!("nothing for {} s", ANSWER_TIMEOUT.as_secs());
    let (nic, counts) = (nic.to_string(), *c);
    match local {
        Local::Vanished => Err(LinkLost::Vanished { nic, counts }),
        Local::SetDown => Err(LinkLost::SetDown { nic, counts }),
        Local::NoCarrier => Ok(format!(
            "replies stopped on {nic} {answered} ({silent}) and {nic} lost its carrier: the cable or the \
             SubDevice's port went down{refused}"
        )),
        Local::Up => Ok(format!(
            "replies stopped on {nic} {answered} ({silent}) with the link up: the SubDevice or the chain behind \
             {nic} went silent{refused}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{Local, StopCounts, judge};

    const UP: u32 = (libc::IFF_UP | libc::IFF_RUNNING) as u32;

    #[test]
    fn the_interface_and_the_refused_sends_say_whose_fault_a_stop_is() {
        let gone = || Err(std::io::Error::from_raw_os_error(libc::ENODEV));
        assert_eq!(Local::of(gone(), 0), Local::Vanished);
        assert_eq!(Local::of(Ok(UP), libc::ENXIO), Local::Vanished);
        assert_eq!(Local::of(Ok(0), 0), Local::SetDown);
        // Set down and up again before the run looked: the refused sends still say so.
        assert_eq!(Local::of(Ok(UP), libc::ENETDOWN), Local::SetDown);
        assert_eq!(Local::of(Ok(libc::IFF_UP as u32), 0), Local::NoCarrier);
        assert_eq!(Local::of(Ok(UP), 0), Local::Up);
        assert_eq!(Local::of(Ok(UP), libc::ENOBUFS), Local::Up);
    }

    #[test]
    fn a_local_stop_is_an_error_and_a_silent_chain_a_dropout() {
        let c = StopCounts {
            matched: 1480,
            sent: 2530,
            refused: 1003,
            ring_full: 0,
            errno: libc::ENETDOWN,
        };
        let e = judge("eth1", Local::SetDown, &c).unwrap_err().to_string();
        assert!(
            e.starts_with("the local link went down: eth1 was set down"),
            "{e}"
        );
        assert!(
            e.ends_with("after 1480 of 2530 frames were answered; the kernel refused 1003 send(s) (Network is down (os error 100))"),
            "{e}"
        );
        // AF_XDP: frames its own full ring kept back are named as that, not as the kernel's refusal.
        let xdp = StopCounts {
            refused: 128,
            ring_full: 400,
            ..c
        };
        let e = judge("eth1", Local::SetDown, &xdp).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "the kernel refused 128 send(s) (Network is down (os error 100)); 400 frame(s) not sent: the \
                 AF_XDP socket's own transmit ring was full (its frames waiting for the kernel)"
            ),
            "{e}"
        );
        let quiet = StopCounts {
            refused: 0,
            errno: 0,
            ..c
        };
        let d = judge("eth1", Local::Up, &quiet).unwrap();
        assert_eq!(
            d,
            "replies stopped on eth1 after 1480 of 2530 frames were answered (nothing for 1 s) with the link up: \
             the SubDevice or the chain behind eth1 went silent"
        );
        assert!(
            judge("eth1", Local::Vanished, &quiet)
                .unwrap_err()
                .to_string()
                .starts_with("eth1 vanished mid-run")
        );
        assert!(
            judge("eth1", Local::NoCarrier, &quiet)
                .unwrap()
                .contains("lost its carrier")
        );
    }
}

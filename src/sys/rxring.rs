//! The receive ring of an AF_PACKET socket (TPACKET_V2: PACKET_RX_RING and mmap). The kernel copies each frame into
//! a frame of the shared ring with its stamp and hands it over by the frame's status word. That stamp is the NIC's
//! (PACKET_TIMESTAMP = SOF_TIMESTAMPING_RAW_HARDWARE, where SIOCSHWTSTAMP turned it on) or the kernel's clock at
//! delivery to the socket, and it needs no SO_TIMESTAMPING with SOF_TIMESTAMPING_RX_SOFTWARE: the first socket
//! asking for that, and the last one closing, switch the kernel's `netstamp_needed_key` static branch, which
//! patches kernel text with IPIs to every CPU, the RT core included.

use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use super::packet::{self, Message, Stamps};
use super::sockopt;

/// One frame: the 32-byte header, the 20-byte sockaddr_ll and 2048 - 66 = 1982 bytes for an Ethernet frame
/// (the largest sent or answered here is 1518 with a VLAN tag); longer frames arrive cut, as a short read would.
const FRAME_SIZE: usize = 2048;
/// Blocks are page multiples, a power of two pages (the kernel allocates each as one order).
const BLOCK_SIZE: usize = 1 << 16;
/// 1024 frames (2 MiB, locked with the rest): a receiver stalled a third of a second on a segment where another
/// MainDevice's requests and replies arrive too (3 frames a millisecond at 1 kHz) loses none. 128 lost frames
/// under a 74 ms stall on a loaded machine; a socket's default receive buffer (rmem_default, 212992 bytes of skb
/// truesize) held ~100–250 small frames.
const BLOCKS: usize = 32;
const FRAMES: usize = BLOCK_SIZE / FRAME_SIZE * BLOCKS;
const LEN: usize = BLOCK_SIZE * BLOCKS;
/// Where a frame's sockaddr_ll starts: the header rounded up to TPACKET_ALIGNMENT (16).
const SLL_OFFSET: usize = (std::mem::size_of::<libc::tpacket2_hdr>() + 15) & !15;

/// A mapped receive ring; frames are read in ring order. A reader claims the frame at `next` by moving `next` on
/// (compare-and-swap): no lock in the RT receive path, and a second reader never gets the same frame.
pub(crate) struct RxRing {
    base: NonNull<u8>,
    next: AtomicUsize,
}

// SAFETY: the mapping belongs to this value alone until Drop unmaps it; a frame passes between the kernel and the
// one reader that claimed it through its status word, read with Acquire and given back with Release.
unsafe impl Send for RxRing {}
// SAFETY: as above: every access to the mapping goes through `take`, and each frame is claimed by one reader.
unsafe impl Sync for RxRing {}

impl RxRing {
    /// Sets up and maps the ring of packet socket `fd` with hardware stamps when `hw`, software ones otherwise,
    /// touches every frame header (all pages resident before any RT thread reads), and drops frames queued on the
    /// socket before the ring existed (the ring's poll would otherwise see them forever).
    pub(crate) fn new(fd: RawFd, hw: bool) -> io::Result<RxRing> {
        let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        sockopt::set(fd, libc::SOL_PACKET, libc::PACKET_VERSION, &version)?;
        let ts = if hw {
            libc::SOF_TIMESTAMPING_RAW_HARDWARE as libc::c_int
        } else {
            0
        };
        sockopt::set(fd, libc::SOL_PACKET, libc::PACKET_TIMESTAMP, &ts)?;
        let req = libc::tpacket_req {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: BLOCKS as u32,
            tp_frame_size: FRAME_SIZE as u32,
            tp_frame_nr: FRAMES as u32,
        };
        sockopt::set(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)?;
        // SAFETY: a new shared mapping of the ring just set up on `fd`, of exactly its size; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p as *mut u8).ok_or_else(|| io::Error::other("mmap gave NULL"))?;
        let ring = RxRing {
            base,
            next: AtomicUsize::new(0),
        };
        for i in 0..FRAMES {
            let _ = ring.status(i).load(Ordering::Relaxed);
        }
        let mut scrap = [0u8; 64];
        while packet::recv(fd, &mut scrap, false, true).is_ok() {}
        Ok(ring)
    }

    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: i < FRAMES, so the frame lies inside the mapping, which lives as long as `self`; its first field,
        // the u32 tp_status, is 16-aligned (page-aligned blocks of 2048-byte frames) and every access to it here
        // is atomic, as the kernel's are ordered by its barriers.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(i * FRAME_SIZE).cast()) }
    }

    /// The next frame the kernel handed over, copied into `buf` (cut to its length) with its stamp; None when the
    /// ring holds none. The frame goes back to the kernel at once.
    pub(crate) fn take(&self, buf: &mut [u8]) -> Option<Message> {
        let mut i = self.next.load(Ordering::Acquire);
        let status = loop {
            let status = self.status(i).load(Ordering::Acquire);
            if status & libc::TP_STATUS_USER == 0 {
                return None;
            }
            match self.next.compare_exchange_weak(
                i,
                (i + 1) % FRAMES,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break status,
                Err(now) => i = now,
            }
        };
        // SAFETY: the frame is the user's (TP_STATUS_USER, read with Acquire) and this reader's (claimed above)
        // until its status is given back below; it lies inside the live mapping, and `read` checks its offsets
        // against the frame size.
        let m = unsafe { read(self.base.as_ptr().add(i * FRAME_SIZE), status, buf) };
        self.status(i)
            .store(libc::TP_STATUS_KERNEL, Ordering::Release);
        Some(m)
    }
}

/// Copies a frame's bytes into `buf` and reads its stamp and packet type.
///
/// # Safety
/// `frame` points to FRAME_SIZE readable bytes of a ring frame the kernel handed over (TP_STATUS_USER).
unsafe fn read(frame: *const u8, status: u32, buf: &mut [u8]) -> Message {
    // SAFETY: by the caller's contract the header and sockaddr_ll lie at the frame's start, inside FRAME_SIZE; the
    // data is copied from tp_mac on, at most to the frame's end and to buf's length.
    unsafe {
        let h = frame.cast::<libc::tpacket2_hdr>().read_unaligned();
        let sll = frame
            .add(SLL_OFFSET)
            .cast::<libc::sockaddr_ll>()
            .read_unaligned();
        let mac = usize::from(h.tp_mac).min(FRAME_SIZE);
        let len = (h.tp_snaplen as usize).min(FRAME_SIZE - mac).min(buf.len());
        std::ptr::copy_nonoverlapping(frame.add(mac), buf.as_mut_ptr(), len);
        Message {
            len,
            stamps: stamps(status, h.tp_sec, h.tp_nsec),
            pkttype: sll.sll_pkttype,
        }
    }
}

/// The frame's one stamp: the NIC's when the status says so, the kernel's otherwise.
fn stamps(status: u32, sec: u32, nsec: u32) -> Stamps {
    let ns = u64::from(sec) * 1_000_000_000 + u64::from(nsec);
    if status & libc::TP_STATUS_TS_RAW_HARDWARE != 0 {
        Stamps {
            hw_ns: ns,
            ..Stamps::default()
        }
    } else {
        Stamps {
            sw_ns: ns,
            ..Stamps::default()
        }
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of LEN bytes, not used after this.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), LEN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hardware_status_gives_a_hardware_stamp() {
        let hw = stamps(libc::TP_STATUS_USER | libc::TP_STATUS_TS_RAW_HARDWARE, 2, 5);
        assert_eq!((hw.hw_ns, hw.sw_ns), (2_000_000_005, 0));
        let sw = stamps(libc::TP_STATUS_USER | libc::TP_STATUS_TS_SOFTWARE, 2, 5);
        assert_eq!((sw.hw_ns, sw.sw_ns), (0, 2_000_000_005));
    }

    #[test]
    fn the_frame_geometry_is_the_kernels() {
        assert_eq!(
            SLL_OFFSET + std::mem::size_of::<libc::sockaddr_ll>(),
            libc::TPACKET2_HDRLEN
        );
        assert_eq!(BLOCK_SIZE % FRAME_SIZE, 0);
        assert_eq!(FRAMES, 1024);
    }
}

//! AF_XDP sockets (`run --path af_xdp`), written from the kernel's Documentation/networking/af_xdp.rst and
//! include/uapi/linux/if_xdp.h: the UMEM area (an anonymous mapping owned here, registered with XDP_UMEM_REG), the
//! socket bound to one queue of one interface, and its four rings (`ring`) split in two halves, one per RT thread:
//! `XskTx` (transmit ring + completion ring) for the sender, `XskRx` (receive ring + fill ring) for the receiver.
//! The halves share nothing but the socket and the area, so neither thread takes a lock.
//!
//! The UMEM has `FRAMES` frames of `FRAME_SIZE` bytes: the first half are receive buffers, handed to the kernel on the
//! fill ring and given back after each frame is copied out; the second half are transmit buffers, used in turn.
//! Nothing allocates after `Xsk::open`.

mod ring;

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::Arc;

use ring::{Offsets, Ring, Side};

/// Bytes of one UMEM frame: a page half, more than the longest probe (MTU 1500 + header).
pub(crate) const FRAME_SIZE: u32 = 2048;
/// Frames in the UMEM: half for receiving, half for sending.
const FRAMES: u32 = 256;
const RX_FRAMES: u32 = FRAMES / 2;
const TX_FRAMES: u32 = FRAMES - RX_FRAMES;
/// Ring sizes (powers of two). The completion ring holds every transmit frame, so a completion is never lost.
const RING: u32 = 256;

/// How the socket got bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    /// The driver reads and writes the UMEM frames itself (XDP_ZEROCOPY).
    ZeroCopy,
    /// The kernel copies each frame between the UMEM and its own buffers (XDP_COPY).
    Copy,
}

/// What became of a frame given to `XskTx::send`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// On the transmit ring, and the kernel was told (the kick succeeded or it was still busy sending).
    Out,
    /// On the transmit ring, but the kick failed with this errno (the link set down, say): the frame stays there
    /// and goes out with the next kick that succeeds, or never — `XskTx::unsent` counts those at the end.
    Waiting(i32),
    /// Not sent: every transmit frame of this socket is still on the ring or not yet completed by the kernel (the
    /// tool's own ring is full, not a refusal of the kernel's).
    RingFull,
}

/// The UMEM's memory: an anonymous, populated, private mapping, unmapped on drop (after the socket that registered it
/// is closed: see `Sock`).
struct Area {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; the halves touch disjoint frames of it (receive frames in
// XskRx, transmit frames in XskTx), and the kernel's side is ordered by the rings' producer/consumer indices.
unsafe impl Send for Area {}
// SAFETY: as above: no two threads access the same frame through a shared `Area`.
unsafe impl Sync for Area {}

impl Area {
    fn map(len: usize) -> io::Result<Area> {
        // SAFETY: an anonymous private mapping at an address the kernel picks; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave NULL"))?;
        let area = Area { ptr, len };
        // A child the run forks (stress-ng, modprobe) must not share the frames copy-on-write: the kernel holds
        // these pages pinned, and a write after a fork would land in a copy it never reads. Recent kernels copy
        // pinned pages for the child themselves; this covers the older ones (advisory: its failure changes nothing).
        // SAFETY: madvise on exactly the mapping made above; MADV_DONTFORK changes no contents.
        let _ = unsafe { libc::madvise(p, len, libc::MADV_DONTFORK) };
        Ok(area)
    }

    /// Copies `bytes` into the UMEM at `offset`. The caller owns that frame (not on any ring the kernel reads).
    fn write(&self, offset: u64, bytes: &[u8]) -> bool {
        let Some(end) = (offset as usize).checked_add(bytes.len()) else {
            return false;
        };
        if end > self.len {
            return false;
        }
        // SAFETY: offset..end lies inside the mapping (checked above), which lives as long as `self`; the frame is
        // this thread's (a transmit frame whose completion came back, or one never sent), so nothing else writes it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.ptr.as_ptr().add(offset as usize),
                bytes.len(),
            );
        }
        true
    }

    /// Copies `len` bytes at `offset` out of the UMEM into `buf` (truncated to it); returns the bytes copied.
    fn read(&self, offset: u64, len: usize, buf: &mut [u8]) -> usize {
        let n = len.min(buf.len());
        match (offset as usize).checked_add(n) {
            Some(end) if end <= self.len => {}
            _ => return 0,
        }
        // SAFETY: offset..offset+n lies inside the mapping (checked above); the kernel handed this frame back on the
        // receive ring and does not write it until the fill ring gives it back, after this copy.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset as usize),
                buf.as_mut_ptr(),
                n,
            );
        }
        n
    }
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; nothing here points into it once both halves are gone (they
        // hold the `Arc<Sock>` this drop ends). The kernel keeps its own reference to the pages it pinned.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// The socket and the UMEM it registered. Fields drop in order: the socket is closed first (the kernel then
/// releases its rings and the UMEM), then the area is unmapped.
struct Sock {
    fd: OwnedFd,
    area: Area,
}

/// An AF_XDP socket bound to one queue. Holds the socket and its UMEM until both halves are dropped.
pub(crate) struct Xsk {
    pub(crate) binding: Binding,
    /// Why zero-copy was not had (the bind's error), when it was not.
    pub(crate) zero_copy_refused: Option<io::Error>,
    pub(crate) tx: XskTx,
    pub(crate) rx: XskRx,
}

impl Xsk {
    /// The socket, for its XSKMAP entry.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.tx.sock.fd.as_fd()
    }

    /// An AF_XDP socket on `ifname` (validated by the caller), queue `queue`: zero-copy first, else copy mode.
    pub(crate) fn open(ifname: &str, queue: u32) -> io::Result<Xsk> {
        let ifindex = super::netdev::ifindex(ifname)
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e.to_string()))?;
        match Xsk::bind(ifindex as u32, queue, libc::XDP_ZEROCOPY) {
            Ok(x) => Ok(x),
            Err(zc) => {
                let mut x = Xsk::bind(ifindex as u32, queue, libc::XDP_COPY)?;
                x.binding = Binding::Copy;
                x.zero_copy_refused = Some(zc);
                Ok(x)
            }
        }
    }

    /// The steps af_xdp.rst gives: a socket, the UMEM registered, the four ring sizes set, their offsets read and
    /// the rings mapped, the receive frames on the fill ring, then the bind to the queue with `flags`.
    fn bind(ifindex: u32, queue: u32, flags: u16) -> io::Result<Xsk> {
        // SAFETY: socket(2) with constant arguments; the descriptor it returns is owned by the OwnedFd below.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let area = Area::map((FRAMES * FRAME_SIZE) as usize)?;
        let reg = libc::xdp_umem_reg {
            addr: area.ptr.as_ptr() as u64,
            len: area.len as u64,
            chunk_size: FRAME_SIZE,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        set_opt(&fd, libc::XDP_UMEM_REG, &reg)?;
        for opt in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            set_opt(&fd, opt, &RING)?;
        }
        let off = offsets(fd.as_fd())?;
        let b = fd.as_fd();
        let mut fill = Ring::map(
            b,
            libc::XDP_UMEM_PGOFF_FILL_RING,
            off[2],
            RING,
            Side::Produce,
        )?;
        let comp = Ring::map(
            b,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
            off[3],
            RING,
            Side::Consume,
        )?;
        let rx = Ring::map(
            b,
            libc::XDP_PGOFF_RX_RING as u64,
            off[0],
            RING,
            Side::Consume,
        )?;
        let tx = Ring::map(
            b,
            libc::XDP_PGOFF_TX_RING as u64,
            off[1],
            RING,
            Side::Produce,
        )?;
        // The receive frames go to the kernel before the bind: it can deliver from the first frame on.
        for i in 0..RX_FRAMES {
            fill.push(u64::from(i * FRAME_SIZE));
        }
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: bind reads one sockaddr_xdp of the size given, which lives on this stack frame.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const addr).cast(),
                size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let sock = Arc::new(Sock { fd, area });
        Ok(Xsk {
            binding: Binding::ZeroCopy,
            zero_copy_refused: None,
            tx: XskTx {
                ring: tx,
                comp,
                next: 0,
                in_flight: 0,
                sock: Arc::clone(&sock),
            },
            rx: XskRx {
                ring: rx,
                fill,
                sock,
            },
        })
    }
}

/// setsockopt(fd, SOL_XDP, opt, value).
fn set_opt<T>(fd: &OwnedFd, opt: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: setsockopt reads size_of::<T>() bytes of `value`, which outlives the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            opt,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// XDP_MMAP_OFFSETS: where producer, consumer and descriptors lie in the RX, TX, fill and completion rings' mappings,
/// in that order. Kernels before 5.4 give three u64 a ring, later ones four (a `flags` word, unused here).
fn offsets(fd: BorrowedFd<'_>) -> io::Result<[Offsets; 4]> {
    let mut words = [0u64; 16];
    let mut len = size_of_val(&words) as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `words`, which lives on this stack frame, and sets `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            libc::XDP_MMAP_OFFSETS,
            words.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let per_ring = match len {
        128 => 4,
        96 => 3,
        _ => {
            return Err(io::Error::other(format!(
                "XDP_MMAP_OFFSETS gave {len} bytes"
            )));
        }
    };
    Ok(std::array::from_fn(|r| Offsets {
        producer: words[r * per_ring],
        consumer: words[r * per_ring + 1],
        desc: words[r * per_ring + 2],
    }))
}

/// The sender's half: the transmit ring and the completion ring, and the transmit frames used in turn.
pub(crate) struct XskTx {
    ring: Ring<libc::xdp_desc>,
    comp: Ring<u64>,
    /// The next transmit frame (0..TX_FRAMES).
    next: u32,
    /// Frames put on the transmit ring whose completion has not come back.
    in_flight: u32,
    sock: Arc<Sock>,
}

impl XskTx {
    /// Sends one frame: reaps the completions of earlier frames, copies `frame` into the next free transmit frame,
    /// puts its descriptor on the transmit ring and kicks the kernel (sendto, MSG_DONTWAIT). Once the descriptor is
    /// on the ring it is the kernel's: a failed kick leaves it there (`Sent::Waiting`), it cannot be taken back.
    pub(crate) fn send(&mut self, frame: &[u8]) -> io::Result<Sent> {
        self.reap();
        if frame.len() > FRAME_SIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EMSGSIZE));
        }
        // In flight frames are used in turn, so the next one is free whenever fewer than all are in flight.
        if self.in_flight >= TX_FRAMES {
            return Ok(Sent::RingFull);
        }
        let offset = u64::from((RX_FRAMES + self.next) * FRAME_SIZE);
        if !self.sock.area.write(offset, frame) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let desc = libc::xdp_desc {
            addr: offset,
            len: frame.len() as u32,
            options: 0,
        };
        if !self.ring.push(desc) {
            return Ok(Sent::RingFull);
        }
        self.next = (self.next + 1) % TX_FRAMES;
        self.in_flight += 1;
        Ok(match kick(self.sock.fd.as_fd()) {
            Ok(()) => Sent::Out,
            Err(e) => Sent::Waiting(e.raw_os_error().unwrap_or(libc::EIO)),
        })
    }

    /// Takes back the transmit frames the kernel is done with.
    fn reap(&mut self) {
        while self.comp.pop().is_some() {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
    }

    /// At the end of a run: the frames the kernel never took off the transmit ring (their kicks failed and none
    /// succeeded after), after waiting up to 20 ms for the completions of the last ones sent.
    pub(crate) fn unsent(&mut self) -> u32 {
        let start = std::time::Instant::now();
        self.reap();
        while self.in_flight > 0 && start.elapsed() < std::time::Duration::from_millis(20) {
            std::thread::sleep(std::time::Duration::from_millis(1));
            self.reap();
        }
        self.in_flight
    }
}

/// sendto(fd, NULL, 0, MSG_DONTWAIT): tells the kernel the transmit ring has frames. EAGAIN/EBUSY/ENOBUFS mean it is
/// still sending the earlier ones (or had to drop one of them), and takes this frame along with them: not an error.
fn kick(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: a zero-length sendto with no buffer and no address on a socket this process owns.
    let rc = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            std::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null(),
            0,
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS) => Ok(()),
            _ => Err(e),
        };
    }
    Ok(())
}

/// The receiver's half: the receive ring, and the fill ring its frames go back on.
pub(crate) struct XskRx {
    ring: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    sock: Arc<Sock>,
}

impl XskRx {
    /// Receives one frame into `buf` (truncated to it): from the ring at once if one is there, else after waiting
    /// up to `timeout_ms` in poll(); WouldBlock when none came. The frame goes back on the fill ring after the copy.
    pub(crate) fn recv(&mut self, buf: &mut [u8], timeout_ms: i32) -> io::Result<usize> {
        if let Some(n) = self.take(buf) {
            return Ok(n);
        }
        if timeout_ms != 0 {
            super::packet::poll(self.sock.fd.as_raw_fd(), timeout_ms)?;
            if let Some(n) = self.take(buf) {
                return Ok(n);
            }
        }
        Err(io::Error::from(io::ErrorKind::WouldBlock))
    }

    fn take(&mut self, buf: &mut [u8]) -> Option<usize> {
        let desc = self.ring.pop()?;
        let n = self.sock.area.read(desc.addr, desc.len as usize, buf);
        // Back to the kernel at the start of its frame (the kernel may hand out an offset inside it). The fill
        // ring has room for every receive frame, so the push cannot fail.
        let frame = desc.addr - desc.addr % u64::from(FRAME_SIZE);
        self.fill.push(frame);
        Some(n)
    }
}

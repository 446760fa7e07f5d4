//! AF_XDP sockets (`run --path af_xdp`) through the `xdpilone` crate: the UMEM area (an anonymous mapping owned
//! here), the socket bound to one queue of one interface, and its four rings split in two halves, one per RT thread:
//! `XskTx` (transmit ring + completion ring) for the sender, `XskRx` (receive ring + fill ring) for the receiver.
//! The crate does the setsockopt/mmap/bind work; what needs `unsafe` here is the UMEM's memory (the kernel and the
//! crate take a raw area) and copying frames in and out of it.
//!
//! The UMEM has `FRAMES` frames of `FRAME_SIZE` bytes: the first half are receive buffers, handed to the kernel on the
//! fill ring and given back after each frame is copied out; the second half are transmit buffers, used in turn.
//! Nothing allocates after `Xsk::open`.

use std::ffi::CString;
use std::io;
use std::num::NonZeroU32;
use std::os::fd::{BorrowedFd, RawFd};
use std::ptr::NonNull;
use std::sync::Arc;

use xdpilone::xdp::XdpDesc;
use xdpilone::{
    CompletionQueue, FillQueue, IfInfo, RingRx, RingTx, Socket, SocketConfig, Umem, UmemConfig,
    User,
};

/// Bytes of one UMEM frame: a page half, more than the longest probe (MTU 1500 + header).
pub(crate) const FRAME_SIZE: u32 = 2048;
/// Frames in the UMEM: half for receiving, half for sending.
const FRAMES: u32 = 256;
const RX_FRAMES: u32 = FRAMES / 2;
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

/// The UMEM's memory: an anonymous, populated, private mapping, unmapped on drop (after every ring that points into
/// it is gone: each half holds an `Arc` of it).
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

    fn slice(&self) -> NonNull<[u8]> {
        NonNull::slice_from_raw_parts(self.ptr, self.len)
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
        // SAFETY: unmaps exactly the mapping `map` made; every pointer into it is gone with the rings (they hold the
        // `Arc` this drop ends). The kernel keeps its own reference to the pages while a socket still has them.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// An AF_XDP socket bound to one queue. Holds the UMEM registration and the socket until both halves are dropped.
pub(crate) struct Xsk {
    fd: RawFd,
    pub(crate) binding: Binding,
    /// Why zero-copy was not had (the bind's error), when it was not.
    pub(crate) zero_copy_refused: Option<io::Error>,
    pub(crate) tx: XskTx,
    pub(crate) rx: XskRx,
}

/// What the two halves keep alive, whichever is dropped last: the UMEM's registration and the socket's
/// configuration (never used after `open`, only dropped), then the area they point into. Fields drop in order: the
/// area goes last.
struct UmemHold {
    _umem: Umem,
    _user: User,
    _area: Arc<Area>,
}

// SAFETY: `Umem` and `User` are not touched after `open` (only dropped, once, by whichever thread drops the last
// `Arc`); their file descriptor and mapping may be closed from any thread.
unsafe impl Send for UmemHold {}
// SAFETY: as above: no method is ever called through a shared reference.
unsafe impl Sync for UmemHold {}

impl Xsk {
    /// The socket, for its XSKMAP entry.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor belongs to the rings in `self.tx`/`self.rx`, which keep it open for as long as
        // `self` (and so the borrow) lives.
        unsafe { BorrowedFd::borrow_raw(self.fd) }
    }

    /// An AF_XDP socket on `ifname` (validated by the caller), queue `queue`: zero-copy first, else copy mode.
    pub(crate) fn open(ifname: &str, queue: u32) -> io::Result<Xsk> {
        match Xsk::bind(ifname, queue, SocketConfig::XDP_BIND_ZEROCOPY) {
            Ok(x) => Ok(x),
            Err(zc) => {
                let mut x = Xsk::bind(ifname, queue, SocketConfig::XDP_BIND_COPY)?;
                x.binding = Binding::Copy;
                x.zero_copy_refused = Some(zc);
                Ok(x)
            }
        }
    }

    fn bind(ifname: &str, queue: u32, flags: u16) -> io::Result<Xsk> {
        let errno = |e: xdpilone::Errno| io::Error::from_raw_os_error(e.get_raw());
        let name =
            CString::new(ifname).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let mut info = IfInfo::invalid();
        info.from_name(&name).map_err(errno)?;
        info.set_queue(queue);
        let area = Arc::new(Area::map((FRAMES * FRAME_SIZE) as usize)?);
        let config = UmemConfig {
            fill_size: RING,
            complete_size: RING,
            frame_size: FRAME_SIZE,
            headroom: 0,
            flags: 0,
        };
        // SAFETY: the area is a page-aligned mapping (mmap) of FRAMES * FRAME_SIZE bytes that outlives the Umem:
        // both go into `UmemHold`, whose fields drop the Umem before its `Arc<Area>`.
        let umem = unsafe { Umem::new(config, area.slice()) }.map_err(errno)?;
        let sock = Socket::with_shared(&info, &umem).map_err(errno)?;
        let device = umem.fq_cq(&sock).map_err(errno)?;
        let user = umem
            .rx_tx(
                &sock,
                &SocketConfig {
                    rx_size: NonZeroU32::new(RING),
                    tx_size: NonZeroU32::new(RING),
                    bind_flags: flags,
                },
            )
            .map_err(errno)?;
        let ring_rx = user.map_rx().map_err(errno)?;
        let ring_tx = user.map_tx().map_err(errno)?;
        let (mut fill, comp) = device.into_parts();
        // The receive frames go to the kernel before the bind: it can deliver from the first frame on.
        {
            let mut w = fill.fill(RX_FRAMES);
            w.insert((0..RX_FRAMES).map(|i| u64::from(i * FRAME_SIZE)));
            w.commit();
        }
        umem.bind(&user).map_err(errno)?;
        let fd = ring_rx.as_raw_fd();
        let hold = Arc::new(UmemHold {
            _umem: umem,
            _user: user,
            _area: Arc::clone(&area),
        });
        Ok(Xsk {
            fd,
            binding: Binding::ZeroCopy,
            zero_copy_refused: None,
            tx: XskTx {
                ring: ring_tx,
                comp,
                next: 0,
                in_flight: 0,
                fd,
                area: Arc::clone(&area),
                _hold: Arc::clone(&hold),
            },
            rx: XskRx {
                ring: ring_rx,
                fill,
                fd,
                area,
                _hold: hold,
            },
        })
    }
}

/// The sender's half: the transmit ring and the completion ring, and the transmit frames used in turn.
pub(crate) struct XskTx {
    ring: RingTx,
    comp: CompletionQueue,
    /// The next transmit frame (0..FRAMES - RX_FRAMES).
    next: u32,
    /// Frames handed to the kernel whose completion has not come back.
    in_flight: u32,
    fd: RawFd,
    area: Arc<Area>,
    _hold: Arc<UmemHold>,
}

// SAFETY: the rings are single-producer/single-consumer and this half is used by one thread at a time (moved into the
// sender); the area is Send + Sync (see `Area`).
unsafe impl Send for XskTx {}

impl XskTx {
    /// Sends one frame: reaps the completions of earlier frames, copies `frame` into the next free transmit frame,
    /// puts its descriptor on the transmit ring and kicks the kernel (sendto, MSG_DONTWAIT). ENOBUFS when every
    /// transmit frame is still in flight.
    pub(crate) fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.reap();
        if self.in_flight >= FRAMES - RX_FRAMES || frame.len() > FRAME_SIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::ENOBUFS));
        }
        let offset = u64::from((RX_FRAMES + self.next) * FRAME_SIZE);
        if !self.area.write(offset, frame) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let desc = XdpDesc {
            addr: offset,
            len: frame.len() as u32,
            options: 0,
        };
        let mut w = self.ring.transmit(1);
        if !w.insert_once(desc) {
            return Err(io::Error::from_raw_os_error(libc::ENOBUFS));
        }
        w.commit();
        self.next = (self.next + 1) % (FRAMES - RX_FRAMES);
        self.in_flight += 1;
        kick(self.fd)
    }

    /// Takes back the transmit frames the kernel is done with.
    fn reap(&mut self) {
        let mut r = self.comp.complete(RING);
        while r.read().is_some() {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        r.release();
    }
}

/// sendto(fd, NULL, 0, MSG_DONTWAIT): tells the kernel the transmit ring has frames. EAGAIN/EBUSY mean it is still
/// sending the earlier ones, which takes this frame along: not an error.
fn kick(fd: RawFd) -> io::Result<()> {
    // SAFETY: a zero-length sendto with no buffer and no address on a socket this process owns.
    let rc = unsafe {
        libc::sendto(
            fd,
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
    ring: RingRx,
    fill: FillQueue,
    fd: RawFd,
    area: Arc<Area>,
    _hold: Arc<UmemHold>,
}

// SAFETY: as for `XskTx`: one thread at a time (moved into the receiver).
unsafe impl Send for XskRx {}

impl XskRx {
    /// Receives one frame into `buf` (truncated to it): from the ring at once if one is there, else after waiting
    /// up to `timeout_ms` in poll(); WouldBlock when none came. The frame goes back on the fill ring after the copy.
    pub(crate) fn recv(&mut self, buf: &mut [u8], timeout_ms: i32) -> io::Result<usize> {
        if let Some(n) = self.take(buf) {
            return Ok(n);
        }
        if timeout_ms != 0 {
            super::packet::poll(self.fd, timeout_ms)?;
            if let Some(n) = self.take(buf) {
                return Ok(n);
            }
        }
        Err(io::Error::from(io::ErrorKind::WouldBlock))
    }

    fn take(&mut self, buf: &mut [u8]) -> Option<usize> {
        let mut r = self.ring.receive(1);
        let desc = r.read()?;
        r.release();
        let n = self.area.read(desc.addr, desc.len as usize, buf);
        // Back to the kernel at the start of its frame (the kernel may hand out an offset inside it).
        let frame = desc.addr - desc.addr % u64::from(FRAME_SIZE);
        let mut w = self.fill.fill(1);
        w.insert_once(frame);
        w.commit();
        Some(n)
    }
}

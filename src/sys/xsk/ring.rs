//! One of an AF_XDP socket's four rings, mapped from the socket: a power-of-two array of descriptors and two
//! free-running u32 indices, the producer's and the consumer's (Documentation/networking/af_xdp.rst, "Rings";
//! include/uapi/linux/if_xdp.h). Each ring has one producer and one consumer: this process produces on the fill and
//! transmit rings and consumes on the receive and completion rings, the kernel the other way round.
//!
//! The entries are published by the producer's index: the producer writes the entries and then stores its index
//! with Release; the consumer loads that index with Acquire before it reads them, and stores its own with Release
//! once it is done with them (which frees the slots for the producer).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Where the ring's parts lie in its mapping (one `xdp_ring_offset` of XDP_MMAP_OFFSETS).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Offsets {
    pub(super) producer: u64,
    pub(super) consumer: u64,
    pub(super) desc: u64,
}

/// Which end of the ring this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    /// It puts entries on the ring (fill, transmit).
    Produce,
    /// It takes entries off the ring (receive, completion).
    Consume,
}

/// A mapped ring of `T` (u64 frame addresses on the fill and completion rings, `xdp_desc` on RX and TX).
pub(super) struct Ring<T> {
    map: NonNull<u8>,
    map_len: usize,
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    descs: NonNull<T>,
    mask: u32,
    /// This side's own index (the producer's on a ring this process produces on, else the consumer's): only this
    /// side writes it, so it is kept here and stored to the shared word after each batch.
    own: u32,
}

// SAFETY: the mapping is owned by this value alone, and each ring is used by one thread at a time (the two halves of
// the socket take two rings each); the kernel's side is ordered by the atomic indices.
unsafe impl<T: Send> Send for Ring<T> {}

impl<T: Copy> Ring<T> {
    /// Maps the ring of `entries` entries (a power of two) at page offset `pgoff` of socket `fd`.
    pub(super) fn map(
        fd: BorrowedFd<'_>,
        pgoff: u64,
        off: Offsets,
        entries: u32,
        side: Side,
    ) -> io::Result<Ring<T>> {
        let len = off.desc as usize + entries as usize * size_of::<T>();
        // SAFETY: a new shared mapping of the socket's ring at an address the kernel picks; no existing memory is
        // affected. The kernel checks `pgoff` and `len` against the ring it made for the socket option.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                pgoff as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave NULL"))?;
        // SAFETY: the three offsets come from the kernel's XDP_MMAP_OFFSETS for this ring and lie inside the
        // mapping of `len` bytes; the kernel aligns the indices to 4 bytes and the descriptors to 8.
        let at = |o: u64| unsafe { map.add(o as usize) };
        let producer = at(off.producer).cast::<AtomicU32>();
        let consumer = at(off.consumer).cast::<AtomicU32>();
        let mut ring = Ring {
            map,
            map_len: len,
            producer,
            consumer,
            descs: at(off.desc).cast::<T>(),
            mask: entries - 1,
            own: 0,
        };
        ring.own = match side {
            Side::Produce => ring.producer().load(Ordering::Relaxed),
            Side::Consume => ring.consumer().load(Ordering::Relaxed),
        };
        Ok(ring)
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into the mapping, which lives as long as `self`; an aligned u32 the kernel also accesses
        // atomically.
        unsafe { self.producer.as_ref() }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { self.consumer.as_ref() }
    }

    fn slot(&self, index: u32) -> *mut T {
        // SAFETY: `index & mask` < entries, so the slot lies inside the descriptor array of the mapping.
        unsafe { self.descs.as_ptr().add((index & self.mask) as usize) }
    }

    /// Producer side: puts `entry` on the ring and publishes it; false when the ring is full.
    pub(super) fn push(&mut self, entry: T) -> bool {
        let consumed = self.consumer().load(Ordering::Acquire);
        if self.own.wrapping_sub(consumed) > self.mask {
            return false;
        }
        // SAFETY: the slot is free (the consumer is past it, checked above) and inside the mapping; only this side
        // writes free slots.
        unsafe { self.slot(self.own).write_volatile(entry) };
        self.own = self.own.wrapping_add(1);
        self.producer().store(self.own, Ordering::Release);
        true
    }

    /// Consumer side: the next entry the kernel published, if any, and frees its slot.
    pub(super) fn pop(&mut self) -> Option<T> {
        let produced = self.producer().load(Ordering::Acquire);
        if produced == self.own {
            return None;
        }
        // SAFETY: the slot was published (the producer's index is past it, loaded with Acquire above) and is not
        // written again until the consumer's index, stored below, frees it.
        let entry = unsafe { self.slot(self.own).read_volatile() };
        self.own = self.own.wrapping_add(1);
        self.consumer().store(self.own, Ordering::Release);
        Some(entry)
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; the pointers into it go with `self`.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), self.map_len);
        }
    }
}

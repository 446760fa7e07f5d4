//! What `reflect` does to an EtherCAT frame: a chain of N software SubDevices, each an ESC with no application,
//! processes it in place as the frame would pass through them, in order (ETG.1000.4):
//! - position addressing (APRD/APWR/APRW/ARMW): every ESC increments ADP, the one that sees ADP 0 is addressed;
//! - node addressing (FPRD/FPWR/FPRW/FRMW): the ESC whose station address (register 0x0010) equals ADP;
//! - broadcast (BRD/BWR/BRW): every ESC, ADP incremented; reads are ORed into the data, as ESCs do;
//! - logical commands (LRD/LWR/LRW): no FMMU is mapped, so no ESC answers (WKC and data unchanged);
//! - working counter: +1 per read or write, +3 per read-write, per addressed ESC.
//!
//! Each ESC has 8 KiB of memory (registers 0x0000–0x0FFF and 4 KiB of process RAM; beyond reads zeros and drops
//! writes, the WKC still counts), read-only identification, DL status and AL status, and the AL state machine of
//! an ESC with device emulation: INIT, PRE-OP and BOOT are reached on request; SAFE-OP and OP need process data and
//! an application, which it has none of, so they are refused with the error flag and AL status code 0x0011.
//! Distributed clocks (dc.rs) unless `Chain::without_dc`: receive times latched by a write to 0x0900 and the system
//! time, from the frame's receive stamp; an ESC without them answers nothing in 0x0900–0x09FF (WKC unchanged).
//! No EEPROM content (SII reads return zeros), no mailbox, no FMMU/SyncManager behaviour.
//!
//! A frame whose source MAC already has bit 0x02 set has passed an ESC: it is an answer and is never processed
//! again (two reflectors on one segment cannot ping-pong).

mod dc;

use super::codec::{self, ESC_SRC_MAC_BIT, EcatError};
pub(crate) use dc::DcSpec;
use dc::{Dc, FEATURES_DC};

/// Memory per SubDevice: registers and 4 KiB of process RAM.
const MEM: usize = 0x2000;
/// Register addresses (ETG.1000.4 table 31 and on).
pub(crate) mod reg {
    pub(crate) const TYPE: usize = 0x0000;
    pub(crate) const REVISION: usize = 0x0001;
    pub(crate) const STATION: usize = 0x0010;
    pub(crate) const DL_STATUS: usize = 0x0110;
    pub(crate) const AL_CONTROL: usize = 0x0120;
    pub(crate) const AL_STATUS: usize = 0x0130;
    pub(crate) const AL_STATUS_CODE: usize = 0x0134;
    pub(crate) const PDI_CONTROL: usize = 0x0140;
}
/// ESC type and revision `reflect` reports at 0x0000 ('R', 1): no real ESC's, so a capture shows who answered.
pub(crate) const ESC_TYPE: u8 = 0x52;
pub(crate) const ESC_REVISION: u8 = 0x01;
/// Byte ranges a MainDevice cannot write: identification, DL status, AL status and status code.
const READ_ONLY: [(usize, usize); 3] = [(0x0000, 0x0010), (0x0110, 0x0112), (0x0130, 0x0136)];

pub(crate) mod al {
    pub(crate) const INIT: u16 = 1;
    pub(crate) const PRE_OP: u16 = 2;
    pub(crate) const BOOT: u16 = 3;
    #[cfg(test)]
    pub(crate) const SAFE_OP: u16 = 4;
    pub(crate) const ERROR: u16 = 0x10;
    /// AL status code: invalid requested state change.
    pub(crate) const INVALID_CHANGE: u16 = 0x0011;
}

pub(crate) struct SubDevice {
    mem: Box<[u8; MEM]>,
    /// Its distributed clock; None: an ESC without.
    dc: Option<Dc>,
}

impl SubDevice {
    /// Position `pos` in a chain of `n`, station address `station`.
    fn new(pos: usize, n: usize, station: u16, dc: Option<DcSpec>) -> SubDevice {
        let mut d = SubDevice {
            mem: Box::new([0; MEM]),
            dc: dc.map(Dc::new),
        };
        d.mem[reg::TYPE] = ESC_TYPE;
        d.mem[reg::REVISION] = ESC_REVISION;
        if d.dc.is_some() {
            d.put16(dc::reg::FEATURES, FEATURES_DC);
        }
        d.put16(reg::STATION, station);
        // Link and communication on port 0; port 1 open towards the next SubDevice, or closed at the chain's end.
        let port1 = if pos + 1 < n { 0x0820 } else { 0x0400 };
        d.put16(reg::DL_STATUS, 0x0210 | port1);
        d.put16(reg::AL_STATUS, al::INIT);
        // PDI none, device emulation on (0x0141 bit 0): the AL status follows the AL control.
        d.put16(reg::PDI_CONTROL, 0x0100);
        d
    }

    fn get16(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.mem[at], self.mem[at + 1]])
    }

    fn put16(&mut self, at: usize, v: u16) {
        self.mem[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn station(&self) -> u16 {
        self.get16(reg::STATION)
    }

    pub(crate) fn al_status(&self) -> u16 {
        self.get16(reg::AL_STATUS)
    }

    fn read(&self, ado: usize, data: &mut [u8], or: bool) {
        for (i, b) in data.iter_mut().enumerate() {
            let v = self.mem.get(ado + i).copied().unwrap_or(0);
            *b = if or { *b | v } else { v };
        }
    }

    fn write(&mut self, ado: usize, data: &[u8]) {
        let mut al_control = false;
        if (ado..ado + data.len()).contains(&dc::reg::RECV_TIME_P0) {
            self.latch();
        }
        let (dlo, dhi) = dc::reg::LATCHED;
        for (i, &b) in data.iter().enumerate() {
            let a = ado + i;
            if a >= MEM
                || (dlo..dhi).contains(&a)
                || READ_ONLY.iter().any(|&(lo, hi)| (lo..hi).contains(&a))
            {
                continue;
            }
            self.mem[a] = b;
            al_control |= a == reg::AL_CONTROL;
        }
        if al_control {
            self.al_request(self.get16(reg::AL_CONTROL));
        }
    }

    /// A write to 0x0900: the receive times of the frame passing now (see dc.rs).
    fn latch(&mut self) {
        let Some(dc) = &self.dc else { return };
        let (p0, p1, pu) = dc.latch();
        self.mem[dc::reg::RECV_TIME_P0..][..4].copy_from_slice(&p0.to_le_bytes());
        self.mem[dc::reg::RECV_TIME_P1..][..4].copy_from_slice(&p1.to_le_bytes());
        self.mem[dc::reg::RECV_TIME_PU..][..8].copy_from_slice(&pu.to_le_bytes());
    }

    /// A frame received at host time `rx_ns` reaches this SubDevice (at `pos` of `n`): its system time register
    /// shows the time it passes.
    fn frame_at(&mut self, rx_ns: u64, pos: usize, n: usize) {
        let Some(dc) = &mut self.dc else { return };
        dc.frame(rx_ns, pos, n);
        let off = &self.mem[dc::reg::SYSTEM_OFFSET..][..8];
        let offset = u64::from_le_bytes(off.try_into().unwrap_or([0; 8]));
        let st = dc.system_time(offset);
        self.mem[dc::reg::SYSTEM_TIME..][..8].copy_from_slice(&st.to_le_bytes());
    }

    /// The AL state machine of an ESC with no application (see the module comment).
    fn al_request(&mut self, control: u16) {
        let mut status = self.al_status();
        if control & al::ERROR != 0 {
            status &= !al::ERROR;
            self.put16(reg::AL_STATUS_CODE, 0);
        }
        let state = status & 0x0F;
        let want = control & 0x0F;
        let ok = match want {
            al::INIT => true,
            al::PRE_OP => matches!(state, al::INIT | al::PRE_OP),
            al::BOOT => matches!(state, al::INIT | al::BOOT),
            _ => want == state,
        };
        if ok {
            status = (status & al::ERROR) | want;
        } else {
            status |= al::ERROR;
            self.put16(reg::AL_STATUS_CODE, al::INVALID_CHANGE);
        }
        self.put16(reg::AL_STATUS, status);
    }
}

/// A chain of software SubDevices.
pub(crate) struct Chain {
    pub(crate) devices: Vec<SubDevice>,
}

/// What `Chain::process` did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Processed {
    /// Processed: send it back.
    Answer,
    /// Source MAC bit 0x02 set: already an answer, send nothing.
    AlreadyAnswered,
}

/// Datagrams rewritten per frame (a full frame of empty datagrams would be 125; MainDevices send a few).
const MAX_DGS: usize = 64;

impl Chain {
    /// `n` SubDevices with station addresses `station`, `station`+1, …, with distributed clocks that do not drift.
    #[cfg(test)]
    pub(crate) fn new(n: usize, station: u16) -> Chain {
        Chain::with_dc(n, station, Some(DcSpec { drift_ppm: 0.0 }))
    }

    /// The same with clocks as `dc` says, or none.
    pub(crate) fn with_dc(n: usize, station: u16, dc: Option<DcSpec>) -> Chain {
        Chain {
            devices: (0..n)
                .map(|i| SubDevice::new(i, n, station.wrapping_add(i as u16), dc))
                .collect(),
        }
    }

    /// `process_at` for a frame received at host time 0.
    #[cfg(test)]
    pub(crate) fn process(&mut self, frame: &mut [u8]) -> Result<Processed, EcatError> {
        self.process_at(frame, 0)
    }

    /// Processes an EtherCAT frame, received at host time `rx_ns` (its receive stamp: the distributed clocks'
    /// time base), in place as the chain would (see the module comment).
    pub(crate) fn process_at(
        &mut self,
        frame: &mut [u8],
        rx_ns: u64,
    ) -> Result<Processed, EcatError> {
        // Offsets first (the iterator borrows the frame), then the rewrite.
        let mut spots = [(0usize, 0usize); MAX_DGS];
        let mut n = 0;
        for dg in codec::datagrams(frame)? {
            let dg = dg?;
            if n < MAX_DGS {
                spots[n] = (dg.off, dg.data.len());
                n += 1;
            }
        }
        if frame[6] & ESC_SRC_MAC_BIT != 0 {
            return Ok(Processed::AlreadyAnswered);
        }
        let count = self.devices.len();
        for (pos, d) in self.devices.iter_mut().enumerate() {
            d.frame_at(rx_ns, pos, count);
            for &(off, len) in &spots[..n] {
                d.datagram(&mut frame[off..off + codec::DG_HLEN + len + codec::WKC_LEN]);
            }
        }
        frame[6] |= ESC_SRC_MAC_BIT;
        Ok(Processed::Answer)
    }
}

impl SubDevice {
    /// One datagram (header, data, WKC) passing this ESC.
    fn datagram(&mut self, dg: &mut [u8]) {
        let cmd = dg[0];
        let adp = u16::from_le_bytes([dg[2], dg[3]]);
        let ado = usize::from(u16::from_le_bytes([dg[4], dg[5]]));
        let (hdr, rest) = dg.split_at_mut(codec::DG_HLEN);
        let (data, wkc) = rest.split_at_mut(rest.len() - codec::WKC_LEN);
        let mut add = 0u16;
        match cmd {
            // Position addressing: APRD, APWR, APRW, ARMW.
            0x01..=0x03 | 0x0D => {
                let me = adp == 0;
                hdr[2..4].copy_from_slice(&adp.wrapping_add(1).to_le_bytes());
                add = self.access(cmd, me, ado, data);
            }
            // Node addressing: FPRD, FPWR, FPRW, FRMW.
            0x04..=0x06 | 0x0E => add = self.access(cmd, adp == self.station(), ado, data),
            // Broadcast: BRD, BWR, BRW.
            0x07..=0x09 => {
                hdr[2..4].copy_from_slice(&adp.wrapping_add(1).to_le_bytes());
                add = self.access(cmd, true, ado, data);
            }
            // NOP, logical commands (no FMMU mapped), anything unknown: passed on untouched.
            _ => {}
        }
        if add > 0 {
            let w = u16::from_le_bytes([wkc[0], wkc[1]]).wrapping_add(add);
            wkc.copy_from_slice(&w.to_le_bytes());
        }
    }

    /// The memory access of `cmd` when addressed (`me`); returns what it adds to the WKC.
    fn access(&mut self, cmd: u8, me: bool, ado: usize, data: &mut [u8]) -> u16 {
        let (lo, hi) = dc::reg::DC_AREA;
        if self.dc.is_none() && ado < hi && ado + data.len() > lo {
            // No DC unit: nothing there answers.
            return 0;
        }
        match (cmd, me) {
            // APRD, FPRD.
            (0x01 | 0x04, true) => {
                self.read(ado, data, false);
                1
            }
            // APWR, FPWR, BWR.
            (0x02 | 0x05 | 0x08, true) => {
                self.write(ado, data);
                1
            }
            // APRW, FPRW: the old content comes back, the datagram's is written.
            (0x03 | 0x06, true) => {
                let mut old = [0u8; 64];
                let n = data.len().min(old.len());
                self.read(ado, &mut old[..n], false);
                self.write(ado, data);
                data[..n].copy_from_slice(&old[..n]);
                3
            }
            // BRD: ORed into the data.
            (0x07, true) => {
                self.read(ado, data, true);
                1
            }
            // BRW: the datagram's data written, the memory ORed into it.
            (0x09, true) => {
                self.write(ado, data);
                self.read(ado, data, true);
                3
            }
            // ARMW, FRMW: the addressed ESC reads, every other one writes what it read.
            (0x0D | 0x0E, true) => {
                self.read(ado, data, false);
                1
            }
            (0x0D | 0x0E, false) => {
                self.write(ado, data);
                1
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests;

//! EtherCAT frame codec (ETG.1000.4 layout): the Ethernet header, the 2-byte EtherCAT header and the datagrams.
//!
//! Everything here works on byte slices in place: the RT sender patches a prebuilt frame and the receiver and the
//! reflector read or rewrite received frames without allocating.

pub(crate) const ETH_HLEN: usize = 14;
pub(crate) const ETHERTYPE_ECAT: u16 = 0x88A4;
/// EtherCAT header: 11-bit length of the datagrams that follow, 1 reserved bit, 4-bit type (1 = commands).
pub(crate) const ECAT_HLEN: usize = 2;
pub(crate) const ECAT_TYPE_COMMANDS: u8 = 1;
/// Datagram header: cmd, idx, ADP, ADO, length/flags, IRQ.
pub(crate) const DG_HLEN: usize = 10;
pub(crate) const WKC_LEN: usize = 2;
/// Bit set by an ESC in the first byte of the source MAC of every frame it forwards back.
pub(crate) const ESC_SRC_MAC_BIT: u8 = 0x02;

const LEN_MASK: u16 = 0x07ff;
const MORE_FOLLOWS: u16 = 0x8000;

/// EtherCAT command codes used here (the rest pass through the codec unnamed).
pub(crate) mod cmd {
    pub(crate) const NOP: u8 = 0x00;
    pub(crate) const APRD: u8 = 0x01;
    pub(crate) const BRD: u8 = 0x07;
    pub(crate) const BWR: u8 = 0x08;
}

/// Why bytes are not a well-formed EtherCAT frame (the variant names the first defect found).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EcatError {
    #[error("shorter than an Ethernet + EtherCAT header")]
    Short,
    #[error("EtherType is not 0x88A4")]
    NotEcat,
    #[error("EtherCAT header type is not 1 (commands)")]
    NotCommands,
    #[error("EtherCAT header length runs past the frame")]
    BadLength,
    #[error("a datagram runs past the EtherCAT length")]
    Truncated,
    #[error("no datagram")]
    Empty,
}

pub(crate) fn ethertype(frame: &[u8]) -> Option<u16> {
    frame.get(12..14).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

/// One datagram, borrowed from a frame. `off` is its offset in the frame (for in-place rewrites).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Datagram<'a> {
    pub(crate) off: usize,
    pub(crate) cmd: u8,
    pub(crate) idx: u8,
    pub(crate) adp: u16,
    pub(crate) ado: u16,
    pub(crate) irq: u16,
    pub(crate) data: &'a [u8],
    pub(crate) wkc: u16,
    pub(crate) more: bool,
}

impl Datagram<'_> {}

/// The datagrams of an EtherCAT frame (Ethernet header included), in order. Trailing padding is ignored: real NICs
/// pad short frames to 60 bytes and the EtherCAT length says where the datagrams end.
pub(crate) fn datagrams(frame: &[u8]) -> Result<Datagrams<'_>, EcatError> {
    if frame.len() < ETH_HLEN + ECAT_HLEN {
        return Err(EcatError::Short);
    }
    if ethertype(frame) != Some(ETHERTYPE_ECAT) {
        return Err(EcatError::NotEcat);
    }
    let h = u16::from_le_bytes([frame[ETH_HLEN], frame[ETH_HLEN + 1]]);
    if (h >> 12) as u8 != ECAT_TYPE_COMMANDS {
        return Err(EcatError::NotCommands);
    }
    let start = ETH_HLEN + ECAT_HLEN;
    let end = start + (h & LEN_MASK) as usize;
    if end > frame.len() {
        return Err(EcatError::BadLength);
    }
    if end < start + DG_HLEN + WKC_LEN {
        return Err(EcatError::Empty);
    }
    Ok(Datagrams {
        frame: &frame[..end],
        pos: start,
        done: false,
    })
}

pub(crate) struct Datagrams<'a> {
    frame: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> Iterator for Datagrams<'a> {
    type Item = Result<Datagram<'a>, EcatError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let f = self.frame;
        let p = self.pos;
        if p + DG_HLEN + WKC_LEN > f.len() {
            self.done = true;
            return Some(Err(EcatError::Truncated));
        }
        let le = |o: usize| u16::from_le_bytes([f[p + o], f[p + o + 1]]);
        let lenf = le(6);
        let dlen = (lenf & LEN_MASK) as usize;
        let wkc_at = p + DG_HLEN + dlen;
        if wkc_at + WKC_LEN > f.len() {
            self.done = true;
            return Some(Err(EcatError::Truncated));
        }
        let more = lenf & MORE_FOLLOWS != 0;
        self.pos = wkc_at + WKC_LEN;
        // A datagram without "more follows" ends the chain even if the EtherCAT length claims more bytes.
        self.done = !more || self.pos >= f.len();
        Some(Ok(Datagram {
            off: p,
            cmd: f[p],
            idx: f[p + 1],
            adp: le(2),
            ado: le(4),
            irq: le(8),
            data: &f[p + DG_HLEN..wkc_at],
            wkc: u16::from_le_bytes([f[wkc_at], f[wkc_at + 1]]),
            more,
        }))
    }
}

/// Writes the EtherCAT header for `dg_bytes` bytes of datagrams at its place in `frame`.
pub(crate) fn put_ecat_header(frame: &mut [u8], dg_bytes: usize) {
    let h = (dg_bytes as u16 & LEN_MASK) | (u16::from(ECAT_TYPE_COMMANDS) << 12);
    frame[ETH_HLEN..ETH_HLEN + ECAT_HLEN].copy_from_slice(&h.to_le_bytes());
}

/// Writes a datagram header at `off` (data and WKC are the caller's); returns the offset of its data.
#[allow(clippy::too_many_arguments)]
pub(crate) fn put_datagram_header(
    frame: &mut [u8],
    off: usize,
    cmd: u8,
    idx: u8,
    adp: u16,
    ado: u16,
    dlen: usize,
    more: bool,
) -> usize {
    frame[off] = cmd;
    frame[off + 1] = idx;
    frame[off + 2..off + 4].copy_from_slice(&adp.to_le_bytes());
    frame[off + 4..off + 6].copy_from_slice(&ado.to_le_bytes());
    let lenf = (dlen as u16 & LEN_MASK) | if more { MORE_FOLLOWS } else { 0 };
    frame[off + 6..off + 8].copy_from_slice(&lenf.to_le_bytes());
    frame[off + 8..off + 10].fill(0);
    off + DG_HLEN
}

#[cfg(test)]
pub(crate) mod tests;

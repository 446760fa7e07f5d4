//! The XDP program of `run --path af_xdp`: loaded and attached through `aya` (bpf(2) is aya's), detached when
//! `Program` drops; and, through rtnetlink, what program an interface has (IFLA_XDP) and the detach by interface
//! index that a killed run's leftover needs (aya detaches only what it attached in this process).
//!
//! The program (src/measure/nic/xdp/probe.bpf.c, compiled by build.rs) redirects frames of one EtherType to the
//! AF_XDP socket in its XSKMAP slot for the receive queue they came on, and passes every other frame.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use aya::maps::{MapData, MapError, XskMap};
use aya::programs::{ProgramError, Xdp, XdpMode};
use aya::{Ebpf, EbpfError, EbpfLoader};

/// The compiled program (bpfel: the same object on every host architecture).
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/probe.bpf.o"));
/// The program's function name in the object, also the name the kernel lists it under (truncated to 15 bytes).
pub(crate) const PROGRAM: &str = "rmp_eval_probe";

/// Where the program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttachMode {
    /// In the driver, before any socket buffer exists (XDP_FLAGS_DRV_MODE).
    Native,
    /// In the kernel's receive path after the driver, on a socket buffer (XDP_FLAGS_SKB_MODE).
    Generic,
}

impl AttachMode {
    /// The XDP_FLAGS_* bit of the mode (include/uapi/linux/if_link.h).
    pub(crate) fn flags(self) -> u32 {
        match self {
            AttachMode::Generic => 1 << 1,
            AttachMode::Native => 1 << 2,
        }
    }

    fn aya(self) -> XdpMode {
        match self {
            AttachMode::Native => XdpMode::Driver,
            AttachMode::Generic => XdpMode::Skb,
        }
    }
}

/// Why the program could not be loaded or attached: the step, and aya's reason.
#[derive(Debug, thiserror::Error)]
pub(crate) enum XdpError {
    #[error("loading the XDP program: {0}")]
    Load(EbpfError),
    #[error("the XDP program has no map xsks")]
    NoMap,
    #[error("the XSKMAP: {0}")]
    Map(MapError),
    #[error("putting the AF_XDP socket in the XSKMAP: {0}")]
    SetMap(MapError),
    #[error("loading the XDP program into the kernel: {0}")]
    Kernel(ProgramError),
    #[error("the XDP object has no program {PROGRAM}")]
    NoProgram,
    #[error("the XDP program: {0}")]
    NotXdp(ProgramError),
    #[error("{0}")]
    Attach(ProgramError),
}

impl From<XdpError> for crate::error::Error {
    fn from(e: XdpError) -> Self {
        crate::error::Error::failed(e.to_string())
    }
}

/// Why the program could not be attached.
#[derive(Debug)]
pub(crate) enum AttachError {
    /// The interface already has an XDP program (EBUSY, or EEXIST for one in the other mode): not ours to replace.
    Busy,
    /// Finding or attaching the program failed.
    Failed(XdpError),
}

/// The program, loaded, with the AF_XDP socket in its XSKMAP; once `attach`ed, dropping it detaches the program
/// (aya closes its bpf_link, or on kernels before 5.9 detaches through netlink) and unloads it.
pub(crate) struct Program {
    // Declared first, so dropped first: the XSKMAP's handle, then the program and its link.
    _map: XskMap<MapData>,
    ebpf: Ebpf,
}

/// Loads the program for frames of `ethertype` and puts the socket `xsk` in the slot of receive queue `queue`.
pub(crate) fn load(ethertype: u16, queue: u32, xsk: BorrowedFd<'_>) -> Result<Program, XdpError> {
    raise_memlock();
    let be = ethertype.to_be();
    let mut ebpf = EbpfLoader::new()
        .override_global("probe_ethertype", &be, true)
        .load(OBJECT)
        .map_err(XdpError::Load)?;
    let map = ebpf.take_map("xsks").ok_or(XdpError::NoMap)?;
    let mut map = XskMap::try_from(map).map_err(XdpError::Map)?;
    map.set(queue, xsk.as_raw_fd(), 0)
        .map_err(XdpError::SetMap)?;
    program(&mut ebpf)?.load().map_err(XdpError::Kernel)?;
    Ok(Program { _map: map, ebpf })
}

/// Kernels before 5.11 charge BPF maps and programs to RLIMIT_MEMLOCK (often 64 KiB), which the XSKMAP alone can
/// exceed; later ones charge the memory cgroup and ignore it. Raised for this process only; a refusal leaves the
/// load to say what failed.
fn raise_memlock() {
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit reads one rlimit that lives on this stack frame.
    let _ = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited) };
}

fn program(ebpf: &mut Ebpf) -> Result<&mut Xdp, XdpError> {
    ebpf.program_mut(PROGRAM)
        .ok_or(XdpError::NoProgram)?
        .try_into()
        .map_err(XdpError::NotXdp)
}

impl Program {
    /// Attaches the program to interface `ifindex` in `mode`.
    pub(crate) fn attach(&mut self, ifindex: u32, mode: AttachMode) -> Result<(), AttachError> {
        let prog = program(&mut self.ebpf).map_err(AttachError::Failed)?;
        match prog.attach_to_if_index(ifindex, mode.aya()) {
            Ok(_) => Ok(()),
            Err(e) if busy(&e) => Err(AttachError::Busy),
            Err(e) => Err(AttachError::Failed(XdpError::Attach(e))),
        }
    }
}

/// EBUSY (a program in this mode) or EEXIST (one in the other mode): the interface has someone's program.
fn busy(e: &ProgramError) -> bool {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<io::Error>()
            && matches!(io.raw_os_error(), Some(libc::EBUSY | libc::EEXIST))
        {
            return true;
        }
        src = s.source();
    }
    false
}

/// The name of the loaded BPF program with kernel id `id` (None when there is none, or it cannot be read).
pub(crate) fn program_name(id: u32) -> Option<String> {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .find(|p| p.id() == id)
        .and_then(|p| p.name_as_str().map(str::to_string))
}

/// What XDP program interface `ifindex` has, from rtnetlink's IFLA_XDP: (its program id, its mode), or None.
pub(crate) fn attached(ifindex: u32) -> io::Result<Option<(u32, AttachMode)>> {
    let reply = super::netlink::request(RTM_GETLINK, 0, ifindex, &[])?;
    let Some(xdp) = super::netlink::link_attr(&reply, IFLA_XDP) else {
        return Ok(None);
    };
    let mut how = 0u8;
    let mut id = 0u32;
    for (kind, data) in super::netlink::attrs(xdp) {
        match (kind, data) {
            (IFLA_XDP_ATTACHED, [a, ..]) => how = *a,
            (IFLA_XDP_PROG_ID, [a, b, c, d]) => id = u32::from_ne_bytes([*a, *b, *c, *d]),
            _ => {}
        }
    }
    Ok(match how {
        XDP_ATTACHED_DRV => Some((id, AttachMode::Native)),
        XDP_ATTACHED_SKB => Some((id, AttachMode::Generic)),
        XDP_ATTACHED_NONE => None,
        // Offloaded to the NIC, or several at once: reported as native, which only the caller's "not ours" reads.
        _ => Some((id, AttachMode::Native)),
    })
}

/// Detaches whatever XDP program interface `ifindex` has in `mode` (IFLA_XDP_FD -1 with that mode's flag).
pub(crate) fn detach(ifindex: u32, mode: AttachMode) -> io::Result<()> {
    let mut nested = Vec::new();
    super::netlink::put_attr(&mut nested, IFLA_XDP_FD, &(-1i32).to_ne_bytes());
    super::netlink::put_attr(&mut nested, IFLA_XDP_FLAGS, &mode.flags().to_ne_bytes());
    let mut attrs = Vec::new();
    super::netlink::put_attr(&mut attrs, IFLA_XDP | NLA_F_NESTED, &nested);
    super::netlink::request(RTM_SETLINK, libc::NLM_F_ACK as u16, ifindex, &attrs).map(|_| ())
}

const RTM_GETLINK: u16 = 18;
const RTM_SETLINK: u16 = 19;
const IFLA_XDP: u16 = 43;
const NLA_F_NESTED: u16 = 1 << 15;
const IFLA_XDP_FD: u16 = 1;
const IFLA_XDP_ATTACHED: u16 = 2;
const IFLA_XDP_FLAGS: u16 = 3;
const IFLA_XDP_PROG_ID: u16 = 4;
const XDP_ATTACHED_NONE: u8 = 0;
const XDP_ATTACHED_DRV: u8 = 1;
const XDP_ATTACHED_SKB: u8 = 2;

#[cfg(test)]
mod tests {
    use super::AttachMode;

    #[test]
    fn modes_are_the_kernels_flags() {
        assert_eq!(AttachMode::Generic.flags(), 2);
        assert_eq!(AttachMode::Native.flags(), 4);
    }

    #[test]
    fn the_program_is_embedded() {
        assert!(super::OBJECT.starts_with(b"\x7fELF"));
    }
}

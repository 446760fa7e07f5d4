//! The head of `check`'s report: which machine this is (checks::machine_id reads it; this only lays it out).

use std::fmt::Write as _;

use crate::checks::machine_id::MachineId;

pub(super) fn header(id: &MachineId) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Hostname: {} | OS: {}",
        id.hostname.as_deref().unwrap_or("unknown"),
        id.os.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(
        s,
        "Machine: {} | BIOS: {}",
        id.firmware.machine_line(),
        id.firmware.bios_line()
    );
    let _ = writeln!(s, "CPU: {}", id.cpu);
    let _ = writeln!(s, "Kernel: {}", id.kernel);
    if let Some((nic, drv)) = &id.nic {
        let _ = writeln!(s, "NIC: {nic} ({drv})");
    }
    s
}

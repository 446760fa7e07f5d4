//! /proc/interrupts: a header of CPU columns (only online CPUs, so "CPU0 CPU2" when CPU1 is offline), then one
//! row per interrupt: a name ("24", "LOC", "IPI0"), one count per column (some rows such as "ERR" have only one),
//! then the chip, hardware IRQ and action names ("IO-APIC 2-edge timer", "GICv2 189 Level eth0").

use super::cpulist::{MAX_CPU, NR_CPUS_MAX};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqRow {
    /// "24", "LOC", "IPI0", …
    pub(crate) name: String,
    /// Counts, one per header column (fewer when the row has fewer).
    pub counts: Vec<u64>,
    /// Everything after the counts, whitespace-normalised.
    pub(crate) desc: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Interrupts {
    /// The CPU number of each count column.
    pub cpus: Vec<usize>,
    pub rows: Vec<IrqRow>,
}

impl IrqRow {
    /// The IRQ number, for rows that are device interrupts (not LOC, NMI, IPIn, …).
    pub fn irq(&self) -> Option<u32> {
        if self.name.bytes().all(|b| b.is_ascii_digit()) {
            self.name.parse().ok()
        } else {
            None
        }
    }

    /// A per-CPU interrupt that no affinity can move: an Arm GIC private peripheral interrupt (hardware IRQ
    /// 16–31: the arch timer, the PMU, the virtual GIC's), one instance per CPU. Writing its smp_affinity fails.
    pub(crate) fn per_cpu(&self) -> bool {
        let mut w = self.desc.split_whitespace();
        let (Some(chip), Some(hw)) = (w.next(), w.next()) else {
            return false;
        };
        chip.starts_with("GIC") && hw.parse::<u32>().is_ok_and(|n| (16..=31).contains(&n))
    }

    /// The action names (the devices that requested the IRQ): the last word, and the words before it that end
    /// in ',' ("mmc1, mmc0" → ["mmc1", "mmc0"]).
    pub fn actions(&self) -> Vec<&str> {
        let words: Vec<&str> = self.desc.split_whitespace().collect();
        let mut out = Vec::new();
        let mut i = words.len();
        while i > 0 {
            i -= 1;
            let w = words[i];
            if out.is_empty() || w.ends_with(',') {
                out.push(w.trim_end_matches(','));
            } else {
                break;
            }
        }
        out.reverse();
        out
    }
}

impl IrqRow {
    /// The count in column `col`; None when the row has no number there (a short or garbled row: a device
    /// IRQ row always has one count per column, so its absence is not a zero).
    pub(crate) fn count(&self, col: usize) -> Option<u64> {
        self.counts.get(col).copied()
    }
}

impl Interrupts {
    /// The column of `cpu`, if the header lists it.
    pub(crate) fn column(&self, cpu: usize) -> Option<usize> {
        self.cpus.iter().position(|&c| c == cpu)
    }
}

/// More rows than this are refused: the kernel's sparse IRQs reach a few thousand on the largest real machines
/// (one MSI-X vector per queue per CPU), and each row may send a check to read /proc/irq/N.
pub const MAX_ROWS: usize = 65_536;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterruptsError {
    #[error("no CPU header line in /proc/interrupts")]
    NoHeader,
    #[error("/proc/interrupts has more than {MAX_ROWS} rows")]
    TooManyRows,
    #[error("no device IRQ rows in /proc/interrupts (the kernel always lists some)")]
    NoDeviceRows,
}

pub fn parse(text: &str) -> Result<Interrupts, InterruptsError> {
    use InterruptsError::NoHeader;
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let header = lines.next().ok_or(NoHeader)?;
    let mut cpus = Vec::new();
    for w in header.split_whitespace() {
        match w.strip_prefix("CPU").and_then(|n| n.parse::<usize>().ok()) {
            Some(n) if n <= MAX_CPU && cpus.len() < NR_CPUS_MAX => cpus.push(n),
            _ => return Err(NoHeader),
        }
    }
    if cpus.is_empty() {
        return Err(NoHeader);
    }
    let mut rows = Vec::new();
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            continue;
        }
        let mut counts = Vec::new();
        let mut words = rest.split_whitespace().peekable();
        while counts.len() < cpus.len() {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(n) => {
                    counts.push(n);
                    words.next();
                }
                None => break,
            }
        }
        let desc = words.collect::<Vec<_>>().join(" ");
        if rows.len() == MAX_ROWS {
            return Err(InterruptsError::TooManyRows);
        }
        rows.push(IrqRow {
            name: name.to_string(),
            counts,
            desc,
        });
    }
    // Every machine has numbered device IRQs (the timer, the console, a disk, or the GIC's): a table without
    // one is not a machine's, and reading it as "no IRQ on the core" would pass a check on nothing.
    if !rows.iter().any(|r| r.irq().is_some()) {
        return Err(InterruptsError::NoDeviceRows);
    }
    Ok(Interrupts { cpus, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    const QEMU: &str =
        include_str!("../../tests/fixtures/samples/interrupts-debian12-rt-qemu-isolated.txt");
    const FIRECRACKER: &str =
        include_str!("../../tests/fixtures/samples/interrupts-firecracker-vm-2cpu.txt");
    const RPI4: &str =
        include_str!("../../tests/fixtures/samples/interrupts-rpi4-arm64-handmade.txt");

    #[test]
    fn gic_private_interrupts_are_per_cpu() {
        let t = parse(RPI4).unwrap();
        let per_cpu: Vec<String> = t
            .rows
            .iter()
            .filter(|r| r.per_cpu())
            .map(|r| r.actions().join(" "))
            .collect();
        // GICv2 25 vgic, 30 arch_timer, 27 kvm guest vtimer; not 189 eth0 nor IO-APIC rows elsewhere.
        assert_eq!(per_cpu, ["vgic", "arch_timer", "vtimer"]);
        assert!(!parse(QEMU).unwrap().rows.iter().any(IrqRow::per_cpu));
    }

    #[test]
    fn captured_qemu_rt_guest() {
        // Captured from the Debian 12 PREEMPT_RT guest (fixtures/debian12-rt-qemu-isolated).
        let i = parse(QEMU).unwrap();
        assert_eq!(i.cpus, vec![0, 1]);
        let tty = i.rows.iter().find(|r| r.irq() == Some(4)).unwrap();
        assert_eq!(tty.counts, vec![0, 8965]);
        assert_eq!(tty.actions(), vec!["ttyS0"]);
        let ahci = i.rows.iter().find(|r| r.irq() == Some(27)).unwrap();
        assert_eq!(ahci.actions(), vec!["ahci[0000:00:1f.2]"]);
        let err = i.rows.iter().find(|r| r.name == "ERR").unwrap();
        assert_eq!(err.counts, vec![0]);
        assert_eq!(err.irq(), None);
        let loc = i.rows.iter().find(|r| r.name == "LOC").unwrap();
        assert_eq!(loc.counts, vec![4752, 136]);
        assert_eq!(loc.desc, "Local timer interrupts");
    }

    #[test]
    fn firecracker_vm_msix() {
        // Captured from the 2-vCPU VM this project is developed on (kernel 6.18, PCI-MSIX chip names).
        let i = parse(FIRECRACKER).unwrap();
        assert_eq!(i.column(1), Some(1));
        let rx = i
            .rows
            .iter()
            .find(|r| r.desc.ends_with("virtio2-input.0"))
            .unwrap();
        assert_eq!(rx.irq(), Some(38));
        assert_eq!(rx.actions(), vec!["virtio2-input.0"]);
        assert!(i.rows.iter().filter(|r| r.irq().is_some()).count() >= 15);
    }

    #[test]
    fn arm64_gic_rows() {
        // Hand-made in the layout of a Raspberry Pi 4 (bcm2711, GICv2, genet eth0 with two IRQs).
        let i = parse(RPI4).unwrap();
        assert_eq!(i.cpus, vec![0, 1, 2, 3]);
        let eth: Vec<u32> = i
            .rows
            .iter()
            .filter(|r| r.actions().contains(&"eth0"))
            .filter_map(|r| r.irq())
            .collect();
        assert_eq!(eth, vec![38, 39]);
        let mmc = i.rows.iter().find(|r| r.irq() == Some(30)).unwrap();
        assert_eq!(mmc.actions(), vec!["mmc1", "mmc0"]);
        let ipi = i.rows.iter().find(|r| r.name == "IPI0").unwrap();
        assert_eq!(ipi.counts, vec![1000, 1500, 1400, 1300]);
    }

    #[test]
    fn offline_cpu_gap_and_garbage() {
        let i = parse("  CPU0  CPU2\n 5:  1  2  X y\n").unwrap();
        assert_eq!(i.column(2), Some(1));
        assert_eq!(i.column(1), None);
        assert!(parse("").is_err());
        assert!(parse("\u{0}\u{1}garbage\n").is_err());
        // The header alone, or arch rows only, is no machine's table.
        let header = QEMU.lines().next().unwrap();
        assert_eq!(parse(header), Err(InterruptsError::NoDeviceRows));
        assert_eq!(
            parse(&format!("{header}\nLOC: 1 2 Local timer interrupts\n")),
            Err(InterruptsError::NoDeviceRows)
        );
        // A count that is not a number, or a short row, leaves the column empty rather than zero.
        let i = parse("  CPU0  CPU1\n 5:  1  X  IO-APIC eth0\n 6:  7\n").unwrap();
        assert_eq!(i.rows[0].count(1), None);
        assert_eq!(i.rows[1].count(0), Some(7));
        assert_eq!(i.rows[1].count(1), None);
    }

    #[test]
    fn rows_are_bounded() {
        let mut t = String::from("CPU0\n");
        for n in 0..=MAX_ROWS {
            t.push_str(&format!("{n}: 1 x\n"));
        }
        assert_eq!(parse(&t), Err(InterruptsError::TooManyRows));
        assert!(parse("CPU0 CPU99999\n").is_err());
    }
}

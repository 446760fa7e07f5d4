//! /proc/softirqs: a header of CPU columns (online CPUs only, like /proc/interrupts), then one row per softirq type
//! ("NET_RX:", "TIMER:", …) with one count per column.

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Softirqs {
    /// The CPU number of each count column.
    pub(crate) cpus: Vec<usize>,
    /// (type, counts per column), in file order.
    pub(crate) rows: Vec<(String, Vec<u64>)>,
}

impl Softirqs {
    /// Count of each softirq type on `cpu` (empty when the header does not list it).
    pub(crate) fn on_cpu(&self, cpu: usize) -> Vec<(&str, u64)> {
        let Some(col) = self.cpus.iter().position(|&c| c == cpu) else {
            return Vec::new();
        };
        self.rows
            .iter()
            .filter_map(|(n, c)| c.get(col).map(|v| (n.as_str(), *v)))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no CPU header line in /proc/softirqs")]
pub(crate) struct NoHeader;

pub(crate) fn parse(text: &str) -> Result<Softirqs, NoHeader> {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let header = lines.next().ok_or(NoHeader)?;
    let cpus: Vec<usize> = header
        .split_whitespace()
        .map(|w| w.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect::<Option<_>>()
        .ok_or(NoHeader)?;
    if cpus.is_empty() {
        return Err(NoHeader);
    }
    let rows = lines
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let name = name.trim();
            if name.is_empty() || name.contains(char::is_whitespace) {
                return None;
            }
            let counts: Vec<u64> = rest
                .split_whitespace()
                .map_while(|w| w.parse().ok())
                .take(cpus.len())
                .collect();
            Some((name.to_string(), counts))
        })
        .collect();
    Ok(Softirqs { cpus, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_on_the_development_vm() {
        // `cat /proc/softirqs` on the 2-vCPU Firecracker VM this project is developed on (kernel 6.18).
        let s = parse(include_str!(
            "../../tests/fixtures/samples/softirqs-firecracker-vm-2cpu.txt"
        ))
        .unwrap();
        assert_eq!(s.cpus, vec![0, 1]);
        assert_eq!(s.rows.len(), 10);
        let on1 = s.on_cpu(1);
        assert_eq!(on1[0], ("HI", 0));
        assert_eq!(on1.iter().find(|r| r.0 == "NET_RX").unwrap().1, 4333);
        assert_eq!(on1.iter().find(|r| r.0 == "BLOCK").unwrap().1, 111733);
        assert!(s.on_cpu(2).is_empty());
    }

    #[test]
    fn captured_rt_guest_and_gaps() {
        // fixtures/debian12-rt-qemu-isolated/proc/softirqs (Debian 12 PREEMPT_RT guest, CPU 1 isolated).
        let s = parse(include_str!(
            "../../tests/fixtures/debian12-rt-qemu-isolated/proc/softirqs"
        ))
        .unwrap();
        let on1 = s.on_cpu(1);
        assert_eq!(on1.iter().find(|r| r.0 == "TIMER").unwrap().1, 16);
        // An offline CPU leaves a gap in the header.
        let g = parse("    CPU0  CPU3\n NET_RX:  5  7\n").unwrap();
        assert_eq!(g.on_cpu(3), vec![("NET_RX", 7)]);
        assert!(parse("").is_err());
        assert!(parse("garbage\n").is_err());
        assert!(parse("CPU0\nX: notanumber\n").unwrap().rows[0].1.is_empty());
    }
}

//! Hexadecimal CPU masks as the kernel prints them (smp_affinity, default_smp_affinity, rps_cpus, workqueue
//! cpumask): 32-bit groups, most significant first, separated by commas ("00000000,0000000f").

use super::cpulist::MAX_CPU;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed CPU mask '{0}'")]
pub struct MaskError(pub String);

/// The CPUs set in a mask, ascending. All zeros gives no CPUs; empty text, an empty group (",,,"), a group of
/// more than 8 digits, a group after the first of fewer than 8 ("0,0": the kernel pads every 32-bit group but
/// the first) or a bit above `MAX_CPU` is an error: the kernel never prints them, so they are not a machine's
/// state.
pub fn parse(s: &str) -> Result<Vec<usize>, MaskError> {
    let t = s.trim();
    let bad = || MaskError(super::text::sanitize(t, 40));
    // 8,192 bits: 2,048 digits and 255 commas.
    if t.is_empty() || t.len() > 2048 + 256 {
        return Err(bad());
    }
    let groups: Vec<&str> = t.split(',').collect();
    if groups.iter().enumerate().any(|(i, g)| {
        g.is_empty()
            || g.len() > 8
            || (i > 0 && g.len() != 8)
            || !g.bytes().all(|b| b.is_ascii_hexdigit())
    }) {
        return Err(bad());
    }
    let mut cpus = Vec::new();
    for (gi, g) in groups.iter().rev().enumerate() {
        for (i, c) in g.bytes().rev().enumerate() {
            let v = (c as char).to_digit(16).unwrap_or(0);
            for bit in 0..4 {
                if v & (1 << bit) != 0 {
                    let cpu = gi * 32 + i * 4 + bit;
                    if cpu > MAX_CPU {
                        return Err(bad());
                    }
                    cpus.push(cpu);
                }
            }
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// The mask for `cpus` in the kernel's format for a machine of `nbits` CPUs: ceil(nbits/4) hex digits (more if a
/// CPU above nbits is set), a comma every 8 digits from the right ("00,00000108" for 40 CPUs).
pub(crate) fn format(cpus: &[usize], nbits: usize) -> String {
    let top = cpus.iter().copied().max().map_or(0, |m| m + 1);
    let ndigits = nbits.max(top).max(1).div_ceil(4);
    let mut nibbles = vec![0u8; ndigits];
    for &c in cpus {
        nibbles[c / 4] |= 1 << (c % 4);
    }
    let mut out = String::new();
    for i in (0..ndigits).rev() {
        out.push(char::from_digit(nibbles[i] as u32, 16).unwrap_or('0'));
        if i > 0 && i % 8 == 0 {
            out.push(',');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_samples() {
        // /proc/irq/default_smp_affinity on the captured 2-CPU Debian 12 guest.
        assert_eq!(parse("3\n").unwrap(), vec![0, 1]);
        // rps_cpus of the captured guest's enp0s2 (RPS off).
        assert_eq!(parse("0\n").unwrap(), Vec::<usize>::new());
        // A 40-CPU server's smp_affinity.
        assert_eq!(parse("00,00000108").unwrap(), vec![3, 8]);
        assert_eq!(parse("ff,00000000").unwrap(), (32..40).collect::<Vec<_>>());
        assert!(parse("xyz").is_err());
        assert!(parse("1 2").is_err());
        // Garbage is not "no CPUs": the kernel always prints at least one digit per group.
        for bad in ["", "\n", ",,,", "f,", "123456789", "1,,2", "0,0", "ff,1"] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        // A short first group is how the kernel prints a 40-CPU mask; user masks may be short too.
        assert_eq!(parse("1,00000000").unwrap(), vec![32]);
        assert_eq!(parse("f").unwrap(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn format_matches_kernel_width() {
        assert_eq!(format(&[0, 1, 2], 4), "7");
        assert_eq!(format(&[0, 1], 2), "3");
        assert_eq!(format(&[3, 8], 40), "00,00000108");
        assert_eq!(format(&[], 8), "00");
        assert_eq!(parse(&format(&[1, 5, 33], 64)).unwrap(), vec![1, 5, 33]);
    }
}

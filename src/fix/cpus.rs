//! CPU lists ("0-3,5") and hex CPU masks ("ff", "00000001,00000000") as the kernel prints and accepts them.
//! Pure functions. (Written here because the shared `parse::cpulist` had not landed when fix was built.)

/// The highest CPU number accepted; larger values come from garbage, not from a machine.
pub const MAX_CPU: usize = 8191;

/// Parses a kernel CPU list ("0-3,8,10-11"; empty → no CPUs). Sorted, without duplicates.
pub fn parse_list(s: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (num(a, s)?, num(b, s)?),
            None => (num(part, s)?, num(part, s)?),
        };
        if lo > hi {
            return Err(format!(
                "'{s}' is not a CPU list (range {part} runs backwards)"
            ));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn num(t: &str, whole: &str) -> Result<usize, String> {
    let t = t.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{whole}' is not a CPU list"));
    }
    t.parse::<usize>()
        .ok()
        .filter(|&n| n <= MAX_CPU)
        .ok_or_else(|| format!("'{whole}': CPU number out of range"))
}

/// Formats CPUs as the shortest kernel CPU list ("0-2,5").
pub fn format_list(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Parses a hex CPU mask as in /proc/irq/default_smp_affinity or rps_cpus ("f", "00000000,00000003").
pub fn parse_mask(s: &str) -> Result<Vec<usize>, String> {
    let hex: String = s.trim().chars().filter(|&c| c != ',').collect();
    if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("'{}' is not a CPU mask", s.trim()));
    }
    let mut cpus = Vec::new();
    for (i, c) in hex.chars().rev().enumerate() {
        let d = c.to_digit(16).unwrap_or(0);
        for bit in 0..4 {
            if d & (1 << bit) != 0 {
                let cpu = i * 4 + bit;
                if cpu > MAX_CPU {
                    return Err(format!("'{}': CPU mask too wide", s.trim()));
                }
                cpus.push(cpu);
            }
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// Formats CPUs as a hex mask, 32-bit groups separated by commas as the kernel prints them ("0" when empty).
pub fn format_mask(cpus: &[usize]) -> String {
    let words = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[c / 32] |= 1 << (c % 32);
    }
    let mut out = format!("{:x}", w[words - 1]);
    for word in w[..words - 1].iter().rev() {
        out.push_str(&format!(",{word:08x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip() {
        // Shapes seen in /sys/devices/system/cpu/online and isolated on the captured guests and on 4-core PCs.
        assert_eq!(parse_list("0-3\n").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_list("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_list("1,3-4,3").unwrap(), vec![1, 3, 4]);
        assert_eq!(format_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert!(parse_list("(null)").is_err());
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("99999").is_err());
    }

    #[test]
    fn masks_round_trip() {
        // /proc/irq/default_smp_affinity on a 2-CPU guest reads "3"; rps_cpus on a 64-CPU host reads two words.
        assert_eq!(parse_mask("3\n").unwrap(), vec![0, 1]);
        assert_eq!(parse_mask("00000001,00000000").unwrap(), vec![32]);
        assert_eq!(format_mask(&[32, 0]), "1,00000001");
        assert_eq!(format_mask(&[]), "0");
        assert_eq!(format_mask(&[0, 1, 2]), "7");
        assert!(parse_mask("xyz").is_err());
    }
}

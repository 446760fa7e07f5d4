//! /proc/swaps: a header line, then one line per active swap area (Filename Type Size Used Priority).

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swap {
    pub(crate) filename: String,
    pub(crate) size_kb: Option<u64>,
    pub(crate) used_kb: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("/proc/swaps has no header line")]
pub struct NoSwapsHeader;

/// The active swap areas. A file without the "Filename" header is not /proc/swaps.
pub fn parse(text: &str) -> Result<Vec<Swap>, NoSwapsHeader> {
    let mut lines = text.lines();
    let header = lines.next().ok_or(NoSwapsHeader)?;
    if !header.trim_start().starts_with("Filename") {
        return Err(NoSwapsHeader);
    }
    Ok(lines
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let filename = (*w.first()?).to_string();
            Some(Swap {
                filename,
                size_kb: w.get(2).and_then(|v| v.parse().ok()),
                used_kb: w.get(3).and_then(|v| v.parse().ok()),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_and_typical() {
        // The captured Debian 12 RT guest: header only, no swap.
        let guest = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
        assert_eq!(parse(guest).unwrap(), vec![]);
        // A Debian desktop with a swap partition and a zram device.
        let desk = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/nvme0n1p3                          partition\t16777212\t1024\t\t-2\n/dev/zram0                              partition\t4194300\t\t0\t\t100\n";
        let s = parse(desk).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].filename, "/dev/nvme0n1p3");
        assert_eq!(s[0].used_kb, Some(1024));
        assert!(parse("").is_err());
        assert!(parse("\u{7f}ELF\u{2}\u{1}").is_err());
    }
}

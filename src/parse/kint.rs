//! Integers as the kernel prints them in /proc and /sys ("%d", "%u", "%lu" and the proc_dointvec family): an
//! optional '-', then decimal digits without a leading zero ("0" alone is zero), and at most one trailing
//! newline. Anything else — "+0", "00", "-0", "-01", "010", " 1", "1 2", a value outside the file's range — was
//! not written by the kernel (a damaged or hand-edited snapshot), and a verdict on it would be a guess.

use std::ops::RangeInclusive;

/// The values one kernel file can hold, with the name shown when a value falls outside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub(crate) lo: i128,
    pub(crate) hi: i128,
}

impl Range {
    pub(crate) const fn new(r: RangeInclusive<i64>) -> Range {
        Range {
            lo: *r.start() as i128,
            hi: *r.end() as i128,
        }
    }
    /// 0 ..= u64::MAX: an "unsigned long" counter ("%lu").
    pub(crate) const U64: Range = Range {
        lo: 0,
        hi: u64::MAX as i128,
    };
    /// 0 ..= u32::MAX: an "unsigned int" ("%u").
    pub(crate) const U32: Range = Range::new(0..=u32::MAX as i64);
    /// A boolean switch written as 0 or 1 (proc_dointvec_minmax with SYSCTL_ZERO, SYSCTL_ONE).
    pub(crate) const BOOL: Range = Range::new(0..=1);
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum KintError {
    #[error("empty")]
    Empty,
    #[error("not an integer as the kernel writes it")]
    Form,
    #[error("out of range ({lo}..={hi})")]
    Range { lo: i128, hi: i128 },
}

/// The integer in `text` (one trailing newline allowed), if it is in the kernel's form and within `range`.
pub(crate) fn parse(text: &str, range: &Range) -> Result<i128, KintError> {
    let s = text.strip_suffix('\n').unwrap_or(text);
    if s.is_empty() {
        return Err(KintError::Empty);
    }
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && !(neg && digits == "0");
    if !canonical {
        return Err(KintError::Form);
    }
    let out_of_range = KintError::Range {
        lo: range.lo,
        hi: range.hi,
    };
    // More than 39 digits overflows i128 and is beyond every range anyway.
    let magnitude: i128 = digits.parse().map_err(|_| out_of_range.clone())?;
    let v = if neg { -magnitude } else { magnitude };
    if v < range.lo || v > range.hi {
        return Err(out_of_range);
    }
    Ok(v)
}

/// `parse` for a file whose range fits i64.
pub(crate) fn int(text: &str, range: &Range) -> Result<i64, KintError> {
    let v = parse(text, range)?;
    i64::try_from(v).map_err(|_| KintError::Range {
        lo: range.lo,
        hi: range.hi,
    })
}

/// `parse` for an unsigned file (range within 0 ..= u64::MAX).
pub(crate) fn uint(text: &str, range: &Range) -> Result<u64, KintError> {
    let v = parse(text, range)?;
    u64::try_from(v).map_err(|_| KintError::Range {
        lo: range.lo,
        hi: range.hi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_own_form_is_read() {
        // /proc/sys/kernel/sched_rt_runtime_us of the captured Debian 12 RT guest (debian12-rt-qemu-untuned),
        // its timer_migration, and the "-1" fix writes.
        let rt = Range::new(-1..=i32::MAX as i64);
        assert_eq!(int("950000\n", &rt), Ok(950000));
        assert_eq!(int("-1\n", &rt), Ok(-1));
        assert_eq!(int("1\n", &Range::BOOL), Ok(1));
        assert_eq!(int("0", &Range::BOOL), Ok(0));
        assert_eq!(
            uint("18446744073709551615\n", &Range::U64),
            Ok(u64::MAX),
            "an unsigned long counter"
        );
    }

    #[test]
    fn what_the_kernel_never_writes_is_refused() {
        let rt = Range::new(-1..=i32::MAX as i64);
        for bad in [
            "+0", "00", "-0", "-01", "010", " 1", "1 ", "1\n\n", "0x1", "1e3", "", "\n", "-",
            "1.0", "١",
        ] {
            assert!(int(bad, &Range::BOOL).is_err(), "{bad:?}");
            assert!(int(bad, &rt).is_err(), "{bad:?}");
        }
        assert!(matches!(
            int("2147483648", &rt),
            Err(KintError::Range { .. })
        ));
        assert!(matches!(int("-2", &rt), Err(KintError::Range { .. })));
        assert!(matches!(
            int("2", &Range::BOOL),
            Err(KintError::Range { .. })
        ));
        assert!(uint("4294967296", &Range::U32).is_err());
        assert!(uint("18446744073709551616", &Range::U64).is_err());
        assert!(uint(&"9".repeat(60), &Range::U64).is_err());
    }
}

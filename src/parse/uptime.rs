//! /proc/uptime: seconds since boot (CLOCK_BOOTTIME, which a wall-clock step at boot does not move), then the
//! CPUs' summed idle time.

/// The first field: seconds since boot. None when it is not a finite, non-negative number.
pub(crate) fn seconds(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This project's development VM (Debian 12, 2 CPUs, kernel 6.18.44-fc), 2026-12-07.
    const DEV_VM: &str = "10496.27 6865.92\n";

    #[test]
    fn the_first_field_is_the_uptime_and_garbage_is_none() {
        assert_eq!(seconds(DEV_VM), Some(10496.27));
        assert_eq!(seconds("25.01 40.20"), Some(25.01));
        for bad in ["", "\n", "soon 1.0", "-3.5 1.0", "NaN 1", "inf 1"] {
            assert_eq!(seconds(bad), None, "{bad:?}");
        }
    }
}

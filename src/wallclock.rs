//! Wall-clock time as the project writes it: result names, journal and result timestamps, man page dates. UTC
//! only (no time-zone database), formatted by the `time` crate. Monotonic clock reads for measuring live elsewhere.

use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::macros::format_description;

/// Seconds since the Unix epoch; 0 if the clock is before 1970.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn at(secs: i64) -> OffsetDateTime {
    // Out of the crate's range (±9999 years) only for absurd input: clamp rather than fail a report.
    OffsetDateTime::from_unix_timestamp(secs).unwrap_or(if secs < 0 {
        OffsetDateTime::UNIX_EPOCH
    } else {
        time::macros::datetime!(9999-12-31 23:59:59 UTC)
    })
}

fn format(secs: i64, f: &[time::format_description::BorrowedFormatItem<'_>]) -> String {
    // Formatting a valid date with a fixed, all-numeric description cannot fail.
    at(secs).format(f).unwrap_or_default()
}

fn signed(secs: u64) -> i64 {
    i64::try_from(secs).unwrap_or(i64::MAX)
}

/// 2026-12-02T10:39:39Z
pub(crate) fn rfc3339(secs: u64) -> String {
    format(
        signed(secs),
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z"),
    )
}

/// Now, as [`rfc3339`].
pub(crate) fn rfc3339_now() -> String {
    rfc3339(unix_now())
}

/// 20261202T103939Z (result file names: sortable, no separators a shell or a URL minds).
pub(crate) fn stamp(secs: u64) -> String {
    format(
        signed(secs),
        format_description!("[year][month][day]T[hour][minute][second]Z"),
    )
}

/// 2026-12-02 (man page dates; negative times allowed for SOURCE_DATE_EPOCH before 1970).
pub(crate) fn date(secs: i64) -> String {
    format(secs, format_description!("[year]-[month]-[day]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_764_671_979), "2025-12-02T10:39:39Z");
        assert_eq!(stamp(1_764_671_979), "20251202T103939Z");
        assert_eq!(date(11_016 * 86_400), "2000-02-29");
        assert_eq!(date(-86_400), "1969-12-31");
        assert_eq!(rfc3339(u64::MAX), "9999-12-31T23:59:59Z");
    }
}

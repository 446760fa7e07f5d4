//! What `compare` accepts: results are mailed around, so a file is checked before it is compared. Bounded
//! (series, label length, unique labels), every number finite and within what a run can measure, and labels
//! made printable wherever they are shown.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::measure::result::{DistSummary, RttSummary, RunResult, SeriesSummary};

/// More series than any run writes (cyclic: 1; NIC modes: sender and receiver), with room for additions.
pub(crate) const MAX_SERIES: usize = 64;
/// Labels the tool writes are one word ("Cyclic", "Sender").
pub(crate) const MAX_LABEL: usize = 64;
/// A microsecond value beyond 10^9 (over 16 minutes per cycle) is not a measurement.
pub(crate) const MAX_US: f64 = 1e9;

/// A label as printed: control characters escaped, at most MAX_LABEL characters.
pub(crate) fn shown_label(label: &str) -> String {
    crate::parse::text::sanitize(label, MAX_LABEL)
}

/// What makes a result one no run could have written.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error("{0} series, at most {MAX_SERIES}")]
    TooManySeries(usize),
    #[error("duration_s is {0:e}")]
    Duration(f64),
    #[error("series label '{0}' longer than {MAX_LABEL} characters")]
    LongLabel(String),
    #[error("two series labelled '{0}'")]
    TwiceLabelled(String),
    #[error("{what} is {v:e} us")]
    Us { what: String, v: f64 },
    #[error("series '{0}': bucket counts overflow")]
    BucketsOverflow(String),
    #[error("rtt count + lost overflows")]
    RttOverflow,
}

fn bad(name: &str, why: Unusable) -> Error {
    Error::usage(format!(
        "{}: not a usable rmp-eval result ({why})",
        crate::parse::text::sanitize(name, 200)
    ))
}

fn check_us(what: &str, v: f64) -> std::result::Result<(), Unusable> {
    if v.is_finite() && v.abs() <= MAX_US {
        Ok(())
    } else {
        Err(Unusable::Us {
            what: what.into(),
            v,
        })
    }
}

fn check_dist(what: &str, d: &DistSummary) -> std::result::Result<(), Unusable> {
    for (k, v) in [
        ("min_us", d.min_us),
        ("avg_us", d.avg_us),
        ("p50_us", d.p50_us),
        ("p99_us", d.p99_us),
        ("p999_us", d.p999_us),
        ("p9999_us", d.p9999_us),
        ("max_us", d.max_us),
    ] {
        check_us(&format!("{what} {k}"), v)?;
    }
    Ok(())
}

fn check_series(s: &SeriesSummary) -> std::result::Result<(), Unusable> {
    let l = shown_label(&s.label);
    for (k, v) in [
        ("min_us", s.min_us),
        ("max_us", s.max_us),
        ("p50_us", s.p50_us),
        ("p99_us", s.p99_us),
        ("p999_us", s.p999_us),
        ("p9999_us", s.p9999_us),
        ("min_period_us", s.min_period_us),
        ("max_period_us", s.max_period_us),
    ] {
        check_us(&format!("series '{l}' {k}"), v)?;
    }
    if s.buckets
        .as_array()
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b))
        .is_none()
    {
        return Err(Unusable::BucketsOverflow(l));
    }
    match &s.wakeup {
        Some(w) => check_dist(&format!("series '{l}' wakeup"), w),
        None => Ok(()),
    }
}

fn check_rtt(r: &RttSummary) -> std::result::Result<(), Unusable> {
    for (k, v) in [
        ("min_us", r.min_us),
        ("avg_us", r.avg_us),
        ("p50_us", r.p50_us),
        ("p99_us", r.p99_us),
        ("p999_us", r.p999_us),
        ("p9999_us", r.p9999_us),
        ("max_us", r.max_us),
    ] {
        check_us(&format!("rtt {k}"), v)?;
    }
    if r.count.checked_add(r.lost).is_none() {
        return Err(Unusable::RttOverflow);
    }
    Ok(())
}

/// Refuses a result that no run could have written, with one line naming what is wrong.
pub fn validate(r: &RunResult, name: &str) -> Result<()> {
    let e = |why: Unusable| bad(name, why);
    if r.series.len() > MAX_SERIES {
        return Err(e(Unusable::TooManySeries(r.series.len())));
    }
    if !r.duration_s.is_finite() || r.duration_s < 0.0 {
        return Err(e(Unusable::Duration(r.duration_s)));
    }
    let mut seen = HashSet::new();
    for s in &r.series {
        if s.label.chars().count() > MAX_LABEL {
            return Err(e(Unusable::LongLabel(shown_label(&s.label))));
        }
        if !seen.insert(s.label.as_str()) {
            return Err(e(Unusable::TwiceLabelled(shown_label(&s.label))));
        }
        check_series(s).map_err(e)?;
    }
    if let Some(rtt) = &r.rtt {
        check_rtt(rtt).map_err(e)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> RunResult {
        serde_json::from_str(s).unwrap()
    }

    const ONE: &str = r#"{"period_us":1000,"duration_s":1,"mode":"cyclic","verdict":"pass","rtt":null,
        "series":[{"label":"Cyclic","count":10,"min_us":0,"max_us":5,"max_index":0,"p50_us":1,"p99_us":2,
        "p999_us":3,"buckets":{"great":10,"good":0,"poor":0,"bad":0,"pathetic":0}}]}"#;

    #[test]
    fn sane_result_passes_and_absurd_values_do_not() {
        assert!(validate(&parse(ONE), "a.json").is_ok());
        let huge = ONE.replace(r#""max_us":5"#, r#""max_us":1.7e308"#);
        let e = validate(&parse(&huge), "a.json").unwrap_err().to_string();
        assert!(e.contains("max_us is 1.7e308 us"), "{e}");
        let neg = ONE.replace(r#""min_us":0"#, r#""min_us":-1.7e308"#);
        assert!(validate(&parse(&neg), "a.json").is_err());
    }

    #[test]
    fn labels_are_bounded_unique_and_printable() {
        let twice = ONE.replace(
            r#""series":["#,
            &format!(
                r#""series":[{},"#,
                &ONE[ONE.find("{\"label").unwrap()..ONE.rfind(']').unwrap()]
            ),
        );
        let e = validate(&parse(&twice), "a.json").unwrap_err().to_string();
        assert!(e.contains("two series labelled 'Cyclic'"), "{e}");
        let long = ONE.replace("\"Cyclic\"", &format!("\"{}\"", "x".repeat(10_000)));
        let e = validate(&parse(&long), "a.json").unwrap_err().to_string();
        assert!(e.len() < 300 && e.contains("longer than 64"), "{e}");
        assert_eq!(shown_label("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
    }
}

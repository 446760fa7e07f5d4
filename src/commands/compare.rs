//! `compare BEFORE AFTER`: two saved results side by side ("last", "before", "after" name the newest saved one).
//! Exit 0, or 1 when AFTER is worse on the key metrics; 2 when a file is not a usable result or the two have
//! nothing in common to compare.

use std::collections::HashSet;

use crate::cli::CompareArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::measure::store;
use crate::output::Output;
use crate::parse::text::sanitize;
use crate::report::compare::{Trend, compare, render_text};
use crate::report::compare_input::{shown_label, validate};

/// Series labels of a result, for the "nothing to compare" message.
fn labels(r: &RunResult) -> String {
    if r.series.is_empty() {
        return "no series".into();
    }
    let v: Vec<String> = r.series.iter().map(|s| shown_label(&s.label)).collect();
    format!("series {}", crate::checks::first_few(&v, 4))
}

/// Refuses two results that share no series label and not both a round trip.
fn comparable(b: &RunResult, a: &RunResult) -> Result<()> {
    let after: HashSet<&str> = a.series.iter().map(|s| s.label.as_str()).collect();
    let common = b.series.iter().any(|s| after.contains(s.label.as_str()));
    if common || (b.rtt.is_some() && a.rtt.is_some()) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "nothing to compare: BEFORE has {}, AFTER has {} (no series label in common, and not both have round trips)",
        labels(b),
        labels(a)
    )))
}

pub(crate) fn execute(host: &Host, out: Output, args: &CompareArgs) -> Result<Outcome> {
    let (bp, ap) = match (&args.before, &args.after) {
        (Some(b), Some(a)) => (store::resolve(host, b)?, store::resolve(host, a)?),
        _ => crate::after_boot_state::pair(host)?,
    };
    let (bn, an) = (
        sanitize(&bp.display().to_string(), 200),
        sanitize(&ap.display().to_string(), 200),
    );
    let (b, a) = (store::load(&bp)?, store::load(&ap)?);
    validate(&b, &bn)?;
    validate(&a, &an)?;
    comparable(&b, &a)?;
    if b.period_us != a.period_us {
        eprintln!(
            "rmp-eval: note: the periods differ ({} us and {} us); bands are relative to each run's period",
            b.period_us, a.period_us
        );
    }
    let c = compare(&b, &a, &bn, &an);
    if args.json {
        let text = serde_json::to_string_pretty(&c).map_err(|e| Error::failed(e.to_string()))?;
        crate::outln!("{text}");
    } else {
        crate::out!("{}", render_text(&c, out.color));
    }
    Ok(if c.verdict == Trend::Worse {
        Outcome::ShortFall
    } else {
        Outcome::Good
    })
}

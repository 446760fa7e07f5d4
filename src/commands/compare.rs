//! `compare BEFORE AFTER`: two saved results side by side ("last", "before", "after" name the newest saved one).
//! Exit 0, or 1 when AFTER is worse on the key metrics; 2 when a file is not a usable result or the two have
//! nothing in common to compare.

use std::collections::HashSet;
use std::io::Write;

use crate::cli::CompareArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::measure::result::store;
use crate::outln;
use crate::output::{self, Output};
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

pub(crate) fn execute(
    host: &Host,
    out: Output,
    w: &mut dyn Write,
    args: &CompareArgs,
) -> Result<Outcome> {
    let (bp, ap) = match (&args.before, &args.after) {
        (Some(b), Some(a)) => (store::resolve(host, b)?, store::resolve(host, a)?),
        _ => {
            let c = crate::after_boot_state::pair(host)?;
            if !args.json {
                outln!(w, "Comparing {}.", c.what);
            }
            (c.before, c.after)
        }
    };
    let (bn, an) = (
        sanitize(&bp.display().to_string(), 200),
        sanitize(&ap.display().to_string(), 200),
    );
    let (b, a) = (
        crate::qualify::result::run_of(&bp)?,
        crate::qualify::result::run_of(&ap)?,
    );
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
        output::write(w, &(text + "\n"));
    } else {
        output::write(w, &render_text(&c, out.color));
    }
    Ok(if c.verdict == Trend::Worse {
        Outcome::ShortFall
    } else {
        Outcome::Good
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    const SAVED: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/results/nic-run-before-threads-and-tail.json"
    );

    fn args(argv: &[&str]) -> CompareArgs {
        let cli = Cli::try_parse_from(["rmp-eval", "compare"].iter().chain(argv)).unwrap();
        let Some(Command::Compare(a)) = cli.command else {
            panic!("not compare")
        };
        a
    }

    /// In-process: a saved result against itself is no worse, and the table goes to the writer given.
    #[test]
    fn compare_prints_through_the_writer_it_is_given() {
        let host = Host::live();
        let mut text = Vec::new();
        let got = execute(&host, Output::plain(), &mut text, &args(&[SAVED, SAVED])).unwrap();
        assert_eq!(got, Outcome::Good);
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("Sender"), "{text}");

        let mut json = Vec::new();
        execute(
            &host,
            Output::plain(),
            &mut json,
            &args(&["--json", SAVED, SAVED]),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert!(v.is_object(), "{v}");
        assert_eq!(json.last(), Some(&b'\n'));
    }
}

//! `compare BEFORE AFTER`: two saved results side by side ("last", "before", "after" name the newest saved one).
//! Exit 0, or 1 when AFTER is worse on the key metrics.

use crate::cli::CompareArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::store;
use crate::output::Output;
use crate::report::compare::{Change, compare, render_text};

pub fn execute(host: &Host, out: Output, args: &CompareArgs) -> Result<Outcome> {
    let bp = store::resolve(host, &args.before)?;
    let ap = store::resolve(host, &args.after)?;
    let (b, a) = (store::load(&bp)?, store::load(&ap)?);
    if b.period_us != a.period_us {
        eprintln!(
            "rmp-eval: note: the periods differ ({} us and {} us); bands are relative to each run's period",
            b.period_us, a.period_us
        );
    }
    let c = compare(&b, &a, &bp.display().to_string(), &ap.display().to_string());
    if args.json {
        let text = serde_json::to_string_pretty(&c).map_err(|e| Error::failed(e.to_string()))?;
        crate::outln!("{text}");
    } else {
        crate::out!("{}", render_text(&c, out.color));
    }
    Ok(if c.verdict == Change::Worse {
        Outcome::ShortFall
    } else {
        Outcome::Good
    })
}

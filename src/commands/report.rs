//! `report RESULT… -o report.html [--svg DIR]`: the HTML page of `report::html` for one result or several overlaid
//! (before/after from fix, or machines side by side), and optionally each plot as its own SVG file.

use std::io::Write;
use std::path::Path;

use crate::cli::ReportArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::measure::result::store;
use crate::output::Output;
use crate::parse::text::sanitize;
use crate::report::compare_input::validate;
use crate::report::html;

/// At most this many results overlaid: beyond it a plot is unreadable.
pub(crate) const MAX_RESULTS: usize = 6;

/// Loads the named results (file paths or last/before/after), each with a name for the legend (`legend_names`).
pub(crate) fn load(host: &Host, names: &[String]) -> Result<Vec<(String, RunResult)>> {
    if names.len() > MAX_RESULTS {
        return Err(Error::usage(format!(
            "at most {MAX_RESULTS} results in one report ({} given)",
            names.len()
        )));
    }
    let mut out = Vec::new();
    for n in names {
        let p = store::resolve(host, n)?;
        let shown = sanitize(&p.display().to_string(), 200);
        let r = crate::qualify::result::run_of(&p)?;
        validate(&r, &shown)?;
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| n.clone());
        out.push((sanitize(&stem, 80), r));
    }
    let names = html::legend_names(&out);
    Ok(names
        .into_iter()
        .zip(out)
        .map(|(n, (_, r))| (n, r))
        .collect())
}

pub(crate) fn execute(
    host: &Host,
    _out: Output,
    w: &mut dyn Write,
    args: &ReportArgs,
) -> Result<Outcome> {
    let dir = args
        .output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() || args.output.is_dir() {
        return Err(Error::usage(format!(
            "-o {}: not a file in an existing directory",
            args.output.display()
        )));
    }
    // One qualification result: its own page (the answer, the steps, the cycle times, the plots).
    if let [one] = args.results.as_slice()
        && let Some(q) = crate::qualify::result::read(&store::resolve(host, one)?)
    {
        let page = crate::report::qualification_html::page(&q)?;
        let tmp = args.output.with_extension("html.tmp");
        std::fs::write(&tmp, page)
            .map_err(|e| Error::sys(format!("writing {}", tmp.display()), e))?;
        std::fs::rename(&tmp, &args.output)
            .map_err(|e| Error::sys(format!("writing {}", args.output.display()), e))?;
        crate::outln!(w, "Report: {}", args.output.display());
        return Ok(Outcome::Good);
    }
    let results = load(host, &args.results)?;
    let path = html::write(&results, &args.output, args.svg.as_deref())?;
    crate::outln!(w, "Report: {}", path.display());
    Ok(Outcome::Good)
}

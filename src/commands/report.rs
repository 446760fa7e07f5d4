//! `report RESULT… -o report.html [--svg DIR]`: the HTML page of `report::html` for one result or several overlaid
//! (before/after from fix, or machines side by side), and optionally each plot as its own SVG file.

use std::path::{Path, PathBuf};

use crate::cli::ReportArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::measure::store;
use crate::output::Output;
use crate::parse::text::sanitize;
use crate::report::compare_input::validate;
use crate::report::html;

/// At most this many results overlaid: beyond it a plot is unreadable.
pub(crate) const MAX_RESULTS: usize = 6;

/// Loads the named results (file paths or last/before/after), each with a name for the legend.
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
        let r = store::load(&p)?;
        validate(&r, &shown)?;
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| n.clone());
        out.push((sanitize(&stem, 80), r));
    }
    Ok(out)
}

/// Renders the page (and the SVGs) for loaded results; returns the page's path.
pub(crate) fn write(
    results: &[(String, RunResult)],
    output: &Path,
    svg_dir: Option<&Path>,
) -> Result<PathBuf> {
    let refs: Vec<(String, &RunResult)> = results.iter().map(|(n, r)| (n.clone(), r)).collect();
    let plots = html::plots(&refs)?;
    if let Some(dir) = svg_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::sys(format!("creating {}", dir.display()), e))?;
        for p in &plots {
            let f = dir.join(format!("{}.svg", p.id));
            std::fs::write(&f, &p.svg)
                .map_err(|e| Error::sys(format!("writing {}", f.display()), e))?;
        }
    }
    let page = html::page(&refs, &plots);
    // Written beside the target, then renamed: never a half-written report.
    let tmp = output.with_extension("html.tmp");
    std::fs::write(&tmp, page).map_err(|e| Error::sys(format!("writing {}", tmp.display()), e))?;
    std::fs::rename(&tmp, output)
        .map_err(|e| Error::sys(format!("writing {}", output.display()), e))?;
    Ok(output.to_path_buf())
}

pub(crate) fn execute(host: &Host, _out: Output, args: &ReportArgs) -> Result<Outcome> {
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
    let results = load(host, &args.results)?;
    let path = write(&results, &args.output, args.svg.as_deref())?;
    crate::outln!("Report: {}", path.display());
    Ok(Outcome::Good)
}

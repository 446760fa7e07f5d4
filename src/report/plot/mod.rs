//! The report's plots, drawn by plotters' SVG backend: the latency histogram, log count over log µs (bands shaded
//! and named, the budget marked, the max marked; one per thread of a `run --thread` result), the max per interval over the run, the
//! percentile distribution (HdrHistogram style, 50 % … 99.999 %), and the round-trip histogram of NIC runs. Each
//! takes one or more results (overlaid, with a legend) and returns an SVG document plus the ranges it drew, which
//! the page records beside the plot (tests compare them with the results).

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub(crate) mod histogram;
mod interval;
mod percentiles;

pub(crate) use histogram::histogram;
pub(crate) use interval::{Intervals, max_per_interval};
pub(crate) use percentiles::percentiles;

pub(crate) const SIZE: (u32, u32) = (900, 420);
/// Room right of the plot, px: the last x tick's label ("99.999%", "10000") is centred on the plot's edge.
const RIGHT_MARGIN: u32 = 36;
const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];
/// Great … Pathetic, shaded from green to dark red.
const BAND_COLORS: [RGBColor; 5] = [
    RGBColor(46, 160, 67),
    RGBColor(160, 200, 60),
    RGBColor(240, 180, 40),
    RGBColor(230, 90, 40),
    RGBColor(150, 20, 20),
];
const BAND_NAMES: [&str; 5] = ["Great", "Good", "Poor", "Bad", "Pathetic"];

/// One drawn plot: the SVG and what its axes and marker show.
pub(crate) struct Plot {
    /// The figure's id and its SVG file's name: fixed words and numbers, never a result's text.
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) svg: String,
    /// The x axis' start (0 on a linear axis).
    pub(crate) x_min: f64,
    pub(crate) x_max: f64,
    pub(crate) y_max: f64,
    /// The band width W the plot shades (a deviation histogram).
    pub(crate) band_width_us: Option<f64>,
    /// The largest value marked (µs), when the plot marks one.
    pub(crate) max_us: Option<f64>,
    /// Curves drawn (one per result that has the data).
    pub(crate) curves: usize,
}

/// One curve: a name for the legend and its points.
pub(crate) struct Curve {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
}

/// A plot plotters could not draw: its error is generic over the drawing backend and Debug only, so its text is
/// kept.
#[derive(Debug, thiserror::Error)]
#[error("drawing a plot: {0}")]
pub(crate) struct PlotError(String);

impl From<PlotError> for crate::error::Error {
    fn from(e: PlotError) -> Self {
        crate::error::Error::failed(e.to_string())
    }
}

/// The one escaper for text from a result drawn into an SVG: plotters escapes XML's markup characters (in text
/// and attributes) but passes control bytes, which no XML may hold, so they are written out (`\u{1b}`) first, as
/// the page and the terminal show them.
pub(crate) fn svg_text(s: &str) -> String {
    crate::parse::text::sanitize(s, 200)
}

fn err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError(format!("{e:?}"))
}

/// A round upper bound for an axis, at least `v`: the next of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k, so an axis
/// A log axis' ticks: each power of ten from `lo` (a power of ten), and 2 and 5 times it where the axis spans two
/// decades or less. Plotters' own put a label at every 100 from 100 to 1000, one over the other, and two key points
/// a rounding apart print the same label twice in one place.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let steps: &[f64] = if hi / lo <= 100.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    let mut p = lo;
    while p <= hi {
        out.extend(steps.iter().map(|m| m * p).filter(|v| *v <= hi));
        p *= 10.0;
    }
    out
}

/// never runs more than 25 % past what it must show (a 1-2-5 ladder put a 253 µs max on a 1000 µs axis).
pub(crate) fn nice_ceil(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&c| c >= v * 0.999_999)
        .unwrap_or(10.0 * p)
}

fn draw_curves<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    curves: &[Curve],
) -> Result<(), PlotError>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    for (i, c) in curves.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                c.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(svg_text(&c.name))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    Ok(())
}

/// Pixels the legend of `curves` curves takes from the top of the plot (plotters' layout: 12 px lines, 5 px margins,
/// the box drawn 5 px from the plot's edge), with room to spare.
fn legend_height(curves: usize) -> i32 {
    5 + 10 + 16 * curves as i32
}

/// A vertical line at `x` up to `y_top`, labelled at `label_y`: right-aligned against the line, so that a marker
/// near the right edge keeps its label inside the plot.
fn marker<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    x: f64,
    y_top: f64,
    label_y: f64,
    label: &str,
    color: &RGBColor,
) -> Result<(), PlotError>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    let y_lo = chart.y_range().start;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(x, y_lo), (x, y_top)],
            color.stroke_width(1),
        )))
        .map_err(err)?;
    chart
        .draw_series(std::iter::once(Text::new(
            format!("{label} "),
            (x, label_y),
            ("sans-serif", 13)
                .into_font()
                .color(color)
                .pos(Pos::new(HPos::Right, VPos::Top)),
        )))
        .map_err(err)?;
    Ok(())
}

fn legend<'a, DB: DrawingBackend + 'a, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    curves: usize,
) -> Result<(), PlotError>
where
    X: plotters::coord::ranged1d::Ranged,
    Y: plotters::coord::ranged1d::Ranged,
{
    if curves < 2 {
        return Ok(());
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

#[cfg(test)]
mod tests;

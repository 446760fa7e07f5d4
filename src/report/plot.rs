//! The report's plots, drawn by plotters' SVG backend: the latency histogram with a log count axis in the
//! OSADL/LinuxCNC style (bands shaded, the budget marked, the max marked), the max per interval over the run, the
//! percentile distribution (HdrHistogram style, 50 % … 99.999 %), and the round-trip histogram of NIC runs. Each
//! takes one or more results (overlaid, with a legend) and returns an SVG document plus the ranges it drew, which
//! the page records beside the plot (tests compare them with the results).

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::measure::dist::{bins_of, decode};
use crate::measure::result::RunResult;

pub(crate) const SIZE: (u32, u32) = (900, 420);
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
    pub(crate) id: &'static str,
    pub(crate) title: String,
    pub(crate) svg: String,
    pub(crate) x_max: f64,
    pub(crate) y_max: f64,
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

type Fail = String;

fn err<E: std::fmt::Debug>(e: E) -> Fail {
    format!("drawing a plot: {e:?}")
}

/// A round upper bound for an axis, at least `v`: the next of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k, so an axis
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

/// The histogram of a stored encoding as a step line over about 200 bins up to `x_max_us`: each non-empty bin a
/// flat top over its width, dropping to the axis floor (`FLOOR`, below a count of 1) across empty bins, so that a
/// lone outlier stands as its own step instead of a line drawn to it.
fn hist_curve(hdr: &str, x_max_us: f64) -> Vec<(f64, f64)> {
    let Ok(h) = decode(hdr) else {
        return Vec::new();
    };
    let step_ns = ((x_max_us * 1000.0 / 200.0).ceil() as u64).max(1);
    let step_us = step_ns as f64 / 1000.0;
    let mut pts: Vec<(f64, f64)> = Vec::new();
    let mut end: Option<f64> = None;
    for (lo, n) in bins_of(&h, step_ns).into_iter().filter(|b| b.1 > 0) {
        let x = lo as f64 / 1000.0;
        match end {
            Some(e) if (x - e).abs() < step_us / 2.0 => {}
            Some(e) => pts.extend([(e, FLOOR), (x, FLOOR)]),
            None => pts.push((x, FLOOR)),
        }
        pts.extend([(x, n as f64), (x + step_us, n as f64)]);
        end = Some(x + step_us);
    }
    if let Some(e) = end {
        pts.push((e, FLOOR));
    }
    pts
}

/// The bottom of the log count axis.
const FLOOR: f64 = 0.5;

/// Latency histogram: log count over µs, the bands of `width_us` shaded, the budget (the Great limit) and the
/// largest max marked. `series` picks what is plotted of each result: (name, hdr, max µs).
pub(crate) fn histogram(
    id: &'static str,
    title: &str,
    width_us: Option<f64>,
    curves_in: &[(String, String, f64)],
) -> Result<Plot, Fail> {
    let max_us = curves_in.iter().map(|c| c.2).fold(0.0, f64::max);
    let band_top = width_us.map_or(0.0, |w| 9.0 * w);
    let x_max = nice_ceil((max_us * 1.1).max(band_top.min(max_us * 2.0)).max(1.0));
    let curves: Vec<Curve> = curves_in
        .iter()
        .map(|(n, hdr, _)| Curve {
            name: n.clone(),
            points: hist_curve(hdr, x_max),
        })
        .collect();
    let y_top = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .fold(1.0, f64::max);
    let y_max = 10f64.powf(y_top.log10().ceil() + 0.3);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x_max, (FLOOR..y_max).log_scale())
            .map_err(err)?;
        if let Some(w) = width_us {
            for (i, color) in BAND_COLORS.iter().enumerate() {
                let lo = if i == 0 {
                    0.0
                } else {
                    w * f64::from(1u32 << (i - 1))
                };
                let hi = if i == 4 {
                    x_max
                } else {
                    w * f64::from(1u32 << i)
                };
                if lo >= x_max {
                    break;
                }
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(lo, FLOOR), (hi.min(x_max), y_max)],
                        color.mix(0.12).filled(),
                    )))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Text::new(
                        BAND_NAMES[i],
                        (lo, y_max / 2.0),
                        ("sans-serif", 12).into_font().color(color),
                    )))
                    .map_err(err)?;
            }
        }
        chart
            .configure_mesh()
            .x_desc("latency (µs)")
            .y_desc("count (log)")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(err)?;
        draw_curves(&mut chart, &curves)?;
        if let Some(w) = width_us {
            marker(
                &mut chart,
                w,
                y_max,
                y_max,
                &format!("budget {w} µs"),
                &BLACK,
            )?;
        }
        // The max sits near the right edge, where the legend of an overlay is: its label goes under the legend.
        let (top, bottom) = (
            chart.backend_coord(&(max_us, y_max)).1,
            chart.backend_coord(&(max_us, FLOOR)).1,
        );
        let below = if curves.len() >= 2 {
            legend_height(curves.len()) + 6
        } else {
            0
        };
        let frac = f64::from(below) / f64::from((bottom - top).max(1));
        let label_y = 10f64.powf(y_max.log10() - frac * (y_max.log10() - FLOOR.log10()));
        marker(
            &mut chart,
            max_us,
            y_max,
            label_y,
            &format!("max {max_us} µs"),
            &RED,
        )?;
        legend(&mut chart, curves.len())?;
        root.present().map_err(err)?;
    }
    Ok(Plot {
        id,
        title: title.to_string(),
        svg,
        x_max,
        y_max,
        max_us: Some(max_us),
        curves: curves.len(),
    })
}

fn draw_curves<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    curves: &[Curve],
) -> Result<(), Fail>
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
            .label(c.name.clone())
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
fn marker<DB: DrawingBackend, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    x: f64,
    y_top: f64,
    label_y: f64,
    label: &str,
    color: &RGBColor,
) -> Result<(), Fail>
where
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
) -> Result<(), Fail>
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

/// Max per interval over the run: one line per result, the budget marked.
pub(crate) fn max_per_interval(results: &[(String, &RunResult)]) -> Result<Option<Plot>, Fail> {
    let curves: Vec<Curve> = results
        .iter()
        .filter_map(|(n, r)| {
            let m = r.series.first()?.max_per_interval.as_ref()?;
            Some(Curve {
                name: n.clone(),
                points: m
                    .max_us
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| ((i as f64 + 1.0) * m.interval_s, v))
                    .collect(),
            })
        })
        .filter(|c| !c.points.is_empty())
        .collect();
    if curves.is_empty() {
        return Ok(None);
    }
    let x_max = nice_ceil(
        curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.0))
            .fold(1.0, f64::max),
    );
    let top = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let budget = results
        .first()
        .map(|(_, r)| r.bucket_width_us)
        .filter(|w| *w > 0.0);
    let y_max = nice_ceil(top.max(budget.unwrap_or(0.0)) * 1.1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Max per interval", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time since start (s)")
            .y_desc("max deviation (µs)")
            .draw()
            .map_err(err)?;
        if let Some(w) = budget {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(0.0, w), (x_max, w)],
                    BLACK.stroke_width(1),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("budget {w} µs"),
                    (0.0, w),
                    ("sans-serif", 13).into_font(),
                )))
                .map_err(err)?;
        }
        draw_curves(&mut chart, &curves)?;
        legend(&mut chart, curves.len())?;
        root.present().map_err(err)?;
    }
    Ok(Some(Plot {
        id: "max-per-interval",
        title: "Max per interval".into(),
        svg,
        x_max,
        y_max,
        max_us: Some(top),
        curves: curves.len(),
    }))
}

/// The percentiles plotted: 0 %, then 90, 99, … 99.999 % and points between, on a "nines" axis.
const NINES_MAX: f64 = 5.0;

/// Percentile distribution (HdrHistogram's plot): latency over −log10(1 − q), ticks labelled 50 % … 99.999 %.
pub(crate) fn percentiles(curves_in: &[(String, String, f64)]) -> Result<Plot, Fail> {
    let curves: Vec<Curve> = curves_in
        .iter()
        .map(|(n, hdr, max)| {
            let points = decode(hdr)
                .map(|h| {
                    (0..=100)
                        .map(|i| {
                            let x = f64::from(i) * NINES_MAX / 100.0;
                            let q = 1.0 - 10f64.powf(-x);
                            let v = if i == 100 {
                                *max
                            } else {
                                h.value_at_quantile(q) as f64 / 1000.0
                            };
                            (x, v.min(*max))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Curve {
                name: n.clone(),
                points,
            }
        })
        .collect();
    let max_us = curves_in.iter().map(|c| c.2).fold(0.0, f64::max);
    let y_max = nice_ceil(max_us * 1.1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Percentile distribution", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..NINES_MAX, 0f64..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("percentile")
            .y_desc("latency (µs)")
            .x_labels(6)
            .x_label_formatter(&|x| {
                let p = 100.0 * (1.0 - 10f64.powf(-x));
                format!("{}%", (p * 1000.0).round() / 1000.0)
            })
            .draw()
            .map_err(err)?;
        draw_curves(&mut chart, &curves)?;
        legend(&mut chart, curves.len())?;
        root.present().map_err(err)?;
    }
    Ok(Plot {
        id: "percentiles",
        title: "Percentile distribution".into(),
        svg,
        x_max: NINES_MAX,
        y_max,
        max_us: Some(max_us),
        curves: curves.len(),
    })
}

#[cfg(test)]
#[path = "plot_tests.rs"]
mod tests;

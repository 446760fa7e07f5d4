//! The max per interval over the run: one line per result (per thread of `run --thread` results), on a log y axis
//! as the histogram has, so that the budget stands clear of both a 10 ms stall and the x axis.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    Curve, Plot, PlotError, RIGHT_MARGIN, SIZE, draw_curves, err, legend, log_ticks, nice_ceil,
};
use crate::measure::result::MaxPerInterval;

/// One series of the plot: its name, its maxima, its band width W (µs) and the seconds its run covered.
pub(crate) struct Intervals<'a> {
    pub(crate) name: String,
    pub(crate) maxima: &'a MaxPerInterval,
    pub(crate) width_us: f64,
    pub(crate) duration_s: f64,
}

/// (seconds, µs).
type Point = (f64, f64);

/// The whole intervals as points at their ends, and the last one when the run ended inside it (its end, its max),
/// which covers less time than the others and so is no point of the same line.
fn points(s: &Intervals) -> (Vec<Point>, Option<Point>) {
    let step = s.maxima.interval_s;
    let whole = if step > 0.0 {
        ((s.duration_s / step) + 1e-9).floor() as usize
    } else {
        0
    };
    let line = s
        .maxima
        .max_us
        .iter()
        .take(whole)
        .enumerate()
        .map(|(i, &v)| ((i as f64 + 1.0) * step, v))
        .collect();
    let partial = s
        .maxima
        .max_us
        .get(whole)
        .filter(|v| **v > 0.0)
        .map(|&v| (s.duration_s, v));
    (line, partial)
}

/// The log y axis, µs: from the power of ten under the least maximum (and the budget) to past the largest.
fn y_range(values: impl Iterator<Item = f64>, budget: Option<f64>) -> (f64, f64) {
    let (lo, hi) = values
        .chain(budget)
        .filter(|v| *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if hi <= 0.0 {
        return (0.1, 1.0);
    }
    let floor = 10f64.powf(lo.log10().floor());
    (floor, nice_ceil(hi * 2.0).max(floor * 10.0))
}

/// Max per interval over the run, one line per series; the budget W marked when every series has the same. The
/// x axis ends at the longest run's end; an interval the run ended inside is drawn as a lone circle.
pub(crate) fn max_per_interval(series: &[Intervals]) -> Result<Option<Plot>, PlotError> {
    let drawn: Vec<(Curve, Option<Point>)> = series
        .iter()
        .map(|s| {
            let (line, partial) = points(s);
            let c = Curve {
                name: s.name.clone(),
                points: line,
            };
            (c, partial)
        })
        .filter(|(c, p)| !c.points.is_empty() || p.is_some())
        .collect();
    if drawn.is_empty() {
        return Ok(None);
    }
    let x_max = series
        .iter()
        .map(|s| s.duration_s)
        .fold(0.0, f64::max)
        .max(1e-3);
    let values = || {
        drawn
            .iter()
            .flat_map(|(c, p)| c.points.iter().chain(p.iter()).map(|v| v.1))
    };
    let top = values().fold(0.0, f64::max);
    let budget = series
        .first()
        .map(|s| s.width_us)
        .filter(|w| *w > 0.0 && series.iter().all(|s| s.width_us == *w));
    let (y_min, y_max) = y_range(values(), budget);
    let curves: Vec<Curve> = drawn
        .iter()
        .map(|(c, _)| Curve {
            name: c.name.clone(),
            points: c.points.iter().map(|&(x, y)| (x, y.max(y_min))).collect(),
        })
        .collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Max per interval", ("sans-serif", 18))
            .margin(12)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(
                0f64..x_max,
                (y_min..y_max)
                    .log_scale()
                    .with_key_points(log_ticks(y_min, y_max)),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time since start (s)")
            .y_desc("max deviation (µs, log)")
            .y_label_formatter(&super::histogram::tick)
            .draw()
            .map_err(err)?;
        if let Some(w) = budget {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(0.0, w), (x_max, w)],
                    BLACK.stroke_width(1),
                )))
                .map_err(err)?;
            // Above the line at its left end, inside the plot: clear of the axes' ticks and of the legend.
            let (x, y) = chart.backend_coord(&(0.0, w));
            root.draw(&Text::new(
                format!("budget {w} µs"),
                (x + 6, y - 3),
                ("sans-serif", 13)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            ))
            .map_err(err)?;
        }
        draw_curves(&mut chart, &curves)?;
        for (i, (_, p)) in drawn.iter().enumerate() {
            if let Some((x, y)) = p {
                let color = super::COLORS[i % super::COLORS.len()];
                chart
                    .draw_series(std::iter::once(Circle::new(
                        (*x, y.max(y_min)),
                        4,
                        color.stroke_width(2),
                    )))
                    .map_err(err)?;
            }
        }
        legend(&mut chart, curves.len())?;
        root.present().map_err(err)?;
    }
    Ok(Some(Plot {
        id: "max-per-interval".into(),
        title: "Max per interval".into(),
        svg,
        x_min: 0.0,
        x_max,
        y_max,
        band_width_us: None,
        max_us: Some(top),
        curves: curves.len(),
    }))
}

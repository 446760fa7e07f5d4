//! The max per interval over the run: one line per result (per thread of `run --thread` results).

use plotters::prelude::*;

use super::{Curve, Plot, PlotError, SIZE, draw_curves, err, legend, nice_ceil};
use crate::measure::result::MaxPerInterval;

/// Max per interval over the run: one line per series (name, maxima, its band width W), the budget W marked when
/// every series has the same.
pub(crate) fn max_per_interval(
    series: &[(String, &MaxPerInterval, f64)],
) -> Result<Option<Plot>, PlotError> {
    let curves: Vec<Curve> = series
        .iter()
        .map(|(n, m, _)| Curve {
            name: n.clone(),
            points: m
                .max_us
                .iter()
                .enumerate()
                .map(|(i, &v)| ((i as f64 + 1.0) * m.interval_s, v))
                .collect(),
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
    let budget = series
        .first()
        .map(|s| s.2)
        .filter(|w| *w > 0.0 && series.iter().all(|s| s.2 == *w));
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

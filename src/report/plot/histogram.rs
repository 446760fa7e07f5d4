//! The latency histogram (and the NIC run's round-trip histogram): log count over µs, OSADL/LinuxCNC style.

use plotters::prelude::*;

use super::{
    BAND_COLORS, BAND_NAMES, Curve, Fail, Plot, SIZE, draw_curves, err, legend, legend_height,
    marker, nice_ceil,
};
use crate::measure::dist::{bins_of, decode};

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

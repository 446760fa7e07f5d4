//! The latency histogram (and the NIC run's round-trip histogram): log count over a log µs axis, the bands
//! shaded and named above the plot. On a log axis each band past Great (W…2W, 2W…4W, 4W…8W, 8W…) is one octave
//! wide wherever the max lies, so a 12 ms stall does not squeeze them into a sliver as a linear axis to the max
//! did, and the body of the distribution (a few µs) keeps its shape beside the tail.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    BAND_COLORS, BAND_NAMES, Curve, Plot, PlotError, SIZE, draw_curves, err, legend, legend_height,
    marker, nice_ceil, svg_text,
};
use crate::measure::result::dist::decode;

/// Bins over the axis: equal ratios, about 5 % wide over a 1 µs … 10 ms axis.
const BINS: usize = 200;

/// The widest x axis, as a ratio (5.5 decades).
const MAX_SPAN: f64 = 316_228.0;

/// The bottom of the log count axis.
const FLOOR: f64 = 0.5;

/// The band labels' strip above the plot, and the title's height, px.
const BAND_STRIP: u32 = 20;
const TITLE: u32 = 24;

/// The histogram of a stored encoding as a step line over `BINS` bins of equal ratio from `x_min` to `x_max` µs
/// (a value under `x_min` counts in the first bin): each non-empty bin a flat top over its width, dropping to the
/// axis floor across empty bins, so that a lone outlier stands as its own step instead of a line drawn to it.
fn hist_curve(hdr: &str, x_min: f64, x_max: f64) -> Vec<(f64, f64)> {
    let Ok(h) = decode(hdr) else {
        return Vec::new();
    };
    let ratio = (x_max / x_min).ln() / BINS as f64;
    let edge = |i: usize| x_min * (ratio * i as f64).exp();
    let mut counts = vec![0u64; BINS];
    for v in h.iter_recorded() {
        let us = v.value_iterated_to() as f64 / 1000.0;
        let i = ((us / x_min).ln() / ratio).floor();
        counts[(i.max(0.0) as usize).min(BINS - 1)] += v.count_at_value();
    }
    let mut pts: Vec<(f64, f64)> = Vec::new();
    let mut last: Option<usize> = None;
    for (i, &n) in counts.iter().enumerate().filter(|b| *b.1 > 0) {
        match last {
            Some(l) if l + 1 == i => {}
            Some(l) => pts.extend([(edge(l + 1), FLOOR), (edge(i), FLOOR)]),
            None => pts.push((edge(i), FLOOR)),
        }
        pts.extend([(edge(i), n as f64), (edge(i + 1), n as f64)]);
        last = Some(i);
    }
    if let Some(l) = last {
        pts.push((edge(l + 1), FLOOR));
    }
    pts
}

/// The x axis, µs: with bands of width W, from a power of ten at or under W/64 (the Great band takes about two
/// decades; less beside a long tail, the axis spanning at most `MAX_SPAN`) to past the max and at least 16 W
/// (every band at least an octave wide); without bands, from a power of ten under the least value to past the max.
pub(crate) fn x_range(width_us: Option<f64>, curves: &[(String, String, f64)]) -> (f64, f64) {
    let max_us = curves.iter().map(|c| c.2).fold(0.0, f64::max);
    let floor10 = |v: f64| 10f64.powf(v.log10().floor());
    match width_us {
        Some(w) => {
            let hi = nice_ceil((max_us * 1.1).max(16.0 * w));
            // At most 5.5 decades, so that an octave stays over 40 px even beside a stall 10^4 times the band.
            (floor10(w / 64.0).max(floor10(hi / MAX_SPAN)), hi)
        }
        None => {
            let min_us = curves
                .iter()
                .filter_map(|c| decode(&c.1).ok().filter(|h| !h.is_empty()))
                .map(|h| h.min() as f64 / 1000.0)
                .fold(f64::INFINITY, f64::min);
            let hi = nice_ceil((max_us * 1.1).max(0.01));
            let lo = floor10(min_us.clamp(hi / 1e6, hi / 2.0));
            (lo, hi)
        }
    }
}

/// The bands of width `w` over an axis from `x_min` to `x_max`: (band, low, high) µs, each cut to the axis.
fn bands(w: f64, x_min: f64, x_max: f64) -> Vec<(usize, f64, f64)> {
    (0..5)
        .map(|i| {
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
            (i, lo.max(x_min), hi.min(x_max))
        })
        .filter(|(_, lo, hi)| lo < hi)
        .collect()
}

/// "0.01", "1", "20", "5000": a log axis' tick.
pub(crate) fn tick(v: &f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Latency histogram: log count over log µs, the bands of `width_us` shaded and named in a strip above the plot,
/// the budget (the Great limit) and the largest max marked. `curves_in`: (name, hdr, max µs) of each result.
pub(crate) fn histogram(
    id: String,
    title: &str,
    width_us: Option<f64>,
    curves_in: &[(String, String, f64)],
) -> Result<Plot, PlotError> {
    let max_us = curves_in.iter().map(|c| c.2).fold(0.0, f64::max);
    let (x_min, x_max) = x_range(width_us, curves_in);
    let curves: Vec<Curve> = curves_in
        .iter()
        .map(|(n, hdr, _)| Curve {
            name: n.clone(),
            points: hist_curve(hdr, x_min, x_max),
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
        // The title drawn here rather than as plotters' caption, so that the band names' strip lies between it
        // and the plot (a top label area would repeat the x axis' ticks there).
        root.draw(&Text::new(
            svg_text(title),
            (SIZE.0 as i32 / 2, 12),
            ("sans-serif", 18)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(err)?;
        let strip = if width_us.is_some() { BAND_STRIP } else { 0 };
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_top(12 + TITLE + strip)
            .margin_right(super::RIGHT_MARGIN)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(
                (x_min..x_max)
                    .log_scale()
                    .with_key_points(super::log_ticks(x_min, x_max)),
                (FLOOR..y_max).log_scale(),
            )
            .map_err(err)?;
        if let Some(w) = width_us {
            for (i, lo, hi) in bands(w, x_min, x_max) {
                let color = BAND_COLORS[i];
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(lo, FLOOR), (hi, y_max)],
                        color.mix(0.12).filled(),
                    )))
                    .map_err(err)?;
                // Centred over its band, above the plot: clear of the curves, the markers and the legend.
                let (l, top) = chart.backend_coord(&(lo, y_max));
                let (h, _) = chart.backend_coord(&(hi, y_max));
                root.draw(&Text::new(
                    BAND_NAMES[i],
                    ((l + h) / 2, top - 3),
                    ("sans-serif", 13)
                        .into_font()
                        .color(&color)
                        .pos(Pos::new(HPos::Center, VPos::Bottom)),
                ))
                .map_err(err)?;
            }
        }
        chart
            .configure_mesh()
            .x_desc("latency (µs, log)")
            .y_desc("count (log)")
            .x_label_formatter(&tick)
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
            max_us.max(x_min),
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
        x_min,
        x_max,
        y_max,
        band_width_us: width_us,
        max_us: Some(max_us),
        curves: curves.len(),
    })
}

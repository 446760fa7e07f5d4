//! The percentile distribution, HdrHistogram style: latency over the "nines" (50 % … 99.999 %).

use plotters::prelude::*;

use super::{Curve, Plot, PlotError, RIGHT_MARGIN, SIZE, draw_curves, err, legend, nice_ceil};
use crate::measure::result::dist::decode;

/// The percentiles plotted: 0 %, then 90, 99, … 99.999 % and points between, on a "nines" axis.
const NINES_MAX: f64 = 5.0;

/// Percentile distribution (HdrHistogram's plot): the value over −log10(1 − q), ticks labelled 0 % … 99.999 %;
/// `what` names the value on the y axis ("deviation from the period", "wakeup latency").
pub(crate) fn percentiles(
    curves_in: &[(String, String, f64)],
    what: &str,
) -> Result<Plot, PlotError> {
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
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..NINES_MAX, 0f64..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("percentile")
            .y_desc(format!("{what} (µs)"))
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
        id: "percentiles".into(),
        title: "Percentile distribution".into(),
        svg,
        x_min: 0.0,
        x_max: NINES_MAX,
        y_max,
        band_width_us: None,
        max_us: Some(max_us),
        curves: curves.len(),
    })
}

use super::*;

/// (x, y, width, height) of the first `<rect>` whose attributes hold `fill`.
fn rect_with(svg: &str, fill: &str) -> Option<[f64; 4]> {
    svg.split("<rect")
        .skip(1)
        .find(|r| r.contains(fill))
        .map(|r| {
            let a = |k: &str| -> f64 {
                let i = r.find(&format!(" {k}=\"")).unwrap() + k.len() + 3;
                r[i..].split('"').next().unwrap().parse().unwrap()
            };
            [a("x"), a("y"), a("width"), a("height")]
        })
}

/// (x, y) and the attributes of the `<text>` holding `needle`.
fn text_at(svg: &str, needle: &str) -> (f64, f64, String) {
    let t = svg
        .split("<text")
        .skip(1)
        .find(|t| t.contains(needle))
        .unwrap();
    let a = |k: &str| -> f64 {
        let i = t.find(&format!(" {k}=\"")).unwrap() + k.len() + 3;
        t[i..].split('"').next().unwrap().parse().unwrap()
    };
    (a("x"), a("y"), t.to_string())
}

fn hdr_of(values_ns: &[u64]) -> String {
    let mut d = crate::measure::result::dist::Dist::new();
    for &v in values_ns {
        d.record(v);
    }
    d.encode()
}

#[test]
fn the_max_label_stays_clear_of_the_legend_and_inside_the_plot() {
    let spread: Vec<u64> = (0..2000).map(|i| 2_000 + (i % 50) * 1_000).collect();
    for n in 1..=6usize {
        let curves: Vec<(String, String, f64)> = (0..n)
            .map(|i| {
                let mut v = spread.clone();
                v.push(170_000 + i as u64 * 1_000);
                (format!("run number {i}"), hdr_of(&v), 170.0 + i as f64)
            })
            .collect();
        // The axis ends at 200 µs: the max marker is at 85-90 % of the width, under the legend's corner.
        let p = histogram("h".into(), "Deviation", Some(10.0), &curves).unwrap();
        assert_eq!(p.x_max, 200.0);
        let max = format!("max {} µs", 170 + n - 1);
        let (x, y, t) = text_at(&p.svg, &max);
        // Right-aligned against its line: the label ends at the marker, inside the 900 px wide plot.
        assert!(t.contains("text-anchor=\"end\""), "{t}");
        assert!(x < f64::from(SIZE.0) - 12.0, "{x}");
        let width = 8.0 * max.chars().count() as f64;
        match rect_with(&p.svg, "opacity=\"0.85\"") {
            // The legend box (drawn for overlays): the label's box must not meet it.
            Some([lx, ly, lw, lh]) => {
                assert!(n >= 2);
                let apart = y >= ly + lh || x <= lx || x - width >= lx + lw || y + 13.0 <= ly;
                assert!(
                    apart,
                    "{n} curves: label at ({x}, {y}) vs legend {lx},{ly} {lw}x{lh}"
                );
            }
            None => assert_eq!(n, 1, "an overlay has a legend"),
        }
    }
}

#[test]
fn axis_bounds_are_round_and_cover_the_value() {
    assert!((nice_ceil(0.7) - 0.8).abs() < 1e-12);
    assert_eq!(nice_ceil(1.0), 1.0);
    assert_eq!(nice_ceil(130.0), 150.0);
    assert_eq!(nice_ceil(200.5), 250.0);
    assert_eq!(nice_ceil(501.0), 600.0);
    assert_eq!(nice_ceil(801.0), 1000.0);
    assert_eq!(nice_ceil(f64::NAN), 1.0);
}

#[test]
fn a_hostile_curve_name_is_text_in_the_svg() {
    let name = "<img src=x onerror=alert(1)>\x1b[2J\x07".to_string();
    let p = histogram(
        "h".into(),
        "Deviation",
        Some(10.0),
        &[(name, hdr_of(&[1_000]), 1.0)],
    )
    .unwrap();
    let p2 = percentiles(
        &[
            ("a\x1b".into(), hdr_of(&[1_000]), 1.0),
            ("<b>".into(), hdr_of(&[1_000]), 1.0),
        ],
        "deviation from the period",
    )
    .unwrap();
    for svg in [&p.svg, &p2.svg] {
        assert!(!svg.chars().any(|c| c.is_control() && c != '\n'), "{svg}");
        assert!(!svg.contains("<img") && !svg.contains("<b>"), "{svg}");
    }
    assert!(p2.svg.contains("a\\u{1b}") && p2.svg.contains("&lt;b&gt;"));
}

#[test]
fn the_log_axis_shows_every_band_an_octave_wide_however_long_the_tail() {
    let c = |max: f64| vec![("a".to_string(), hdr_of(&[1_000]), max)];
    // 1 ms period (W 125 µs), a 12 ms stall: from 1 µs, past the max.
    assert_eq!(
        histogram::x_range(Some(125.0), &c(12_000.0)),
        (1.0, 15_000.0)
    );
    // A small max still shows Pathetic: the axis reaches 16 W.
    assert_eq!(histogram::x_range(Some(125.0), &c(20.0)), (1.0, 2_000.0));
    // A 25 µs thread (W 3.125 µs) beside a 100 ms stall: at most 5.5 decades.
    let (lo, hi) = histogram::x_range(Some(3.125), &c(100_000.0));
    assert_eq!((lo, hi), (0.1, 120_000.0));
    // Without bands (round trips of 20-60 µs): from the power of ten under the least.
    let rtt = vec![("r".to_string(), hdr_of(&[20_000, 60_000]), 60.0)];
    assert_eq!(histogram::x_range(None, &rtt), (10.0, 80.0));
}

#[test]
fn max_per_interval_ends_at_the_runs_end_on_a_log_axis_with_the_budget_clear_of_the_x_axis() {
    // A 20.4 s run in 1 s intervals: 20 whole ones, then 0.4 s; one 8 ms stall, the rest a few µs; W 125 µs.
    let mut max_us: Vec<f64> = (0..21).map(|i| 3.0 + f64::from(i % 3)).collect();
    max_us[9] = 8_000.0;
    max_us[20] = 2.0;
    let m = crate::measure::result::MaxPerInterval {
        interval_s: 1.0,
        max_us,
    };
    let s = Intervals {
        name: "run".into(),
        maxima: &m,
        width_us: 125.0,
        duration_s: 20.4,
    };
    let p = max_per_interval(&[s]).unwrap().unwrap();
    assert_eq!(p.x_max, 20.4, "the axis ends at the run's end");
    // The line has the 20 whole intervals; the partial one is a lone circle at 20.4 s.
    let line = p
        .svg
        .split("<polyline")
        .find(|l| l.to_ascii_lowercase().contains("#1f77b4"))
        .unwrap_or_else(|| panic!("no curve: {}", p.svg));
    let pts = line
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert_eq!(pts.split_whitespace().count(), 20, "{pts}");
    assert_eq!(p.svg.matches("<circle").count(), 1, "{}", p.svg);
    // Log scale: the budget line sits far above the x axis (the plot's bottom, about y 368 of 420) and its label
    // over it, right of the y axis' ticks.
    let (x, y, _) = text_at(&p.svg, "budget 125 µs");
    assert!(y < 300.0 && x > 70.0, "budget label at ({x}, {y})");
}

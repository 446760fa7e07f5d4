//! Whether a difference between two runs exceeds what chance gives. Latencies come in bursts (one stall delays
//! many consecutive periods), so single periods are not independent samples and a test on them would call two runs
//! of the same machine different. The sampling unit here is the interval: each run's maximum per interval
//! (`max_per_interval`, 1 s by default) is one sample, and a two-sided Mann–Whitney U test on the two sets of
//! maxima says whether one run's intervals are systematically worse. A clear change needs both p < `ALPHA` and a
//! shift of the median interval maximum by more than 10 % (and 1 µs); anything less is "no clear change".

use serde::Serialize;

use super::compare::Trend;
use crate::measure::result::SeriesSummary;

/// Significance level of the test: with it, two runs of an unchanged machine are called different about once in
/// a hundred comparisons.
pub(crate) const ALPHA: f64 = 0.01;
/// Fewer intervals than this on either side: no test (the margin rule applies).
pub(crate) const MIN_INTERVALS: usize = 5;

/// The test's outcome for one series present in both results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Evidence {
    pub(crate) series: String,
    pub(crate) intervals_before: usize,
    pub(crate) intervals_after: usize,
    pub(crate) interval_s: f64,
    /// Median of the interval maxima.
    pub(crate) median_before_us: f64,
    pub(crate) median_after_us: f64,
    /// Two-sided p-value of the Mann–Whitney U test.
    pub(crate) p_value: f64,
    pub(crate) change: Trend,
}

/// The interval maxima of a series, merged (max of neighbours) to `interval_s` when its own intervals are shorter.
fn maxima(s: &SeriesSummary, interval_s: f64) -> Option<Vec<f64>> {
    let m = s.max_per_interval.as_ref()?;
    if !(m.interval_s > 0.0 && interval_s >= m.interval_s) {
        return None;
    }
    let k = (interval_s / m.interval_s).round().max(1.0) as usize;
    Some(
        m.max_us
            .chunks(k)
            .filter(|c| c.len() == k)
            .map(|c| c.iter().copied().fold(0.0, f64::max))
            .collect(),
    )
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Two-sided p-value of the Mann–Whitney U test (normal approximation with tie and continuity corrections).
pub(crate) fn mann_whitney(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    let mut all: Vec<(f64, usize)> = a
        .iter()
        .map(|&x| (x, 0))
        .chain(b.iter().map(|&x| (x, 1)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let (mut r1, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        r1 += all[i..=j].iter().filter(|x| x.1 == 0).count() as f64 * rank;
        i = j + 1;
    }
    let u = r1 - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let nn = n1 + n2;
    let var = n1 * n2 / 12.0 * (nn + 1.0 - ties / (nn * (nn - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// erfc by W. J. Cody's rational Chebyshev fit as in Numerical Recipes (`erfcc`): relative error < 1.2e-7.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// The test for one series, when both sides have enough intervals.
pub(crate) fn judge(before: &SeriesSummary, after: &SeriesSummary) -> Option<Evidence> {
    let (mb, ma) = (
        before.max_per_interval.as_ref()?,
        after.max_per_interval.as_ref()?,
    );
    let interval_s = mb.interval_s.max(ma.interval_s);
    let (b, a) = (maxima(before, interval_s)?, maxima(after, interval_s)?);
    if b.len() < MIN_INTERVALS || a.len() < MIN_INTERVALS {
        return None;
    }
    let p = mann_whitney(&b, &a);
    let (medb, meda) = (median(&b), median(&a));
    let margin = (medb * 0.10).max(1.0);
    let change = if p >= ALPHA || (meda - medb).abs() <= margin {
        Trend::Unchanged
    } else if meda < medb {
        Trend::Better
    } else {
        Trend::Worse
    };
    Some(Evidence {
        series: before.label.clone(),
        intervals_before: b.len(),
        intervals_after: a.len(),
        interval_s,
        median_before_us: medb,
        median_after_us: meda,
        p_value: (p * 1e6).round() / 1e6,
        change,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mann_whitney_matches_reference_values() {
        // By hand: R1 = 44, U = 8, four pairs of ties, var = 64/12·(17 − 24/240) = 90.13,
        // z = (|8 − 32| − 0.5)/√var = 2.4753, p = erfc(z/√2) = 0.013313.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let b = [5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0];
        let p = mann_whitney(&a, &b);
        assert!((p - 0.013313).abs() < 1e-5, "{p}");
        assert!((mann_whitney(&a, &a) - 1.0).abs() < 1e-9);
        assert!(mann_whitney(&[1.0; 10], &[1.0; 10]) == 1.0);
        assert!((erfc(0.0) - 1.0).abs() < 1e-7 && (erfc(1.0) - 0.157_299_2).abs() < 1e-6);
    }

    fn series(maxima: &[f64], interval_s: f64) -> SeriesSummary {
        SeriesSummary {
            label: "Cyclic".into(),
            count: 1,
            min_us: 0.0,
            max_us: 0.0,
            max_index: 0,
            p50_us: 0.0,
            p99_us: 0.0,
            p999_us: 0.0,
            p9999_us: 0.0,
            buckets: Default::default(),
            min_period_us: 0.0,
            max_period_us: 0.0,
            early: 0,
            missed: 0,
            wakeup: None,
            hdr: String::new(),
            max_per_interval: Some(crate::measure::result::MaxPerInterval {
                interval_s,
                max_us: maxima.to_vec(),
            }),
            tail: Vec::new(),
            thread: None,
        }
    }

    #[test]
    fn a_burst_in_one_interval_is_no_clear_change_a_shift_of_all_is() {
        let quiet: Vec<f64> = (0..15).map(|i| 40.0 + (i * 7 % 11) as f64).collect();
        let mut burst = quiet.clone();
        burst[7] = 900.0; // one stall: 5x the p99.9 of a short run, but one interval
        let e = judge(&series(&quiet, 1.0), &series(&burst, 1.0)).unwrap();
        assert_eq!(e.change, Trend::Unchanged, "{e:?}");
        let loaded: Vec<f64> = quiet.iter().map(|v| v * 4.0).collect();
        let e = judge(&series(&quiet, 1.0), &series(&loaded, 1.0)).unwrap();
        assert_eq!(e.change, Trend::Worse, "{e:?}");
        assert!(e.p_value < ALPHA);
        assert_eq!(
            judge(&series(&loaded, 1.0), &series(&quiet, 1.0))
                .unwrap()
                .change,
            Trend::Better
        );
        // Intervals of 2 s against 1 s: the shorter ones are merged first.
        let e = judge(&series(&quiet, 1.0), &series(&quiet[..7], 2.0)).unwrap();
        assert_eq!((e.interval_s, e.intervals_before), (2.0, 7));
        assert!(judge(&series(&quiet[..3], 1.0), &series(&quiet, 1.0)).is_none());
    }
}

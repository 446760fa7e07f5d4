//! What a run proved about its rare tail. Cycles beyond a band boundary are counted over a known exposure (cycles
//! × period); treated as a Poisson process, the count gives an exact (Garwood) confidence interval on their rate,
//! from chi-square quantiles, and with none seen the one-sided bound −ln(0.05)/T ≈ 3/T (the rule of three). The
//! same bound says how long a run with no further such cycle must last to claim "fewer than one per hour / day".
//! The assumption, said wherever a rate is shown: such cycles come independently at a steady rate over the run.

use serde::{Deserialize, Serialize};

/// The confidence of every bound shown.
pub(crate) const CONFIDENCE: f64 = 0.95;
pub(crate) const HOUR_S: f64 = 3600.0;
pub(crate) const DAY_S: f64 = 86_400.0;

/// ln Γ(x) for x > 0: the recurrence up to 15, then Stirling's series (error below 1e-15 there).
fn ln_gamma(x: f64) -> f64 {
    let mut shift = 0.0;
    let mut z = x;
    while z < 15.0 {
        shift += z.ln();
        z += 1.0;
    }
    let inv = 1.0 / z;
    let inv2 = inv * inv;
    let series = inv
        * (1.0 / 12.0
            - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 * (1.0 / 1680.0 - inv2 / 1188.0))));
    (z - 0.5) * z.ln() - z + 0.5 * (2.0 * std::f64::consts::PI).ln() + series - shift
}

/// The regularized lower incomplete gamma function P(a, x): its series below a + 1, the continued fraction of
/// Q = 1 − P (modified Lentz) above.
fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let front = (a * x.ln() - x - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut term, mut sum, mut n) = (1.0 / a, 1.0 / a, a);
        for _ in 0..100_000 {
            n += 1.0;
            term *= x / n;
            sum += term;
            if term < sum * 1e-17 {
                break;
            }
        }
        (sum * front).min(1.0)
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..100_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            d = if d.abs() < tiny { tiny } else { d };
            c = b + an / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (1.0 - front * h).max(0.0)
    }
}

/// The chi-square quantile: x with P(χ²(df) ≤ x) = p, for df > 0 and 0 < p < 1 (bisection to full precision).
pub fn chi2_quantile(p: f64, df: f64) -> f64 {
    let cdf = |x: f64| gamma_p(df / 2.0, x / 2.0);
    let mut hi = df + 10.0 * (2.0 * df).sqrt() + 20.0;
    while cdf(hi) < p {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= hi * 1e-15 {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The exact two-sided interval on the mean of a Poisson count `k` at `conf`: [χ²((1−c)/2, 2k)/2,
/// χ²((1+c)/2, 2k+2)/2]; the lower end is 0 for k = 0.
pub fn poisson_interval(k: u64, conf: f64) -> (f64, f64) {
    let alpha = 1.0 - conf;
    let kf = k as f64;
    let lo = if k == 0 {
        0.0
    } else {
        chi2_quantile(alpha / 2.0, 2.0 * kf) / 2.0
    };
    (lo, chi2_quantile(1.0 - alpha / 2.0, 2.0 * kf + 2.0) / 2.0)
}

/// The one-sided upper bound on the mean of a Poisson count `k` at `conf`: χ²(c, 2k+2)/2; for k = 0 that is
/// −ln(1−c), 2.996 at 95 % (the rule of three).
pub fn poisson_upper(k: u64, conf: f64) -> f64 {
    chi2_quantile(conf, 2.0 * k as f64 + 2.0) / 2.0
}

/// The rate of cycles at or beyond one boundary, and what it proves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailRate {
    /// The boundary: cycles whose |deviation| is at least this.
    pub beyond_us: f64,
    /// How many there were.
    pub cycles: u64,
    /// The time they were counted over: cycles recorded × period.
    pub(crate) exposure_s: f64,
    /// Observed, per hour.
    pub per_hour: f64,
    /// The exact two-sided 95 % interval, per hour.
    pub per_hour_low: f64,
    pub per_hour_high: f64,
    /// The one-sided 95 % upper bound, per hour: "fewer than this with 95 % confidence".
    pub per_hour_at_most: f64,
    /// How long the run must have lasted, with no more such cycles, to claim fewer than one per hour (per day) at
    /// 95 %: the total, not what is left.
    pub hour_claim_needs_s: f64,
    pub day_claim_needs_s: f64,
}

impl TailRate {
    /// `cycles` of `exposure_s` were at or beyond `beyond_us`.
    pub(crate) fn of(beyond_us: f64, cycles: u64, exposure_s: f64) -> TailRate {
        let t_h = (exposure_s / HOUR_S).max(f64::MIN_POSITIVE);
        let (lo, hi) = poisson_interval(cycles, CONFIDENCE);
        let bound = poisson_upper(cycles, CONFIDENCE);
        TailRate {
            beyond_us,
            cycles,
            exposure_s,
            per_hour: cycles as f64 / t_h,
            per_hour_low: lo / t_h,
            per_hour_high: hi / t_h,
            per_hour_at_most: bound / t_h,
            hour_claim_needs_s: bound * HOUR_S,
            day_claim_needs_s: bound * DAY_S,
        }
    }

    /// The claim holds: fewer than `per_s` such cycles a second, with 95 % confidence.
    pub(crate) fn proves_below(&self, per_s: f64) -> bool {
        self.exposure_s > 0.0 && self.per_hour_at_most / HOUR_S < per_s
    }
}

/// The rates beyond each of the four band boundaries (W, 2W, 4W, 8W) of a series' band counts, over its cycles ×
/// period.
pub fn tail_rates(bands: [u64; 5], width_us: f64, period_us: f64) -> Vec<TailRate> {
    let count: u64 = bands.iter().sum();
    let exposure_s = count as f64 * period_us / 1e6;
    (1..5)
        .map(|i| {
            let beyond = bands[i..].iter().sum();
            TailRate::of(width_us * f64::from(1u32 << (i - 1)), beyond, exposure_s)
        })
        .collect()
}

/// The cycles a run needs, with none beyond the Great band, to prove fewer than `per_s` of them a second at 95 %
/// (`run --until-confident`).
pub(crate) fn cycles_to_prove(per_s: f64, period_us: u32) -> u64 {
    let secs = poisson_upper(0, CONFIDENCE) / per_s;
    (secs * 1e6 / f64::from(period_us.max(1))).ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_events_give_the_rule_of_three() {
        // −ln(0.05) = 2.995732…
        assert!((poisson_upper(0, 0.95) - 2.995_732_273_553_991).abs() < 1e-12);
        let (lo, hi) = poisson_interval(0, 0.95);
        assert_eq!(lo, 0.0);
        // ln(40) for the two-sided 97.5 % end.
        assert!((hi - 3.688_879_454_113_936).abs() < 1e-12, "{hi}");
        // "No cycle over 125 µs in 10 min: fewer than one per 3.3 min."
        let t = TailRate::of(125.0, 0, 600.0);
        let per_min = t.per_hour_at_most / 60.0;
        assert!((1.0 / per_min - 3.338).abs() < 0.001, "{}", 1.0 / per_min);
        assert!((t.hour_claim_needs_s / 3600.0 - 2.9957).abs() < 1e-4);
        assert!(!t.proves_below(1.0 / 3600.0));
        assert!(t.proves_below(1.0 / 60.0));
    }

    #[test]
    fn gamma_matches_known_values() {
        // Γ(5) = 24, Γ(0.5) = √π, Γ(1) = 1.
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-13);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
        assert!(ln_gamma(1.0).abs() < 1e-13);
        // χ²(2) is exponential with mean 2: P = 1 − e^(−x/2).
        for x in [0.1, 1.0, 5.99, 30.0] {
            assert!((gamma_p(1.0, x / 2.0) - (1.0 - (-x / 2.0f64).exp())).abs() < 1e-14);
        }
    }

    #[test]
    fn boundaries_count_what_lies_beyond() {
        let r = tail_rates([900, 60, 30, 9, 1], 125.0, 1000.0);
        let got: Vec<(f64, u64)> = r.iter().map(|t| (t.beyond_us, t.cycles)).collect();
        assert_eq!(got, [(125.0, 100), (250.0, 40), (500.0, 10), (1000.0, 1)]);
        assert!((r[0].exposure_s - 1.0).abs() < 1e-12);
        assert!(r[0].per_hour_low < r[0].per_hour && r[0].per_hour < r[0].per_hour_high);
        assert_eq!(cycles_to_prove(1.0 / 3600.0, 1000), 10_784_637);
    }
}

//! The tail rates of constructed band counts against scipy (PyPI, in the venv tests/install-deps.sh makes): the
//! exact Poisson interval from scipy's chi-square quantiles, each end checked again through scipy's Poisson CDF,
//! the one-sided bound, and the run a claim of "fewer than one per hour / day" needs.

use crate::common;
use common::run as run_common;

use std::process::Command;

use rmp_eval::measure::result::confidence::{
    chi2_quantile, poisson_interval, poisson_upper, tail_rates,
};

/// For each "k" on the command line: the two-sided 95 % ends, the one-sided 95 % bound, and the Poisson CDF at
/// the ends (which must be 0.025 and 0.975 by construction, a check of the chi-square route itself).
const SCIPY: &str = r#"
import sys, json
from scipy.stats import chi2, poisson
out = []
for k in map(int, sys.argv[1:]):
    lo = 0.0 if k == 0 else chi2.ppf(0.025, 2 * k) / 2
    hi = chi2.ppf(0.975, 2 * k + 2) / 2
    up = chi2.ppf(0.95, 2 * k + 2) / 2
    out.append({"k": k, "lo": lo, "hi": hi, "up": up,
                "cdf_hi": float(poisson.cdf(k, hi)),
                "sf_lo": float(poisson.sf(k - 1, lo)) if k > 0 else None,
                "q": [float(chi2.ppf(p, df)) for p, df in [(0.5, 1), (0.01, 3), (0.999, 7), (0.9, 40000)]]})
print(json.dumps(out))
"#;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

#[test]
fn poisson_bounds_agree_with_scipy() {
    let Some(py) = run_common::scipy_python() else {
        return;
    };
    let ks: [u64; 10] = [0, 1, 2, 3, 5, 10, 57, 1000, 123_456, 3_000_000];
    let o = Command::new(py)
        .arg("-c")
        .arg(SCIPY)
        .args(ks.iter().map(u64::to_string))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", run_common::text(&o.stderr));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for (k, v) in ks.iter().zip(got.as_array().unwrap()) {
        let (lo, hi) = poisson_interval(*k, 0.95);
        let up = poisson_upper(*k, 0.95);
        let f = |n: &str| v[n].as_f64().unwrap();
        assert!(
            close(lo, f("lo"), 1e-9) || (*k == 0 && lo == 0.0),
            "k={k}: lo {lo} vs {}",
            f("lo")
        );
        assert!(close(hi, f("hi"), 1e-9), "k={k}: hi {hi} vs {}", f("hi"));
        assert!(close(up, f("up"), 1e-9), "k={k}: up {up} vs {}", f("up"));
        assert!((f("cdf_hi") - 0.025).abs() < 1e-9, "k={k}: {v}");
        if *k > 0 {
            assert!((f("sf_lo") - 0.025).abs() < 1e-9, "k={k}: {v}");
        }
    }
    let q = &got[0]["q"];
    for (i, (p, df)) in [(0.5, 1.0), (0.01, 3.0), (0.999, 7.0), (0.9, 40000.0)]
        .into_iter()
        .enumerate()
    {
        let want = q[i].as_f64().unwrap();
        let mine = chi2_quantile(p, df);
        assert!(close(mine, want, 1e-9), "chi2({p}, {df}): {mine} vs {want}");
    }
}

#[test]
fn constructed_bands_give_the_rates_scipy_gives() {
    let Some(py) = run_common::scipy_python() else {
        return;
    };
    // 10 min at 1 kHz: none beyond 250 µs, 4 beyond 125 µs.
    let rates = tail_rates([599_996, 4, 0, 0, 0], 125.0, 1000.0);
    let o = Command::new(py)
        .arg("-c")
        .arg(SCIPY)
        .args(["4", "0"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", run_common::text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t_h = 600.0 / 3600.0;
    let four = &rates[0];
    assert_eq!((four.beyond_us, four.cycles), (125.0, 4));
    assert!(close(four.per_hour, 4.0 / t_h, 1e-12));
    assert!(close(
        four.per_hour_low,
        v[0]["lo"].as_f64().unwrap() / t_h,
        1e-9
    ));
    assert!(close(
        four.per_hour_high,
        v[0]["hi"].as_f64().unwrap() / t_h,
        1e-9
    ));
    assert!(close(
        four.per_hour_at_most,
        v[0]["up"].as_f64().unwrap() / t_h,
        1e-9
    ));
    let none = &rates[1];
    assert_eq!((none.beyond_us, none.cycles), (250.0, 0));
    let up0 = v[1]["up"].as_f64().unwrap();
    // The rule of three: fewer than one per 3.3 min, and 3.0 h / 3.0 days for the hour / day claims.
    assert!(close(none.per_hour_at_most, up0 / t_h, 1e-9));
    assert!(close(none.hour_claim_needs_s, up0 * 3600.0, 1e-9));
    assert!(close(none.day_claim_needs_s, up0 * 86_400.0, 1e-9));
    assert_eq!(format!("{:.1}", 600.0 / up0 / 60.0), "3.3");
}

use super::*;
use crate::measure::result::dist::{Dist, HIGHEST_NS, bins_of, decode};

#[test]
fn bands_scale_with_period_as_the_original() {
    // 1 kHz: 125 / 250 / 500 / 1000 µs, as in the original's table header.
    let b = Bands::new(1000, None);
    assert_eq!(b.width_ns(), 125_000);
    assert_eq!(b.classify(124_999), 0);
    assert_eq!(b.classify(125_000), 1);
    assert_eq!(b.classify(249_999), 1);
    assert_eq!(b.classify(499_999), 2);
    assert_eq!(b.classify(999_999), 3);
    assert_eq!(b.classify(1_000_000), 4);
    assert_eq!(Bands::new(1000, Some(10)).classify(15_000), 1);
    assert_eq!(Bands::new(250, None).width_ns(), 31_250);
}

#[test]
fn early_periods_are_not_great() {
    // The original folded a 289 µs period (after a stall) into Great; here it is 711 µs early: Bad.
    let mut s = Series::new("Cyclic", 1000, None);
    s.record(1_000_400, Some(3_000));
    s.record(289_000, Some(2_000));
    s.record(1_000_000, Some(5_000));
    let sum = s.summary();
    assert_eq!(sum.count, 3);
    assert_eq!(sum.buckets.great, 2);
    assert_eq!(sum.buckets.bad, 1);
    assert_eq!(sum.early, 1);
    assert_eq!(sum.max_us, 711.0);
    assert_eq!(sum.max_index, 1);
    assert_eq!(sum.min_us, -711.0);
    assert_eq!(sum.min_period_us, 289.0);
    assert_eq!(sum.max_period_us, 1000.4);
    let w = sum.wakeup.unwrap();
    assert_eq!((w.min_us, w.max_us, w.count), (2.0, 5.0, 3));
    assert_eq!(w.avg_us, 3.333);
}

#[test]
fn live_counters_follow_records() {
    let mut s = Series::new("Cyclic", 1000, None);
    let live = s.live();
    for i in 0..100u64 {
        s.record(1_000_000 + i * 3_000, Some(i * 1_000));
    }
    s.add_missed(2);
    let snap = live.snapshot();
    assert_eq!(snap.count, 100);
    assert_eq!(snap.bands.iter().sum::<u64>(), 100);
    assert_eq!(snap.bands[..2], [42, 42]);
    assert_eq!(snap.max_dev_ns, 297_000);
    assert_eq!(snap.max_index, 99);
    assert_eq!(snap.max_wakeup_ns, 99_000);
    assert_eq!(snap.missed, 2);
}

#[test]
fn percentiles_and_bins() {
    let mut d = Dist::new();
    for v in 1..=10_000u64 {
        d.record(v * 100); // 0.1 µs … 1 ms
    }
    let s = d.summary();
    assert!((s.p50_us - 500.0).abs() < 0.5, "{}", s.p50_us);
    assert!((s.p99_us - 990.0).abs() < 1.0, "{}", s.p99_us);
    assert_eq!(s.max_us, 1000.0);
    let mut r = Dist::new();
    for v in [17_411u64, 17_900, 18_100, 18_200, 29_872] {
        r.record(v);
    }
    let bins = bins_of(&decode(&r.encode()).unwrap(), 1000);
    assert_eq!(bins.first(), Some(&(17_000, 2)));
    assert_eq!(bins[1], (18_000, 2));
    assert_eq!(bins.last(), Some(&(29_000, 1)));
    assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), 5);
    assert!(bins_of(&decode(&Dist::new().encode()).unwrap(), 1000).is_empty());
}

#[test]
fn encoded_histograms_stay_small_whatever_the_latencies() {
    // Issue 10's case: 60 000 round trips near 18 µs and one reply 1 s late (once a 43 MB result).
    let mut d = Dist::new();
    for i in 0..60_000u64 {
        d.record(17_000 + (i * 7919) % 3_000);
    }
    d.record(1_000_000_000);
    d.record(HIGHEST_NS * 10); // clamped into the histogram; the exact max is kept aside
    let text = d.encode();
    assert!(text.len() < 4_000, "{} bytes", text.len());
    let h = decode(&text).unwrap();
    assert_eq!(h.len(), d.count());
    assert_eq!(h.value_at_quantile(0.5), d.hist().value_at_quantile(0.5));
    assert!(bins_of(&h, 1000).len() <= 100_001);
    assert!(decode("not base64!").is_err());
    assert!(decode("AAAA").is_err());
}

#[test]
fn huge_values_are_clamped_but_max_is_exact() {
    let mut d = Dist::new();
    d.record(HIGHEST_NS * 2);
    assert_eq!(d.summary().max_us, (HIGHEST_NS * 2) as f64 / 1000.0);
}

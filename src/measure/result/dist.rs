//! A distribution of nanosecond values in a preallocated HdrHistogram, with exact count, min, max and sum.
//! `record` does not allocate (values beyond the bounds are clamped; the exact max is kept aside).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

use crate::measure::result::DistSummary;

/// Highest value the histograms resolve (ns); larger values are clamped there, the exact max is kept aside.
pub(crate) const HIGHEST_NS: u64 = 60_000_000_000;
/// Significant figures: 3 keeps every percentile within 0.1 % (50 ns at 50 µs).
const SIGFIG: u8 = 3;

/// A distribution of nanosecond values: preallocated histogram plus exact count, min, max and sum.
pub(crate) struct Dist {
    /// u32 counts halve the locked memory; a bucket is 0.1 % wide, so saturating one (4.29e9 samples in it)
    /// would take weeks at 8 kHz with no jitter at all. The total count is kept exactly in u64.
    hist: Histogram<u32>,
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
}

impl Dist {
    /// Allocates and touches every page of its counters, so that they are resident whether it is created before
    /// or after the memory lock: recording never faults a page in.
    pub(crate) fn new() -> Self {
        let mut hist: Histogram<u32> =
            Histogram::new_with_bounds(1, HIGHEST_NS, SIGFIG).expect("constant bounds are valid");
        touch_every_page(&mut hist);
        std::hint::black_box(&hist);
        hist.reset();
        Dist {
            hist,
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    #[inline]
    pub(crate) fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns);
        self.count += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += u128::from(ns);
    }

    /// Empties it.
    pub(crate) fn reset(&mut self) {
        self.hist.reset();
        self.count = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    pub(crate) fn max_ns(&self) -> u64 {
        self.max
    }

    /// The value at quantile q (0..=1) in ns; the exact max for q = 1.
    pub(crate) fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            0
        } else if q >= 1.0 {
            self.max
        } else {
            self.hist.value_at_quantile(q).min(self.max)
        }
    }

    pub(crate) fn summary(&self) -> DistSummary {
        let us = |ns: u64| round3(ns as f64 / 1000.0);
        DistSummary {
            count: self.count,
            min_us: if self.count == 0 { 0.0 } else { us(self.min) },
            avg_us: if self.count == 0 {
                0.0
            } else {
                round3(self.sum as f64 / self.count as f64 / 1000.0)
            },
            p50_us: us(self.quantile_ns(0.5)),
            p99_us: us(self.quantile_ns(0.99)),
            p999_us: us(self.quantile_ns(0.999)),
            p9999_us: us(self.quantile_ns(0.9999)),
            max_us: us(self.max),
            hdr: self.encode(),
        }
    }

    /// The histogram in HdrHistogram's compressed V2 encoding, base64 (values in ns): what the JSON stores, and
    /// what HdrHistogram's own libraries decode. Allocates: never on the RT thread.
    pub(crate) fn encode(&self) -> String {
        encode(&self.hist)
    }

    /// Adds another distribution (an interval) into this one.
    pub(crate) fn add(&mut self, other: &Dist) {
        if other.count == 0 {
            return;
        }
        // Same bounds on both sides: add cannot fail. (Walking only the recorded values instead was slower,
        // measured: BENCHMARKS.md, "CPU per cycle".)
        let _ = self.hist.add(&other.hist);
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    pub(crate) fn hist(&self) -> &Histogram<u32> {
        &self.hist
    }
}

impl Default for Dist {
    fn default() -> Self {
        Self::new()
    }
}

/// Writes counters of `hist` spread so that every 4 KiB page of its counts gets one. Non-zero writes, seen by
/// black_box, cannot be optimised away as the zeroing of already-zeroed memory could be; the caller resets them.
/// One write per 512 counters (2 KiB of u32) is enough: a counter's index grows with its value and
/// `equivalent_range` is one counter's width, so the next value written is at most 512 counters on. Writing every
/// counter instead (27 000 records per histogram) cost ~14 million instructions at start-up for a run's six.
/// HIGHEST_NS's counter is where values beyond the bounds are clamped.
fn touch_every_page(hist: &mut Histogram<u32>) {
    let mut v = 0;
    while v < HIGHEST_NS {
        hist.saturating_record(v);
        v = v.saturating_add(512 * hist.equivalent_range(v));
    }
    hist.saturating_record(HIGHEST_NS);
}

/// Rounds to 1 ns when expressed in µs, so JSON values stay short.
pub(crate) fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// A histogram in HdrHistogram's compressed V2 encoding, base64.
pub(crate) fn encode<T: hdrhistogram::Counter>(h: &Histogram<T>) -> String {
    let mut bytes = Vec::new();
    // Writing into a Vec cannot fail; a histogram the crate built always serialises.
    let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
    BASE64.encode(bytes)
}

/// Why a result's histogram cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not base64: {0}")]
    Base64(base64::DecodeError),
    #[error("not an HdrHistogram V2 encoding: {0:?}")]
    Hdr(hdrhistogram::serialization::DeserializeError),
}

/// Reads back what `encode` (or any HdrHistogram V2 encoder, compressed or not) wrote.
pub fn decode(b64: &str) -> Result<Histogram<u64>, DecodeError> {
    let bytes = BASE64.decode(b64.trim()).map_err(DecodeError::Base64)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(DecodeError::Hdr)
}

/// Counts per linear bin of `step_ns` of a decoded histogram, from its first to its last non-empty bin: (bin start
/// ns, count). An empty histogram has none.
/// Resolution is the histogram's (0.1 %), so a 1 µs bin is exact below 1 ms.
pub(crate) fn bins_of<T: hdrhistogram::Counter>(h: &Histogram<T>, step_ns: u64) -> Vec<(u64, u64)> {
    if h.is_empty() || step_ns == 0 {
        return Vec::new();
    }
    let first = h.min() / step_ns;
    let last = h.max() / step_ns;
    // Bounded: a caller wanting 1 µs bins of a histogram reaching 60 s gets at most 100 000 bins.
    let last = last.min(first + 100_000);
    let mut bins: Vec<(u64, u64)> = (first..=last).map(|b| (b * step_ns, 0)).collect();
    for v in h.iter_recorded() {
        let b = (v.value_iterated_to() / step_ns).clamp(first, last);
        bins[(b - first) as usize].1 += v.count_at_value().as_u64();
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_the_recorded_values_equals_adding_every_counter() {
        let (mut a, mut b) = (Dist::new(), Dist::new());
        let mut reference: Histogram<u32> =
            Histogram::new_with_bounds(1, HIGHEST_NS, SIGFIG).unwrap();
        // Wakeups around 20 µs, a tail to milliseconds, one beyond the bounds (clamped), repeated values.
        let mut x = 12345u64;
        for i in 0..5000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = 15_000
                + (x >> 40) % 10_000
                + if i % 97 == 0 {
                    (x >> 20) % 5_000_000
                } else {
                    0
                };
            let d = if i % 3 == 0 { &mut a } else { &mut b };
            d.record(v);
            reference.saturating_record(v);
        }
        b.record(2 * HIGHEST_NS);
        reference.saturating_record(2 * HIGHEST_NS);
        a.add(&b);
        assert_eq!(a.count(), 5001);
        assert_eq!(a.hist, reference);
        assert_eq!(a.max_ns(), 2 * HIGHEST_NS);
    }

    #[test]
    fn touching_reaches_every_2_kib_of_counters_and_the_clamped_one() {
        let mut h: Histogram<u32> = Histogram::new_with_bounds(1, HIGHEST_NS, SIGFIG).unwrap();
        touch_every_page(&mut h);
        // iter_all yields the counters in index order (it may stop after the last one recorded): no run of 512
        // or more untouched ones between writes, nor after the last.
        let mut gap = 0usize;
        let mut widest = 0usize;
        let mut seen = 0usize;
        for c in h.iter_all() {
            seen += 1;
            gap = if c.count_since_last_iteration() > 0 {
                0
            } else {
                gap + 1
            };
            widest = widest.max(gap);
        }
        let trailing = gap + h.distinct_values().saturating_sub(seen);
        assert!(widest < 512, "{widest} counters in a row untouched");
        assert!(trailing < 512, "{trailing} counters at the end untouched");
        // Values beyond the bounds are clamped to HIGHEST_NS's counter.
        let clamped = h.count_at(HIGHEST_NS);
        h.saturating_record(u64::MAX);
        assert!(clamped > 0 && h.count_at(HIGHEST_NS) == clamped + 1);
        assert!(h.len() < 200, "{} writes", h.len());
    }
}

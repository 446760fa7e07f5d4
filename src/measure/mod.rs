//! Measurement: the per-cycle recorder (series), results, the RT environment (rt) and the cyclic loop (sampler).

pub mod result;
pub mod series;

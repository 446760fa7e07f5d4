//! Measurement: the per-cycle recorder (series), results and their storage, the RT environment (rt) and the
//! cyclic loop (sampler).

pub mod dist;
pub mod result;
pub mod rt;
pub mod sampler;
pub mod series;
pub mod session;
pub mod store;

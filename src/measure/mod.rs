//! Measurement: the per-cycle recorder (series), results and their storage, the RT environment (rt) and the
//! cyclic loop (sampler).
//! NIC mode: frame codec (ecat, frame), raw socket and timestamps (rawsock, tstamp, netif).

pub mod dist;
pub mod ecat;
pub mod frame;
pub mod netif;
pub mod rawsock;
pub mod result;
pub mod rt;
pub mod sampler;
pub mod series;
pub mod session;
pub mod store;
pub mod tstamp;

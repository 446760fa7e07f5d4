//! Measurement: the per-cycle recorder (series), results and their storage, the RT environment (rt) and the
//! cyclic loop (sampler).
//! NIC mode: frame codec (ecat, frame, echo, ipv4), raw socket and timestamps (rawsock, tstamp, netif), the
//! sender/receiver run (nic, nic_recv) and reply matching (rtt).

pub mod dist;
pub mod ecat;
pub mod echo;
pub mod frame;
pub mod ipv4;
pub mod netif;
pub mod nic;
pub mod nic_recv;
pub mod rawsock;
pub mod result;
pub mod rt;
pub mod rtt;
pub mod sampler;
pub mod series;
pub mod session;
pub mod store;
pub mod tstamp;

//! `run --nic` and `reflect` on veth pairs and bridges in network namespaces (common::nic), against peers written
//! apart from rmp-eval; root.

mod af_xdp;
mod arrival;
mod endings;
mod faults;
mod namespaces;
mod queues;
mod receive_path;
mod reflect;
mod round_trips;
mod signalled_setup;
mod verdict;

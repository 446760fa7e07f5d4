//! EtherCAT on the wire: the frame codec (codec), the chain of software SubDevices that `reflect` emulates (esc),
//! and what `reflect` sends back for each frame it receives (echo; the probes' mark it answers is
//! measure::nic::frame's).

pub(crate) mod codec;
pub(crate) mod echo;
pub(crate) mod esc;

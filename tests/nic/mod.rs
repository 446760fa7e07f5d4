//! `run --nic` and `reflect` on veth pairs and bridges in network namespaces (common::nic), against peers written
//! apart from rmp-eval; root.
//!
//! # Independent peers in network namespaces
//!
//! `tests/nic/` need root (the `tests/common` gate fails them under `RMP_EVAL_REQUIRE_ROOT=1`). Each test builds
//! its own segment with the pid and a sequence number in every name (`tests/common/nic.rs`: `Veth` — one end in a private netns, the "drive";
//! `Bridge` — a bridge in its own netns with several ends, for two reflectors and one run) and removes it on drop. The
//! peers are software no one here wrote, or written apart from rmp-eval's code: pysoem (SOEM) as the MainDevice (venv
//! from tests/install-deps.sh), tshark to decode and count frames (`tests/common/tshark.rs`),
//! `tests/nic_faulty_reflector.py` (a Python raw socket EtherCAT reflector that injects working-counter faults and
//! delays), a five-line Python RFC 862 UDP echo with the kernel's own IP stack and ARP. Frames are counted by tshark,
//! never by rmp-eval's own codec. They take about 40 s in all (`cargo test --test it -- nic::reflect nic::round_trips
//! nic::endings`). `tests/nic/queues.rs` (`--txq`/`--rxq`) makes pairs with four queues a side and reads
//! which queue the frames arrived on from the peer's own counters with ethtool(8) (`rx_queue_N_xdp_packets`: veth counts
//! per queue once its NAPI path is on — GRO on at the peer, TSO off on the sending end). `tests/nic/af_xdp.rs` (`--path af_xdp`, ~10 s) runs
//! through the AF_XDP socket against `reflect` and the Python reflector, pings across the pair during a run (ping from
//! iputils-ping), and reads the interface's XDP program with `ip link` after every kind of ending (kill -9 included);
//! its foreign-program test has iproute2 attach the build's own object (`$OUT_DIR/probe.bpf.o`).
//! `tests/nic/netstamp.rs` counts, with a workqueue event in a tracefs instance of its own, the kernel's
//! `netstamp_clear` work across a run and its `reflect` (none: no socket asks for software receive stamps).

mod af_xdp;
mod arrival;
mod endings;
mod faults;
mod namespaces;
mod netstamp;
mod queues;
mod receive_path;
mod reflect;
mod round_trips;
mod signalled_setup;
mod verdict;

//! The integration tests: one crate, so one test binary to link (a binary per file linked the library and every
//! dependency 57 times over). A module per thing tested, a file per behaviour; `common` holds what they share.
//! Run a part of it by its path: `cargo test --test it run::`, `cargo test --test it nic::queues`.
//!
//! The tests run as threads of one process: whatever they share on this machine (interface names, the RT core,
//! a killed run's leftovers) is taken through `common` (`common::nic`, `common::fix::one_at_a_time`), never by
//! being alone in a binary.

mod check;
mod cli;
mod common;
mod fix;
mod fleet;
mod layering;
mod nic;
mod report;
mod root_gate;
mod run;
mod untrusted;

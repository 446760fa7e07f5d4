//! The integration tests: one crate, so one test binary to link (a binary per file linked the library and every
//! dependency 57 times over). A module per thing tested, a file per behaviour; `common` holds what they share.
//! Run a part of it by its path: `cargo test --test it run::`, `cargo test --test it nic::queues`.
//!
//! The tests run as threads of one process, two at a time (libtest's default on two CPUs): what they share on this
//! machine is taken through `common`, never by being alone in a binary — the live machine and its RT core by
//! `common::lock::LIVE` (shared by every test that measures there, alone for one that changes the machine or
//! judges what else ran on the core), interface and namespace names made unique by `common::nic`, a killed run's
//! records kept apart by `common::nic::with_records_of_its_own`.

mod check;
mod cli;
mod common;
mod docs;
mod fix;
mod fleet;
mod layering;
mod licences;
mod nic;
mod qualify;
mod report;
mod root_gate;
mod run;
mod untrusted;

//! `fix` and `rollback`: plans, boot loaders, the whole cycle on fixture roots, what must leave the machine as it
//! was (kills, full disks, layouts an administrator made), the terminal path, and live steps on this machine.
//!
//! # The randomized tests
//!
//! `tests/fix/generated_grub.rs` (1,000 GRUB layouts) and `tests/fix/killed_anywhere.rs` (201 SIGKILLs) use a fixed seed;
//! `RMP_EVAL_TEST_SEED=N` picks another, and `RMP_EVAL_TEST_LAYOUT=SEED cargo test --test it
//! fix::generated_grub::one_layout -- --nocapture` replays the one layout a failure names and keeps its tree under /tmp. `tests/fix/full_disk.rs` mounts
//! small tmpfs and read-only binds (root).

mod admin_layouts;
mod boot_loaders;
mod cpuset;
mod cycle;
mod full_disk;
mod generated_grub;
mod isolated_set;
mod killed_anywhere;
mod nic_follow;
mod nic_steps;
mod on_a_terminal;
mod plan;
mod rollback_says;
mod safety;
mod this_machine;
mod trial_boot;

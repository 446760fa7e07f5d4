//! qualify: the one answer (will this PC run the controller at this cycle time, and what had to change),
//! unattended across reboots. Its progress is one state file, rewritten whole at every transition through
//! `Host::write_atomic` (temporary file, fsync, rename, directory fsync): a power loss or SIGKILL at any instant
//! leaves the state before or after a transition, never half of one. What it changes on the machine goes through
//! fix's plan → journal → apply, so `rollback` undoes it byte for byte like any fix.
//!
//! `state.rs` is the machine of phases and the events that move it (pure, no I/O but load/save); `resume.rs`
//! decides, from the state and what this boot observes (its boot id, its command line, the fix journal), what
//! to do next — the same decision after a clean stop, a crash or a reboot.

pub(crate) mod drive;
pub(crate) mod result;
pub(crate) mod resume;
pub(crate) mod state;

/// The state file: present from the moment the plan is accepted until `rollback` or `qualify --abort`.
pub(crate) const STATE: &str = "/var/lib/rmp-eval/qualify.json";

//! `qualify` on fixture roots: the trial boot of the command line armed, judged by the boot it is in
//! (committed when healthy, undone when not), and rollback leaving every file byte-identical.

mod cmdline_extra;
mod killed;
mod measured;
mod metrics;
mod nic;
mod options;
mod power_cut;
mod settle;
mod torn_write;
mod trial_cycle;

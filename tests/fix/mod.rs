//! `fix` and `rollback`: plans, boot loaders, the whole cycle on fixture roots, what must leave the machine as it
//! was (kills, full disks, layouts an administrator made), the terminal path, and live steps on this machine.

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

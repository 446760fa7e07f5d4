//! Running on many machines: the monitor, Prometheus textfiles, the systemd units.

mod monitor;
mod prometheus;
mod systemd_units;

//! Pure parsers of kernel and system text (no I/O): each is tested with real captured samples.

pub mod cgroup;
pub mod cmdline;
pub(crate) mod config_txt;
pub mod cpuinfo;
pub mod cpulist;
pub(crate) mod defaults;
pub(crate) mod dmi;
pub(crate) mod dpkg;
pub(crate) mod ftrace;
pub mod hwlat;
pub mod interrupts;
pub(crate) mod irqname;
pub mod kernel;
pub(crate) mod kint;
pub mod mask;
pub mod netaddr;
pub(crate) mod procstat;
pub(crate) mod ringbuf;
pub mod route;
pub mod shell;
pub(crate) mod softirqs;
pub mod swaps;
pub mod task;
pub mod text;
pub(crate) mod uptime;

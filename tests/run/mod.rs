//! `run` on the RT core (cyclic, threads, hwlat, load, long runs, why a cycle was late), what it saves, how it
//! ends, how it looks on a terminal, and `compare`/`after-boot` on what it measured.

mod after_boot;
mod compare;
mod confined;
mod cyclic;
mod ends_on_core;
mod histograms;
mod hwlat;
mod ipi_senders;
mod load;
mod long;
mod noise;
mod signals;
mod tail_rates;
mod terminal_view;
mod threads;
mod too_short;
mod why_late;
mod without_proc;

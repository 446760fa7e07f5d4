//! Terminal reports (final and live tables), JSON, compare.

pub mod check;
mod check_header;
pub mod compare;
pub mod compare_input;
mod compare_rows;
pub(crate) mod fairness;
pub(crate) mod html;
pub(crate) mod hwlat;
pub(crate) mod keys;
pub(crate) mod linuxcnc;
pub(crate) mod live;
pub(crate) mod noise;
pub(crate) mod plot;
pub mod prometheus;
pub(crate) mod qualification;
pub(crate) mod qualification_html;
pub(crate) mod run;
pub(crate) mod run_rtt;
pub(crate) mod table;
pub(crate) mod tail;
pub(crate) mod whylate;

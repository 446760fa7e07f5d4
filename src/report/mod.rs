//! Terminal reports (final and live tables), JSON, compare.

pub mod check;
pub mod compare;
pub mod compare_input;
pub mod fairness;
pub mod html;
pub mod keys;
pub mod live;
pub mod noise;
pub mod plot;
pub mod prometheus;
pub mod run;
pub mod table;
pub mod whylate;

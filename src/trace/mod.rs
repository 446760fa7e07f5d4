//! `run --trace`: the RT CPU's kernel events through tracefs (tracefs: found or mounted, set up, put back as it
//! was), read on a thread off the RT CPU that keeps the windows before late cycles (collect, window), each explained
//! (analyse).

pub mod analyse;
#[cfg(test)]
mod bench;
pub mod collect;
pub(crate) mod event;
mod lost_track;
pub(crate) mod marker;
pub mod model;
pub(crate) mod raw;
pub mod receive;
pub mod session;
pub mod tracefs;
pub(crate) mod walk;
pub mod window;

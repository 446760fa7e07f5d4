//! `run --trace`: the RT CPU's kernel events through tracefs (tracefs: found or mounted, set up, put back as it
//! was), read on a thread off the RT CPU that keeps the windows before late cycles (collect, window), each explained
//! (analyse).

pub(crate) mod analyse;
#[cfg(test)]
mod bench;
pub(crate) mod collect;
pub(crate) mod event;
mod lost_track;
pub(crate) mod marker;
pub(crate) mod model;
pub(crate) mod raw;
pub(crate) mod receive;
pub(crate) mod senders;
pub(crate) mod session;
pub(crate) mod tracefs;
pub(crate) mod walk;
pub(crate) mod window;

//! `run --trace`: the RT CPU's kernel events through tracefs, kept for the windows before late cycles and
//! explained (analyse), with tracefs put back as it was found (tracefs).

pub mod analyse;

//! Single keys from a terminal during a run (`r` resets the statistics, `q` ends the run): stdin in
//! non-canonical mode without echo while the guard lives, read without blocking; restored on drop
//! (`sys::term::RawStdin`).

use std::io::IsTerminal;

use crate::sys::term::RawStdin;

pub(crate) struct Keys {
    raw: RawStdin,
}

impl Keys {
    /// None when stdin is not a terminal (or its mode cannot be changed): then no keys are read.
    pub(crate) fn on_terminal() -> Option<Keys> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        RawStdin::enter().map(|raw| Keys { raw })
    }

    /// The keys typed since the last call (none waiting: empty, at once).
    pub(crate) fn pending(&self) -> Vec<u8> {
        self.raw.pending()
    }
}

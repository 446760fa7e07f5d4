//! Typed errors of the library. `main` prints `rmp-eval: <error>` on one line and exits 2 for every one of them.

use crate::host::HostError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input from the user (values, names, combinations).
    #[error("{0}")]
    Usage(String),
    /// A file or kernel value could not be read or written.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A system call failed.
    #[error("{what}: {source}")]
    Sys {
        what: String,
        source: std::io::Error,
    },
    /// The job could not be done (no reply from the SubDevice, no permission, …).
    #[error("{0}")]
    Failed(String),
}

impl Error {
    pub(crate) fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }
    pub(crate) fn failed(msg: impl Into<String>) -> Self {
        Error::Failed(msg.into())
    }
    pub(crate) fn sys(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Sys {
            what: what.into(),
            source,
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, Error>;

/// What a command found, when it could do its job (2 is an `Error`). README.md ("Exit status") and docs/design.md
/// list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// check: nothing failed; run: every sample Great; fix/rollback: done.
    Good,
    /// check: a check failed; run: latency outside Great or frames lost.
    ShortFall,
    /// run: too short to judge (too few cycles or seconds); nothing failed in what was measured.
    Inconclusive,
    /// check: nothing failed, but something only a newer kernel or other hardware changes falls short.
    Warnings,
    /// check: nothing failed, but a change fix made takes effect at the next reboot.
    RebootPending,
}

impl Outcome {
    pub fn code(self) -> u8 {
        match self {
            Outcome::Good => 0,
            Outcome::ShortFall => 1,
            Outcome::Inconclusive => 3,
            Outcome::Warnings => 4,
            Outcome::RebootPending => 5,
        }
    }
}

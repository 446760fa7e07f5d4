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

/// Every exit status and what it means, written once: `--help` and the man page come from it, and a test holds
/// README.md's table ("Exit status") to it. 2 is every `Error`; the others an `Outcome`.
pub(crate) const EXIT_STATUS: [(u8, &str); 6] = [
    (
        0,
        "all good (check: nothing failed; run: every sample within the Great band; fix/rollback: done)",
    ),
    (
        1,
        "the system falls short (a check failed; latency outside Great; frames lost; a dropout)",
    ),
    (
        2,
        "could not do the job (bad input, no permission, NIC missing, no reply from the SubDevice)",
    ),
    (
        3,
        "run: inconclusive, too short to judge (too few cycles or seconds); nothing failed in what was measured",
    ),
    (
        4,
        "check: nothing failed, only warnings (what only a newer kernel or other hardware would change)",
    ),
    (
        5,
        "check: nothing failed, but a change fix made takes effect at the next reboot",
    ),
];

/// What a command found, when it could do its job (2 is an `Error`); `EXIT_STATUS` says what each code means.
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
    #[cfg(test)]
    const ALL: [Outcome; 5] = [
        Outcome::Good,
        Outcome::ShortFall,
        Outcome::Inconclusive,
        Outcome::Warnings,
        Outcome::RebootPending,
    ];

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exit_status_is_in_the_table_and_the_docs_list_the_table() {
        let codes: Vec<u8> = EXIT_STATUS.iter().map(|(c, _)| *c).collect();
        let mut used: Vec<u8> = Outcome::ALL.iter().map(|o| o.code()).collect();
        used.push(2);
        used.sort_unstable();
        assert_eq!(used, codes);
        // README.md's table: one row per code, in order.
        let readme = include_str!("../README.md");
        let table = readme
            .split("## Exit status")
            .nth(1)
            .expect("README: ## Exit status");
        let rows: Vec<u8> = table
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| {
                l.trim_start_matches('|')
                    .split('|')
                    .next()?
                    .trim()
                    .parse()
                    .ok()
            })
            .collect();
        assert_eq!(rows, codes, "README.md's exit status table");
    }
}

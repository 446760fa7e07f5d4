//! What a `Host` access can fail with: typed, so that checks say "not found" or "permission denied" in their
//! detail column and a snapshot can record the failure and give it back (host/recorded.rs).

use std::io;

use super::MAX_READ;
use super::read::MAX_ENTRIES;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{path}: not found")]
    NotFound { path: String },
    #[error("{path}: permission denied")]
    PermissionDenied { path: String },
    #[error("{path}: leads outside the root through a symbolic link")]
    OutsideRoot { path: String },
    #[error("{path}: file too large (over {MAX_READ} bytes)")]
    TooLarge { path: String },
    #[error("{path}: not a regular file ({what})")]
    NotRegular { path: String, what: &'static str },
    #[error("{path}: more than {MAX_ENTRIES} entries")]
    TooManyEntries { path: String },
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
}

impl HostError {
    pub(crate) fn from_io(path: &str, e: io::Error) -> Self {
        // ESRCH: a /proc file whose process exited after it was opened is as gone as one never found.
        if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH) {
            return HostError::NotFound {
                path: path.to_string(),
            };
        }
        match e.kind() {
            io::ErrorKind::NotFound => HostError::NotFound {
                path: path.to_string(),
            },
            io::ErrorKind::PermissionDenied => HostError::PermissionDenied {
                path: path.to_string(),
            },
            _ => HostError::Io {
                path: path.to_string(),
                source: e,
            },
        }
    }

    /// A short reason fit for a check's detail column ("not found", "permission denied", …).
    pub(crate) fn reason(&self) -> String {
        match self {
            HostError::NotFound { .. } => "not found".into(),
            HostError::PermissionDenied { .. } => "permission denied".into(),
            HostError::TooLarge { .. } => "file too large".into(),
            HostError::NotRegular { what, .. } => format!("not a regular file ({what})"),
            HostError::TooManyEntries { .. } => "too many entries".into(),
            HostError::OutsideRoot { .. } => "leads outside the root".into(),
            HostError::Io { source, .. } => source.to_string(),
        }
    }

    pub(crate) fn is_not_found(&self) -> bool {
        matches!(self, HostError::NotFound { .. })
    }

    /// The raw OS error number, when there is one (e.g. EINVAL from a managed IRQ).
    pub(crate) fn raw_os_error(&self) -> Option<i32> {
        match self {
            HostError::Io { source, .. } => source.raw_os_error(),
            HostError::PermissionDenied { .. } => Some(libc::EACCES),
            HostError::NotFound { .. } => Some(libc::ENOENT),
            HostError::TooLarge { .. }
            | HostError::OutsideRoot { .. }
            | HostError::NotRegular { .. }
            | HostError::TooManyEntries { .. } => None,
        }
    }
}

pub(crate) type HostResult<T> = Result<T, HostError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_gone_after_open_is_not_found() {
        let e = |n| HostError::from_io("/proc/9/comm", io::Error::from_raw_os_error(n));
        assert!(e(libc::ESRCH).is_not_found());
        assert!(e(libc::ENOENT).is_not_found());
        assert!(!e(libc::EIO).is_not_found());
    }
}

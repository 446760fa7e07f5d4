//! What a snapshot could not read. `snapshot` records each unreadable path with the reason (`UNREADABLE`, at the
//! root of the copy); a Host on that copy reports the recorded reason for the path, not "not found": a file the
//! support engineer's machine refused is not a file that machine lacks. It records as well the paths the checks
//! looked for that the machine did not have (`absent`): in a tree, only those are "not in this kernel"; any other
//! missing file was not captured, and a check cannot take its absence for the feature's.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

use super::read::KINDS;
use super::{Host, HostError, HostResult};

/// Where `snapshot` records what it could not read, at the root of the copy.
pub(crate) const UNREADABLE: &str = "/rmp-eval-unreadable.json";

/// Why a path could not be read, as `snapshot` records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Failure {
    /// "permission_denied", "too_large", "not_regular", "too_many_entries" or "os_error".
    pub(crate) kind: String,
    /// The file type for not_regular ("FIFO"), the errno for os_error.
    #[serde(default)]
    pub(crate) what: Option<String>,
    #[serde(default)]
    pub(crate) errno: Option<i32>,
}

impl Failure {
    /// What to record for an error met while reading; None for "not found" (absent stays absent).
    pub(crate) fn of(e: &HostError) -> Option<Failure> {
        let f = |kind: &str, what: Option<String>, errno| Failure {
            kind: kind.into(),
            what,
            errno,
        };
        Some(match e {
            HostError::NotFound { .. } => return None,
            HostError::PermissionDenied { .. } => f("permission_denied", None, None),
            HostError::TooLarge { .. } => f("too_large", None, None),
            HostError::TooManyEntries { .. } => f("too_many_entries", None, None),
            HostError::NotRegular { what, .. } => f("not_regular", Some(what.to_string()), None),
            HostError::OutsideRoot { .. } => f("os_error", None, Some(libc::EXDEV)),
            HostError::Io { source, .. } => {
                f("os_error", None, source.raw_os_error().or(Some(libc::EIO)))
            }
        })
    }

    pub(super) fn error(&self, path: &str) -> HostError {
        let path = path.to_string();
        match self.kind.as_str() {
            "permission_denied" => HostError::PermissionDenied { path },
            "too_large" => HostError::TooLarge { path },
            "too_many_entries" => HostError::TooManyEntries { path },
            "not_regular" => HostError::NotRegular {
                path,
                what: file_type_name(self.what.as_deref().unwrap_or("")),
            },
            _ => HostError::Io {
                path,
                source: io::Error::from_raw_os_error(self.errno.unwrap_or(libc::EIO)),
            },
        }
    }
}

/// The recorded name of a kind of file, as a `&'static str` (a snapshot is untrusted: anything else is a "special
/// file", and a recorded "regular file" cannot be the reason a file was not regular).
fn file_type_name(s: &str) -> &'static str {
    KINDS
        .iter()
        .map(|k| k.1)
        .find(|n| *n == s && *n != "regular file")
        .unwrap_or("special file")
}

impl Host {
    /// The recorded failure for a path that is absent from a snapshot, if the snapshot recorded one.
    pub(super) fn recorded(&self, abs: &str) -> Option<HostError> {
        if self.is_live() {
            return None;
        }
        let map = self.loaded.failures.get_or_init(|| self.load_recorded());
        let key = super::normalize(abs);
        map.get(&key).map(|f| f.error(&key))
    }

    fn load_recorded(&self) -> BTreeMap<String, Failure> {
        #[derive(serde::Deserialize)]
        struct File {
            unreadable: BTreeMap<String, Failure>,
        }
        let Ok(bytes) = self.read_raw(UNREADABLE) else {
            return BTreeMap::new();
        };
        serde_json::from_slice::<File>(&bytes)
            .map(|f| f.unreadable)
            .unwrap_or_default()
    }

    fn load_absent(&self) -> BTreeSet<String> {
        #[derive(serde::Deserialize)]
        struct File {
            #[serde(default)]
            absent: BTreeSet<String>,
        }
        let Ok(bytes) = self.read_raw(UNREADABLE) else {
            return BTreeSet::new();
        };
        serde_json::from_slice::<File>(&bytes)
            .map(|f| f.absent)
            .unwrap_or_default()
    }

    /// Whether a file absent at `abs` is one the machine lacks: on the running machine always (the kernel
    /// would show it), in a tree only where the snapshot recorded it absent — elsewhere it was not captured.
    pub(crate) fn lacks(&self, abs: &str) -> bool {
        if self.is_live() {
            return true;
        }
        let set = self.loaded.absent.get_or_init(|| self.load_absent());
        set.contains(&super::normalize(abs))
    }

    /// NotFound becomes the recorded failure when a snapshot recorded one.
    pub(super) fn or_recorded<T>(&self, abs: &str, r: HostResult<T>) -> HostResult<T> {
        match r {
            Err(e) if e.is_not_found() => Err(self.recorded(abs).unwrap_or(e)),
            r => r,
        }
    }
}

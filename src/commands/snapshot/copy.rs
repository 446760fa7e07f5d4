//! The snapshot's copier: reads through the source `Host` (never blocking, regular files only, bounded), and
//! writes only inside its output directory, whatever links the source holds.
//!
//! Source paths are resolved component by component as the kernel would with the source root as "/" (absolute
//! links and ".." stop at the root; at most 40 links, the kernel's MAXSYMLINKS). Each link met is recreated in
//! the copy pointing at the same place, always as a relative link to a path under the copy's root. Writes never
//! follow a link: a directory component that is a link in the copy is refused, files are created O_EXCL |
//! O_NOFOLLOW. What could not be read is recorded (host::UNREADABLE) with the reason, so that examining the copy
//! gives the verdict the source gave.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io;
use std::path::Path;

use crate::host::{Failure, Host, HostError, SafeTree, normalize};

/// The kernel's MAXSYMLINKS.
const MAX_LINKS: usize = 40;

pub(crate) struct Copier<'a> {
    src: &'a Host,
    tree: SafeTree,
    /// Source directories already resolved: abs → real abs (no links in it).
    dirs: HashMap<String, Option<String>>,
    pub(crate) unreadable: BTreeMap<String, Failure>,
    /// What the checks looked for and the machine did not have (host::Host::lacks reads it back).
    pub(crate) absent: BTreeSet<String>,
    pub(crate) copied: usize,
    /// Every path the copy was asked for, so that listing /proc names only the processes the checks read:
    /// one started between the checks and the copy would be a directory without its files.
    wanted: BTreeSet<String>,
}

/// A failure to read the source (recorded) or to write the copy (fatal).
pub(crate) enum Fail {
    Src(HostError),
    Dst(io::Error),
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        Fail::Dst(e)
    }
}

fn loop_error(abs: &str) -> HostError {
    HostError::Io {
        path: abs.into(),
        source: io::Error::from_raw_os_error(libc::ELOOP),
    }
}

impl<'a> Copier<'a> {
    pub(crate) fn new(src: &'a Host, out: &Path, wanted: &[String]) -> Self {
        Copier {
            wanted: wanted.iter().map(|p| normalize(p)).collect(),
            src,
            tree: SafeTree::new(out),
            dirs: HashMap::new(),
            unreadable: BTreeMap::new(),
            absent: BTreeSet::new(),
            copied: 0,
        }
    }

    /// Writes a new file in the copy (see SafeTree).
    pub(crate) fn put(&mut self, abs: &str, bytes: &[u8]) -> io::Result<()> {
        self.tree.put(abs, bytes)
    }

    fn record(&mut self, abs: &str, e: &HostError) {
        if let Some(f) = Failure::of(e) {
            self.unreadable.insert(abs.to_string(), f);
        }
    }

    /// The source's real path of `abs` (links resolved, none left in it), recreating the links met in the copy.
    /// None when the path does not exist in the source.
    fn resolve(&mut self, abs: &str, links: &mut usize) -> Result<Option<String>, Fail> {
        let abs = normalize(abs);
        if abs == "/" {
            return Ok(Some(abs));
        }
        let (parent, name) = abs.rsplit_once('/').unwrap_or(("", &abs));
        let parent = if parent.is_empty() { "/" } else { parent };
        let real_parent = match self.dirs.get(parent) {
            Some(r) => r.clone(),
            None => {
                let r = self.resolve(parent, links)?;
                self.dirs.insert(parent.to_string(), r.clone());
                r
            }
        };
        let Some(real_parent) = real_parent else {
            return Ok(None);
        };
        let cand = if real_parent == "/" {
            format!("/{name}")
        } else {
            format!("{real_parent}/{name}")
        };
        let src = self.src.path(&cand);
        let meta = match fs::symlink_metadata(&src) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            // A directory that may not be searched, a file where a directory should be (ENOTDIR): the path
            // exists as far as a listing goes but cannot be read, which the copy must say too.
            Err(e) => return Err(Fail::Src(HostError::from_io(&cand, e))),
        };
        if !meta.file_type().is_symlink() {
            return Ok(Some(cand));
        }
        *links += 1;
        if *links > MAX_LINKS {
            return Err(Fail::Src(loop_error(&abs)));
        }
        let target = fs::read_link(&src).map_err(|e| Fail::Src(HostError::from_io(&cand, e)))?;
        let t = target.to_string_lossy();
        let joined = if t.starts_with('/') {
            normalize(&t)
        } else {
            normalize(&format!("{real_parent}/{t}"))
        };
        // The link is kept even when its target is missing (readlink reads it); it points inside the copy.
        self.tree.link(&cand, &joined)?;
        let real = self.resolve(&joined, links)?;
        Ok(real)
    }

    /// Copies what the checks read at `abs`: a file's bytes, a directory (with placeholders of its entries
    /// when it was listed), and the links on the way; failures are recorded, not fatal.
    pub(crate) fn copy(&mut self, abs: &str) -> io::Result<()> {
        let real = match self.resolve(abs, &mut 0) {
            Ok(Some(r)) => r,
            // Absent from the source: recorded as the machine's lack only where the source says so (a live
            // machine; a tree whose own snapshot recorded it), not for a file a tree merely did not capture.
            Ok(None) => {
                if self.src.lacks(abs) {
                    self.absent.insert(normalize(abs));
                }
                return Ok(());
            }
            Err(Fail::Dst(e)) => return Err(e),
            Err(Fail::Src(e)) => {
                self.record(abs, &e);
                self.keep_listed(abs);
                return Ok(());
            }
        };
        if self.src.is_dir(&real) {
            self.tree.mkdirs(&real)?;
            return self.placeholders(abs, &real);
        }
        match self.src.read_bytes(&real) {
            Ok(bytes) => {
                self.put(&real, &bytes)?;
                self.copied += 1;
            }
            Err(e) => {
                self.record(abs, &e);
                if abs != real {
                    self.record(&real, &e);
                }
            }
        }
        Ok(())
    }

    /// The directory of a path recorded as unreadable, made in the copy (best effort: not through a link) so
    /// that listing its parent still names it (a /proc/PID that is a file or may not be entered): the checks
    /// then meet the recorded failure, not an absent process.
    fn keep_listed(&mut self, abs: &str) {
        let dir = crate::host::parent_of(&normalize(abs)).to_string();
        if dir != "/" && fs::symlink_metadata(self.tree.dst(&dir)).is_err() {
            let _ = self.tree.mkdirs(&dir);
        }
    }

    /// Whether a path at or under `dir` was asked for.
    fn wanted_under(&self, dir: &str) -> bool {
        let below = format!("{dir}/");
        self.wanted.contains(dir)
            || self
                .wanted
                .range(below.clone()..)
                .next()
                .is_some_and(|p| p.starts_with(&below))
    }

    /// Entries of a directory that are directories (cpuN, stateN, rx-N, PIDs), the links of /sys/class/net and
    /// the files of msi_irqs (their names are the data), so that listing the copy names the same things.
    fn placeholders(&mut self, abs: &str, dir: &str) -> io::Result<()> {
        let names = match self.src.list(dir) {
            Ok(n) => n,
            Err(e) => {
                self.record(abs, &e);
                return Ok(());
            }
        };
        for name in names {
            let child = format!("{}/{name}", dir.trim_end_matches('/'));
            if is_task_list(dir) && !self.wanted_under(&child) {
                continue;
            }
            let Ok(m) = fs::symlink_metadata(self.src.path(&child)) else {
                continue;
            };
            if m.is_dir() {
                self.tree.mkdirs(&child)?;
            } else if m.file_type().is_symlink() && dir == crate::machine::net::NET {
                let _ = self.resolve(&child, &mut 0);
            } else if m.is_file() && dir.ends_with("/msi_irqs") {
                self.put(&child, b"")?;
            }
        }
        Ok(())
    }
}

/// /proc and a process's task directory: their entries are processes and threads, which come and go.
fn is_task_list(dir: &str) -> bool {
    let proc = crate::machine::PROC;
    dir == proc
        || dir
            .strip_prefix(proc)
            .and_then(|r| r.strip_suffix("/task"))
            .is_some_and(|pid| pid.len() > 1 && pid[1..].bytes().all(|b| b.is_ascii_digit()))
}

//! `Host`'s write side: the one place that writes files on the machine (or under --root). Kernel values in one
//! write; every other file atomically (a temporary beside it, fsync, rename, fsync of the directory), its mode
//! and owner kept, a symlink written through to its target or refused when it leads nowhere or outside the
//! root; temporaries a killed run left behind removed. Path resolution and the read side: host/mod.rs, host/read/.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{FileMeta, Host, HostError, HostResult, TEMP_MARK};

impl Host {
    /// Writes a value to an existing kernel file (sysfs, procfs) in one write, as `echo v > file` does (O_TRUNC:
    /// ignored by the kernel, needed for fixture files where a shorter value must not leave a tail).
    /// Under a root that is not this machine the file is an ordinary one and is replaced atomically instead: a
    /// process killed between truncating and writing would leave it empty.
    pub(crate) fn write_value(&self, abs: &str, value: &str) -> HostResult<()> {
        if !self.is_live() {
            return self.write_atomic(abs, value.as_bytes(), None);
        }
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(self.resolve(abs, true)?)
            .map_err(|e| HostError::from_io(abs, e))?;
        f.write_all(value.as_bytes())
            .map_err(|e| HostError::from_io(abs, e))
    }

    /// Where a write to `abs` lands. A regular file (or nothing yet) is written in place; a symbolic link is
    /// written through to the file it points to, so the link stays a link (images link /etc/kernel/cmdline and
    /// cmdline.txt). A link to nothing, to a directory or out of the root, and any other kind of file, are refused:
    /// replacing them would turn a link into a regular file with the link's 0777 mode.
    pub(crate) fn write_target(&self, abs: &str) -> HostResult<PathBuf> {
        let entry = self.resolve(abs, false)?;
        let refuse = |what: &'static str| HostError::NotRegular {
            path: abs.to_string(),
            what,
        };
        match fs::symlink_metadata(&entry) {
            Ok(m) if m.file_type().is_symlink() => {
                let real = fs::canonicalize(&entry)
                    .map_err(|_| refuse("a symbolic link to nothing; fix writes through links"))?;
                if !self.is_live() {
                    let root =
                        fs::canonicalize(&self.root).map_err(|e| HostError::from_io(abs, e))?;
                    if !real.starts_with(&root) {
                        return Err(HostError::OutsideRoot {
                            path: abs.to_string(),
                        });
                    }
                }
                match fs::metadata(&real) {
                    Ok(t) if t.is_file() => Ok(real),
                    _ => Err(refuse(
                        "a symbolic link to something that is not a regular file",
                    )),
                }
            }
            Ok(m) if !m.is_file() => Err(refuse("not a regular file")),
            _ => Ok(entry),
        }
    }

    /// Mode and owner of the file a write to `abs` would change (the link's target for a link).
    pub(crate) fn target_meta(&self, abs: &str) -> HostResult<FileMeta> {
        let m = fs::metadata(self.write_target(abs)?).map_err(|e| HostError::from_io(abs, e))?;
        Ok(FileMeta {
            mode: m.permissions().mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
        })
    }

    /// True when `abs` itself is a symbolic link (not followed).
    pub(crate) fn is_symlink(&self, abs: &str) -> bool {
        self.resolve(abs, false)
            .and_then(|p| fs::symlink_metadata(p).map_err(|e| HostError::from_io(abs, e)))
            .is_ok_and(|m| m.file_type().is_symlink())
    }

    /// The one file writer of the program. Replaces the file atomically: a temporary file `.NAME.rmp-eval.PID`
    /// beside it (created 0600, exclusively), fsync, mode and owner, rename, fsync of the directory. Mode and owner
    /// are `meta`, else the replaced file's, else 0644 and ours: a write never widens a mode. Links are written
    /// through (see `write_target`). The temporary file is removed on every error; one left by a killed process
    /// is removed by `remove_stale_temps`.
    pub(crate) fn write_atomic(
        &self,
        abs: &str,
        bytes: &[u8],
        meta: Option<&FileMeta>,
    ) -> HostResult<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let target = self.write_target(abs)?;
        let dir = target
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.root.clone());
        fs::create_dir_all(&dir).map_err(|e| HostError::from_io(abs, e))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}{TEMP_MARK}{}", std::process::id()));
        let keep = match meta {
            Some(m) => Some(m.clone()),
            None => fs::metadata(&target).ok().map(|m| FileMeta {
                mode: m.permissions().mode() & 0o7777,
                uid: m.uid(),
                gid: m.gid(),
            }),
        };
        let res = (|| -> io::Result<()> {
            // A leftover of an earlier process that had our pid: ours to replace.
            let _ = fs::remove_file(&tmp);
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(bytes)?;
            match &keep {
                Some(m) => {
                    // Ownership can only be kept by root; a non-root test run keeps its own.
                    let _ = std::os::unix::fs::fchown(&f, Some(m.uid), Some(m.gid));
                    f.set_permissions(fs::Permissions::from_mode(m.mode))?;
                }
                None => f.set_permissions(fs::Permissions::from_mode(0o644))?,
            }
            f.sync_all()?;
            fs::rename(&tmp, &target)?;
            fs::File::open(&dir)?.sync_all()
        })();
        if res.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        res.map_err(|e| HostError::from_io(abs, e))
    }

    /// Removes the temporary files (`.NAME.rmp-eval.PID`) that a process killed while writing left beside the
    /// file `abs` (in its directory, and in its target's for a link) — only those whose process is gone. Returns
    /// the names removed.
    pub(crate) fn remove_stale_temps(&self, abs: &str) -> Vec<String> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for p in [self.resolve(abs, false), self.write_target(abs)]
            .into_iter()
            .flatten()
        {
            if let Some(d) = p.parent()
                && !dirs.iter().any(|x| x == d)
            {
                dirs.push(d.to_path_buf());
            }
        }
        let mut removed = Vec::new();
        for e in dirs
            .iter()
            .filter_map(|d| fs::read_dir(d).ok())
            .flatten()
            .filter_map(|e| e.ok())
        {
            let n = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = n
                .starts_with('.')
                .then(|| n.rsplit_once(TEMP_MARK))
                .flatten()
                .and_then(|(_, p)| p.parse::<i32>().ok())
            else {
                continue;
            };
            let gone = pid != std::process::id() as i32 && crate::sys::process::is_gone(pid);
            if gone && e.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(e.path()).is_ok()
            {
                // As the machine names it (under --root, the path inside the tree).
                let p = e.path();
                let shown = p
                    .strip_prefix(&self.root)
                    .map_or_else(|_| p.display().to_string(), |r| format!("/{}", r.display()));
                removed.push(shown);
            }
        }
        removed
    }

    /// An exclusive lock on this machine's tree (its root directory), for fix and rollback: held from before they
    /// read any state until they are done. Not blocking: a second one is told at once.
    pub(crate) fn lock_tree(&self) -> HostResult<Option<crate::sys::fs::FileLock>> {
        let dir = fs::File::open(&self.root).map_err(|e| HostError::from_io("/", e))?;
        crate::sys::fs::try_lock_exclusive(dir).map_err(|e| HostError::from_io("/", e))
    }

    pub fn remove_file(&self, abs: &str) -> HostResult<()> {
        fs::remove_file(self.resolve(abs, false)?).map_err(|e| HostError::from_io(abs, e))
    }

    /// Removes an empty directory (a directory fix created); a directory with something in it is an error.
    pub(crate) fn remove_dir(&self, abs: &str) -> HostResult<()> {
        fs::remove_dir(self.resolve(abs, false)?).map_err(|e| HostError::from_io(abs, e))
    }

    pub(crate) fn create_dir_all(&self, abs: &str) -> HostResult<()> {
        fs::create_dir_all(self.resolve(abs, true)?).map_err(|e| HostError::from_io(abs, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_go_through_links_keep_modes_and_clean_up() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        h.write_atomic("/usr/real", b"a\n", None).unwrap();
        let real = d.path().join("usr/real");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        h.create_dir_all("/etc").unwrap();
        std::os::unix::fs::symlink("../usr/real", d.path().join("etc/link")).unwrap();
        h.write_atomic("/etc/link", b"b\n", None).unwrap();
        assert!(
            std::fs::symlink_metadata(d.path().join("etc/link"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&real).unwrap(), b"b\n");
        assert_eq!(
            std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::os::unix::fs::symlink("nowhere", d.path().join("etc/dangling")).unwrap();
        assert!(matches!(
            h.write_atomic("/etc/dangling", b"x", None),
            Err(HostError::NotRegular { .. })
        ));
        assert!(h.write_atomic("/etc", b"x", None).is_err());
        // A dead process's temporary file goes; a live one's (ours) stays.
        std::fs::write(d.path().join("etc/.link.rmp-eval.4194303"), "x").unwrap();
        let mine = format!(".link.rmp-eval.{}", std::process::id());
        std::fs::write(d.path().join("etc").join(&mine), "x").unwrap();
        assert_eq!(
            h.remove_stale_temps("/etc/link"),
            ["/etc/.link.rmp-eval.4194303"]
        );
        assert!(d.path().join("etc").join(&mine).exists());
    }
}

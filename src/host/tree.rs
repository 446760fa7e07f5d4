//! A tree written for examination (a snapshot's copy, an unpacked snapshot tarball): nothing written may land
//! outside it, whatever names and links the input holds. Directories are created one component at a time and
//! a component that is not a real directory (a link, a file) is refused; files are created O_EXCL|O_NOFOLLOW;
//! links are always written relative and lead to a path under the tree's root.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::{Path, PathBuf};

pub(crate) struct SafeTree {
    out: PathBuf,
    /// Directories known to exist in the tree (created or checked).
    made: HashSet<String>,
}

/// A link at `link` pointing at `target` (both absolute paths in the tree), written relative to the link's
/// directory: climbs to the tree's root, then down.
pub(crate) fn relative_target(link: &str, target: &str) -> String {
    let depth = link
        .split('/')
        .filter(|c| !c.is_empty())
        .count()
        .saturating_sub(1);
    let rest = target.trim_start_matches('/');
    let up = "../".repeat(depth);
    match (rest.is_empty(), depth) {
        (true, 0) => ".".into(),
        (true, _) => up.trim_end_matches('/').to_string(),
        _ => format!("{up}{rest}"),
    }
}

pub(crate) fn parent(abs: &str) -> &str {
    match abs.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((p, _)) => p,
    }
}

impl SafeTree {
    pub(crate) fn new(out: &Path) -> Self {
        SafeTree {
            out: out.to_path_buf(),
            made: HashSet::from(["/".to_string()]),
        }
    }

    pub(crate) fn dst(&self, abs: &str) -> PathBuf {
        self.out.join(abs.trim_start_matches('/'))
    }

    /// Creates `abs` (normalized, absolute) and its parents as real directories.
    pub(crate) fn mkdirs(&mut self, abs: &str) -> io::Result<()> {
        if self.made.contains(abs) {
            return Ok(());
        }
        self.mkdirs(parent(abs))?;
        let p = self.dst(abs);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(io::Error::other(format!(
                    "{abs} exists in the copy and is not a directory"
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(&p)?,
            Err(e) => return Err(e),
        }
        self.made.insert(abs.to_string());
        Ok(())
    }

    /// Writes a new file (never through a link, never over an existing entry: the first one stays).
    pub(crate) fn put(&mut self, abs: &str, bytes: &[u8]) -> io::Result<()> {
        self.mkdirs(parent(abs))?;
        let mut f = match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.dst(abs))
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
            Err(e) => return Err(e),
        };
        f.write_all(bytes)
    }

    /// A link at `abs` to `target` (an absolute path in the tree), unless something is there already.
    pub(crate) fn link(&mut self, abs: &str, target: &str) -> io::Result<()> {
        self.mkdirs(parent(abs))?;
        let at = self.dst(abs);
        if fs::symlink_metadata(&at).is_err() {
            symlink(relative_target(abs, target), &at)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative_and_inside() {
        assert_eq!(
            relative_target("/etc/os-release", "/usr/lib/os-release"),
            "../usr/lib/os-release"
        );
        assert_eq!(
            relative_target("/sys/class/net/eth0", "/sys/devices/x/net/eth0"),
            "../../../sys/devices/x/net/eth0"
        );
        assert_eq!(relative_target("/a", "/b"), "b");
        assert_eq!(relative_target("/a/b", "/"), "..");
    }

    #[test]
    fn nothing_is_written_through_a_link() {
        let outside = tempfile::tempdir().unwrap();
        let d = tempfile::tempdir().unwrap();
        symlink(outside.path(), d.path().join("evil")).unwrap();
        let mut t = SafeTree::new(d.path());
        assert!(t.mkdirs("/evil/x").is_err());
        assert!(t.put("/evil/f", b"x").is_err());
        fs::write(outside.path().join("target"), "keep").unwrap();
        symlink(outside.path().join("target"), d.path().join("file")).unwrap();
        assert!(t.put("/file", b"x").is_ok());
        assert_eq!(
            fs::read_to_string(outside.path().join("target")).unwrap(),
            "keep"
        );
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1);
    }
}

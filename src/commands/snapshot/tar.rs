//! The snapshot as a tarball: written whole or not at all.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// A new directory only this user can enter, next to `out` (the same filesystem, so the tarball's rename is
/// atomic): `.NAME.partial-PID`.
pub(crate) fn private_dir(out: &Path) -> io::Result<PathBuf> {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let d = parent
        .unwrap_or(Path::new("."))
        .join(format!(".{name}.partial-{}", std::process::id()));
    fs::DirBuilder::new().mode(0o700).create(&d)?;
    Ok(d)
}

/// Packs `dir` into `out` (gzip'd tar, links stored as links), through a temporary file renamed into place.
pub(crate) fn write(dir: &Path, out: &Path) -> io::Result<()> {
    let tmp = {
        let mut s = out.as_os_str().to_owned();
        s.push(format!(".partial-{}", std::process::id()));
        PathBuf::from(s)
    };
    let res = (|| {
        let f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        let gz = flate2::write::GzEncoder::new(f, flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        tar.follow_symlinks(false);
        let mut names: Vec<_> = fs::read_dir(dir)?.flatten().collect();
        names.sort_by_key(|e| e.file_name());
        for e in names {
            let name = e.file_name();
            if e.file_type()?.is_dir() {
                tar.append_dir_all(Path::new(&name), e.path())?;
            } else {
                tar.append_path_with_name(e.path(), Path::new(&name))?;
            }
        }
        tar.into_inner()?.finish()?.sync_all()?;
        fs::rename(&tmp, out)
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

//! `--root snapshot.tar.gz`: the project's own snapshot format read without the user unpacking it. The tarball
//! is unpacked into a private temporary directory (mode 0700, removed when the Host goes) under the same rules as
//! the snapshot's copy (SafeTree): names that climb out (`..`, absolute) are skipped, links are rewritten to stay
//! inside, nothing is written through a link; sizes and counts are bounded (MAX_UNPACKED, MAX_ENTRIES: counted
//! from the headers before anything is written, so a bomb is refused at once);
//! FIFOs and device nodes are not created but recorded as unreadable with their type, as a snapshot records them.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::recorded::{Failure, UNREADABLE};
use super::tree::SafeTree;
use super::{Host, HostError, MAX_READ, normalize};

/// The tar stream (headers and data, decompressed) may not exceed this: a snapshot is a few MB (this machine's,
/// 1,002 members, is 0.5 MB of stream), a generated 1,024-CPU machine with 3,000 threads under 20 MB.
pub(crate) const MAX_UNPACKED: u64 = 128 << 20;
/// Members (files, directories, links) at most: that 1,024-CPU snapshot copies 19,728 files (BENCHMARKS.md).
pub(crate) const MAX_ENTRIES: usize = 100_000;

/// The unpacked directory, removed when the last Host using it goes.
#[derive(Debug)]
pub(crate) struct Unpacked(PathBuf);

impl Drop for Unpacked {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Keeps the unpacked tree alive with the Host (and its clones); not part of its identity. Only its Drop
/// matters, hence never read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Keep(#[allow(dead_code)] pub(crate) Option<Arc<Unpacked>>);

impl PartialEq for Keep {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Keep {}

fn bad(path: &Path, why: impl ToString) -> HostError {
    HostError::Io {
        path: path.display().to_string(),
        source: io::Error::new(io::ErrorKind::InvalidData, why.to_string()),
    }
}

/// True for a regular file that starts with gzip's magic bytes.
fn is_gzip(path: &Path) -> bool {
    let Ok(mut f) = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    let mut magic = [0u8; 2];
    f.metadata().is_ok_and(|m| m.is_file())
        && f.read_exact(&mut magic).is_ok()
        && magic == [0x1f, 0x8b]
}

impl Host {
    /// The Host for `--root PATH`: a directory as it is, or a snapshot tarball unpacked privately.
    pub fn open_root(path: &Path) -> Result<Host, HostError> {
        if !is_gzip(path) {
            return Ok(Host::with_root(path));
        }
        // Counted before anything is written: a tarball over the bounds is refused at once, with no directory.
        bounded(path)?;
        // A signal that would end the program waits until the partial tree is gone (then acts as it would).
        let held = crate::sys::process::HeldSignals::hold().map_err(|e| bad(path, e))?;
        let dir = private_dir()?;
        let keep = Arc::new(Unpacked(dir.clone()));
        unpack(path, &dir, &held)?;
        let mut h = Host::with_root(&dir);
        h.keep = Keep(Some(keep));
        Ok(h)
    }
}

fn private_dir() -> Result<PathBuf, HostError> {
    let base = std::env::temp_dir();
    for i in 0..100u32 {
        let d = base.join(format!("rmp-eval-root-{}-{i}", std::process::id()));
        match fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(HostError::from_io(&d.display().to_string(), e)),
        }
    }
    Err(bad(&base, "no free temporary directory name"))
}

/// An entry's name as an absolute path in the tree, or None when it climbs out or is not a plain name.
fn entry_path(p: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => parts.push(n.to_str()?.to_string()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| format!("/{}", parts.join("/")))
}

/// Refuses a tarball with more than MAX_ENTRIES members or a stream over MAX_UNPACKED, reading headers only.
fn bounded(src: &Path) -> Result<(), HostError> {
    let f = fs::File::open(src).map_err(|e| HostError::from_io(&src.display().to_string(), e))?;
    let gz = flate2::read::GzDecoder::new(f).take(MAX_UNPACKED + 1);
    let mut ar = tar::Archive::new(gz);
    let io = |e: io::Error| bad(src, e);
    let mut bytes = 0u64;
    for (n, entry) in ar.entries().map_err(io)?.enumerate() {
        if n == MAX_ENTRIES {
            return Err(bad(src, format!("more than {MAX_ENTRIES} members")));
        }
        let e = entry.map_err(io)?;
        bytes = bytes.saturating_add(512 + e.size().div_ceil(512) * 512);
        if bytes > MAX_UNPACKED {
            return Err(bad(
                src,
                format!("unpacks to more than {} MiB", MAX_UNPACKED >> 20),
            ));
        }
    }
    to_the_end(src, ar.into_inner())
}

/// Reads the rest of the gzip stream after tar's end marker: only at its end does the decoder compare the
/// trailer's CRC-32 and length with what it produced, so a corrupt tarball whose damage inflates cleanly (a
/// stored, level-0 member with a byte changed) is refused here, with no tree written. More than the bound left
/// over is refused too.
fn to_the_end(
    src: &Path,
    mut rest: io::Take<flate2::read::GzDecoder<fs::File>>,
) -> Result<(), HostError> {
    io::copy(&mut rest, &mut io::sink()).map_err(|e| bad(src, e))?;
    if rest.limit() == 0 {
        return Err(bad(
            src,
            format!("unpacks to more than {} MiB", MAX_UNPACKED >> 20),
        ));
    }
    Ok(())
}

fn unpack(
    src: &Path,
    dir: &Path,
    held: &crate::sys::process::HeldSignals,
) -> Result<(), HostError> {
    let f = fs::File::open(src).map_err(|e| HostError::from_io(&src.display().to_string(), e))?;
    // The bound applies to the decompressed stream: a bomb ends in an error, not a full disk.
    let gz = flate2::read::GzDecoder::new(f).take(MAX_UNPACKED + 1);
    let mut ar = tar::Archive::new(gz);
    let mut tree = SafeTree::new(dir);
    let mut recorded: BTreeMap<String, Failure> = BTreeMap::new();
    let mut manifest: Option<Vec<u8>> = None;
    let io = |e: io::Error| bad(src, e);
    for (n, entry) in ar.entries().map_err(io)?.enumerate() {
        if n == MAX_ENTRIES {
            return Err(bad(src, format!("more than {MAX_ENTRIES} members")));
        }
        if held.arrived() {
            return Err(bad(src, "interrupted while unpacking"));
        }
        let mut e = entry.map_err(io)?;
        let Some(abs) = e.path().ok().and_then(|p| entry_path(&p)) else {
            continue;
        };
        let t = e.header().entry_type();
        let what = match t {
            tar::EntryType::Directory => {
                tree.mkdirs(&abs).map_err(io)?;
                continue;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if e.size() > MAX_READ {
                    recorded.insert(
                        abs,
                        Failure::of(&HostError::TooLarge {
                            path: String::new(),
                        })
                        .unwrap(),
                    );
                    continue;
                }
                let mut bytes = Vec::with_capacity(e.size() as usize);
                e.read_to_end(&mut bytes).map_err(io)?;
                if abs == UNREADABLE {
                    manifest = Some(bytes);
                } else {
                    tree.put(&abs, &bytes).map_err(io)?;
                }
                continue;
            }
            tar::EntryType::Symlink => {
                let Some(target) = e.link_name().ok().flatten() else {
                    continue;
                };
                let t = target.to_string_lossy();
                let to = if t.starts_with('/') {
                    normalize(&t)
                } else {
                    normalize(&format!("{}/{t}", super::tree::parent(&abs)))
                };
                tree.link(&abs, &to).map_err(io)?;
                continue;
            }
            tar::EntryType::Fifo => "FIFO",
            tar::EntryType::Char => "character device",
            tar::EntryType::Block => "block device",
            _ => "special file",
        };
        let f = Failure::of(&HostError::NotRegular {
            path: String::new(),
            what,
        });
        recorded.insert(abs, f.unwrap());
    }
    // The file may have changed since `bounded` read it: its checksum is checked again.
    to_the_end(src, ar.into_inner())?;
    // The snapshot's own record, plus what this unpacking refused to create.
    #[derive(serde::Deserialize, Default)]
    struct File {
        #[serde(default)]
        unreadable: BTreeMap<String, Failure>,
    }
    let mut all = manifest
        .and_then(|b| serde_json::from_slice::<File>(&b).ok())
        .unwrap_or_default()
        .unreadable;
    all.extend(recorded);
    let json = serde_json::json!({ "unreadable": all }).to_string();
    tree.put(UNREADABLE, json.as_bytes()).map_err(io)
}

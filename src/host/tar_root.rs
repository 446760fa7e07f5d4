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

/// The largest real snapshot is a 1,024-CPU machine's. Scaled from the real captures (tests/fixtures: 40 members
/// per CPU directory on the 8-thread desktop, 5 per IRQ, 4 per thread) it holds about 41,000 CPU members, 20,000
/// of 4,000 IRQs and 36,000 of 9,000 threads: about 98,000 members. Twice that, for machines we have not seen:
pub(crate) const MAX_ENTRIES: usize = 200_000;
/// Its tar stream: /proc/interrupts alone is 4,000 lines of 1,024 counters (about 45 MB), the threads' files
/// about 15 MB, and each member's header and padding about 75 MB: about 135 MB. With the same margin:
pub(crate) const MAX_UNPACKED: u64 = 384 << 20;
/// Unpacking stops with an error after this long: on this project's loaded CI machine a 20,000-directory tarball
/// takes up to 75 s on ext4 (each mkdir is the file system's inode allocation, not rmp-eval's work), so a
/// 1,024-CPU snapshot fits with room; a tarball built to be slow does not hold the program for ever.
pub(crate) const MAX_UNPACK_TIME: std::time::Duration = std::time::Duration::from_secs(300);

/// The unpacked directory, removed when the last Host using it goes.
#[derive(Debug)]
pub(crate) struct Unpacked(PathBuf);

impl Drop for Unpacked {
    fn drop(&mut self) {
        // A signal that would end the program (SIGTERM, SIGHUP, SIGINT, SIGQUIT) waits until the tree is gone,
        // then acts as it would: a removal cut short would leave the rest in the temporary directory for good.
        let _held = crate::sys::process::HeldSignals::hold();
        test_seam_pause_before_removal();
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A test seam (Cargo.toml's `test-seams` feature lists them; compiled only with the `test-seams` feature): with RMP_EVAL_TEST_PAUSE_REMOVAL=PATH,
/// the unpacked tree's removal writes PATH, signals held, and waits until it is removed (at most 60 s), so that
/// a test can send a signal there: tests/untrusted/garbage_is_unknown.rs.
#[cfg(feature = "test-seams")]
fn test_seam_pause_before_removal() {
    let Some(flag) = std::env::var_os("RMP_EVAL_TEST_PAUSE_REMOVAL") else {
        return;
    };
    let _ = fs::write(&flag, b"removing\n");
    for _ in 0..600 {
        if !Path::new(&flag).exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_pause_before_removal() {}

/// Keeps the unpacked tree alive with the Host (and its clones); not part of its identity. Only its Drop
/// matters, hence never read.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeepUnpacked(#[allow(dead_code)] pub(crate) Option<Arc<Unpacked>>);

impl PartialEq for KeepUnpacked {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for KeepUnpacked {}

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
        h.keep = KeepUnpacked(Some(keep));
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
    let t0 = std::time::Instant::now();
    for (n, entry) in ar.entries().map_err(io)?.enumerate() {
        if n == MAX_ENTRIES {
            return Err(bad(src, format!("more than {MAX_ENTRIES} members")));
        }
        if held.arrived() {
            return Err(bad(src, "interrupted while unpacking"));
        }
        if t0.elapsed() > MAX_UNPACK_TIME {
            return Err(bad(
                src,
                format!("unpacking took more than {} s", MAX_UNPACK_TIME.as_secs()),
            ));
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

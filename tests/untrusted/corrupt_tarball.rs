//! A snapshot tarball whose gzip checksum fails is refused (one line, exit 2), never believed: a stored (level 0)
//! tarball with one byte of a file changed inflates cleanly — only the CRC-32 at its end tells — and a tarball
//! with a byte flipped in its compressed data.

use crate::common;

use std::io::Write;
use std::path::Path;

use common::check::{run, text};
use common::fix::Root;

/// The tree as a tar stream, gzip-compressed at `level`.
fn tgz(root: &Path, level: u32) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    {
        let mut b = tar::Builder::new(&mut gz);
        b.follow_symlinks(false);
        b.append_dir_all(".", root).unwrap();
        b.finish().unwrap();
    }
    gz.finish().unwrap()
}

fn refused(bytes: &[u8], what: &str) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("snapshot.tar.gz");
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    let o = run(&["--root", p.to_str().unwrap(), "check", "--core", "1"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{what}: {err}{}", text(&o.stdout));
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(o.stdout.is_empty(), "{what}: {}", text(&o.stdout));
}

#[test]
fn a_tarball_whose_checksum_fails_is_refused() {
    let r = Root::untuned();
    r.write(
        "/proc/cmdline",
        "BOOT_IMAGE=/vmlinuz ro rcu_nocbs=3 nohz_full=3\n",
    );
    // Level 0: the file's bytes are in the gzip as they are; 3 becomes 2.
    let mut stored = tgz(r.dir.path(), 0);
    let at = stored
        .windows(11)
        .position(|w| w == b"rcu_nocbs=3")
        .unwrap();
    let good = stored.clone();
    stored[at + 10] = b'2';
    refused(&stored, "stored, one byte changed");
    // The untouched stored tarball is read.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("good.tar.gz");
    std::fs::write(&p, &good).unwrap();
    let o = run(&["--root", p.to_str().unwrap(), "check", "--core", "1"]);
    assert_ne!(o.status.code(), Some(2), "{}", text(&o.stderr));
    // Compressed: a byte flipped in the middle of the deflate data.
    let mut flipped = tgz(r.dir.path(), 6);
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x10;
    refused(&flipped, "compressed, one byte flipped");
}

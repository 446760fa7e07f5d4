//! Snapshots of hostile trees and hostile snapshot tarballs: nothing written outside
//! the output, links in the copy never point outside it, cost linear in the machine's size, and the copy (or the
//! tarball itself as --root) gives the source's verdicts.

use super::machine_gen;
use crate::common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use common::check::{run, snapshot, text};
use rmp_eval::host::{Host, normalize};

fn tree(cpus: usize, irqs: usize, threads: usize) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("ck-snap-h")
        .tempdir()
        .unwrap();
    let m = machine_gen::Machine {
        cpus,
        irqs,
        threads,
    };
    machine_gen::generate(d.path(), &m).unwrap();
    d
}

/// (id, status, detail) of every check on a root.
fn verdicts(root: &Path, extra: &[&str]) -> Vec<(String, String, String)> {
    let mut args = vec!["--root", root.to_str().unwrap(), "check", "--json"];
    args.extend_from_slice(extra);
    let o = run(&args);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", text(&o.stdout), text(&o.stderr)));
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("id"), s("status"), s("detail"))
        })
        .collect()
}

/// Every link under `out`, resolved lexically from where it sits, stays under `out`.
fn links_stay_inside(out: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![PathBuf::from("/")];
    while let Some(rel) = stack.pop() {
        for e in fs::read_dir(out.join(rel.strip_prefix("/").unwrap())).unwrap() {
            let e = e.unwrap();
            let abs = rel.join(e.file_name());
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                let target = fs::read_link(e.path()).unwrap();
                let t = target.to_string_lossy();
                assert!(!t.starts_with('/'), "{} -> {t}: absolute", abs.display());
                // Lexically, with ".." above the copy's root NOT clamped: it must never be needed.
                let mut depth: i64 = abs.parent().unwrap().components().count() as i64 - 1;
                for c in t.split('/') {
                    match c {
                        ".." => depth -= 1,
                        "" | "." => {}
                        _ => depth += 1,
                    }
                    assert!(
                        depth >= 0,
                        "{} -> {t} climbs out of the copy",
                        abs.display()
                    );
                }
                n += 1;
            } else if t.is_dir() {
                stack.push(abs);
            }
        }
    }
    n
}

#[test]
fn item2_escaping_links_and_long_chains_stay_in_the_output() {
    let d = tree(2, 2, 4);
    let r = d.path();
    let outside = tempfile::Builder::new()
        .prefix("ck-outside")
        .tempdir()
        .unwrap();
    let o = outside
        .path()
        .to_str()
        .unwrap()
        .trim_start_matches('/')
        .to_string();
    let net = r.join("sys/class/net");
    // A relative link that climbs far above the root towards a real directory outside it.
    symlink(format!("{}{o}", "../".repeat(12)), net.join("evil")).unwrap();
    // A chain of 20 links (more than the old limit of 16) ending at a real interface directory.
    symlink("../../devices/virtual/net/lo", r.join("sys/devices/c20")).unwrap_or(());
    fs::create_dir_all(r.join("sys/devices/virtual/net/lo")).unwrap();
    for i in (1..20).rev() {
        symlink(format!("c{}", i + 1), r.join(format!("sys/devices/c{i}"))).unwrap();
    }
    symlink("../../devices/c1", net.join("chain")).unwrap();
    // An absolute link.
    symlink("/etc", net.join("abs")).unwrap();
    let before: Vec<_> = fs::read_dir(outside.path()).unwrap().collect();
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("copy");
    snapshot(r, &out);
    assert!(links_stay_inside(&out) >= 3);
    assert_eq!(
        fs::read_dir(outside.path()).unwrap().count(),
        before.len(),
        "wrote outside"
    );
    assert_eq!(
        fs::read_dir(parent.path()).unwrap().count(),
        1,
        "only the output in its parent"
    );
    assert_eq!(
        verdicts(r, &["--nic", "chain"]),
        verdicts(&out, &["--nic", "chain"])
    );
    // The same as a tarball: every link entry stays inside.
    let tgz = parent.path().join("s.tar.gz");
    snapshot(r, &tgz);
    let f = fs::File::open(&tgz).unwrap();
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(f));
    for e in ar.entries().unwrap() {
        let e = e.unwrap();
        let p = e.path().unwrap().to_string_lossy().into_owned();
        assert!(
            !p.starts_with('/') && !p.split('/').any(|c| c == ".."),
            "{p}"
        );
        if let Some(t) = e.link_name().unwrap() {
            let t = t.to_string_lossy();
            let joined = format!("/{}/{t}", Path::new(&p).parent().unwrap().display());
            assert!(!t.starts_with('/'), "{p} -> {t}");
            let depth = p.matches('/').count() as i64;
            assert!(
                t.matches("../").count() as i64 <= depth,
                "{p} -> {t} ({})",
                normalize(&joined)
            );
        }
    }
}

#[test]
fn item3_snapshot_work_grows_linearly_with_the_machine() {
    // Accesses by the traced checks on machines of 4, 16 and 64 CPUs (as many IRQs): linear means the
    // 16x machine costs at most ~16x (the old trace was quadratic: every check for every core).
    let mut touched = Vec::new();
    for cpus in [4, 16, 64] {
        let d = tree(cpus, cpus, 64);
        let out = tempfile::tempdir().unwrap();
        let s = rmp_eval::commands::snapshot::snapshot_into(
            &Host::with_root(d.path()),
            &out.path().join("c"),
        )
        .unwrap();
        touched.push(s.touched as f64);
        if cpus == 16 {
            // And the copy says what the source says, for several cores.
            for core in ["1", "8", "15"] {
                assert_eq!(
                    verdicts(d.path(), &["--core", core]),
                    verdicts(&out.path().join("c"), &["--core", core]),
                    "core {core}"
                );
            }
        }
    }
    let (a, c) = (touched[0], touched[2]);
    assert!(
        c / a < 16.0 * 1.5,
        "4 → 64 CPUs: {touched:?} (quadratic would be ~256x)"
    );
}

#[test]
fn item6_the_copy_records_what_could_not_be_read() {
    let d = tree(4, 4, 8);
    let r = d.path();
    // Too large (sparse), and not a regular file.
    let big = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(r.join("proc/cmdline"))
        .unwrap();
    big.set_len(rmp_eval::host::MAX_READ + 10).unwrap();
    fs::remove_file(r.join("proc/swaps")).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(r.join("proc/swaps"))
            .status()
            .unwrap()
            .success()
    );
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("copy");
    snapshot(r, &out);
    let src = verdicts(r, &[]);
    assert_eq!(src, verdicts(&out, &[]));
    let swap = src.iter().find(|v| v.0 == "swap").unwrap();
    assert_eq!(swap.1, "unknown", "{swap:?}");
    let manifest = fs::read_to_string(out.join("rmp-eval-unreadable.json")).unwrap();
    assert!(
        manifest.contains("/proc/cmdline") && manifest.contains("too_large"),
        "{manifest}"
    );
    assert!(manifest.contains("FIFO"), "{manifest}");
}

#[test]
fn item9_a_snapshot_tarball_is_a_root() {
    let d = tree(4, 4, 8);
    let parent = tempfile::tempdir().unwrap();
    let tgz = parent.path().join("s.tar.gz");
    snapshot(d.path(), &tgz);
    assert_eq!(verdicts(d.path(), &[]), verdicts(&tgz, &[]));
    // A hostile tarball: names that climb out, absolute names, a link to / with a file written "through" it,
    // and a FIFO entry.
    let outside = tempfile::Builder::new()
        .prefix("ck-outside")
        .tempdir()
        .unwrap();
    let evil = parent.path().join("evil.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        fs::File::create(&evil).unwrap(),
        flate2::Compression::fast(),
    );
    let mut b = tar::Builder::new(gz);
    let mut add = |name: &str, kind: tar::EntryType, link: Option<&str>, data: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        if let Some(l) = link {
            h.set_link_name(l).unwrap();
        }
        // set_path refuses "..": write the raw name like a crafted archive would.
        let raw = &mut h.as_old_mut().name;
        raw[..name.len()].copy_from_slice(name.as_bytes());
        h.set_cksum();
        b.append(&h, data).unwrap();
    };
    let o = outside.path().to_str().unwrap();
    add(
        &format!("../../../../../../..{o}/climbed"),
        tar::EntryType::Regular,
        None,
        b"x",
    );
    add("up", tar::EntryType::Symlink, Some(o), b"");
    add("up/through", tar::EntryType::Regular, None, b"x");
    add("proc/interrupts", tar::EntryType::Fifo, None, b"");
    add(
        "proc/cmdline",
        tar::EntryType::Regular,
        None,
        b"ro rcu_nocbs=all\n",
    );
    b.into_inner().unwrap().finish().unwrap();
    let o = run(&[
        "--root",
        evil.to_str().unwrap(),
        "check",
        "--json",
        "--core",
        "0",
    ]);
    assert_eq!(
        fs::read_dir(outside.path()).unwrap().count(),
        0,
        "wrote outside"
    );
    assert!(o.status.code().is_some(), "{}", text(&o.stderr));
    if o.status.code() != Some(2) {
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let irq = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "unrelated_irqs")
            .unwrap();
        assert_eq!(irq["status"], "unknown");
        assert!(irq["detail"].as_str().unwrap().contains("FIFO"), "{irq}");
    }
    // An entry claiming a terabyte: refused at the bound, one line, exit 2.
    let bomb = parent.path().join("bomb.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        fs::File::create(&bomb).unwrap(),
        flate2::Compression::fast(),
    );
    let mut b = tar::Builder::new(gz);
    let mut h = tar::Header::new_gnu();
    h.set_path("proc/cmdline").unwrap();
    h.set_size(1 << 40);
    h.set_cksum();
    b.append(&h, &b"ro"[..]).unwrap_or(());
    let _ = b.into_inner().map(|g| g.finish());
    let o = run(&["--root", bomb.to_str().unwrap(), "check"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert_eq!(text(&o.stderr).lines().count(), 1, "{}", text(&o.stderr));
    // The private directory is gone afterwards.
    let left: Vec<_> = fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("rmp-eval-root-")
        })
        .collect();
    assert!(left.is_empty() || left.iter().all(|e| !e.path().join("proc/cmdline").exists()));
}

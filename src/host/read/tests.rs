use super::super::recorded::UNREADABLE;
use super::*;
use std::os::unix::fs::symlink;
use std::sync::Arc;

fn root() -> (tempfile::TempDir, Host) {
    let d = tempfile::Builder::new().prefix("ck-hr").tempdir().unwrap();
    let h = Host::with_root(d.path());
    (d, h)
}

fn mkfifo(p: &std::path::Path) {
    crate::sys::fs::mkfifo(p, 0o644).unwrap();
}

/// Both ways of resolving: openat2, and the canonicalizing stand-in used when it is missing.
fn both(f: impl Fn()) {
    f();
    set_force_fallback(true);
    f();
    set_force_fallback(false);
}

#[test]
fn a_fifo_is_not_regular_and_does_not_block() {
    let (d, h) = root();
    fs::create_dir_all(d.path().join("proc")).unwrap();
    mkfifo(&d.path().join("proc/interrupts"));
    symlink("interrupts", d.path().join("proc/link")).unwrap();
    both(|| {
        for p in ["/proc/interrupts", "/proc/link"] {
            let e = h.read(p).unwrap_err();
            assert!(
                matches!(e, HostError::NotRegular { what: "FIFO", .. }),
                "{e:?}"
            );
            assert_eq!(e.reason(), "not a regular file (FIFO)");
            assert!(h.exists(p) && !h.is_dir(p));
        }
        assert!(matches!(
            h.list("/proc/interrupts"),
            Err(HostError::Io { .. })
        ));
    });
}

#[test]
fn directories_sockets_and_big_files_are_refused() {
    let (d, h) = root();
    fs::create_dir_all(d.path().join("sys/x")).unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(d.path().join("sys/sock")).unwrap();
    let big = fs::File::create(d.path().join("sys/big")).unwrap();
    big.set_len(MAX_READ + 1).unwrap();
    both(|| {
        assert!(matches!(
            h.read("/sys/x"),
            Err(HostError::NotRegular {
                what: "directory",
                ..
            })
        ));
        assert!(matches!(
            h.read("/sys/sock"),
            Err(HostError::NotRegular { what: "socket", .. })
        ));
        assert!(matches!(
            h.read("/sys/big"),
            Err(HostError::TooLarge { .. })
        ));
    });
}

#[test]
fn links_resolve_inside_the_root_like_a_chroot() {
    let (d, h) = root();
    fs::create_dir_all(d.path().join("usr/lib")).unwrap();
    fs::create_dir_all(d.path().join("etc")).unwrap();
    fs::write(d.path().join("usr/lib/os-release"), "ID=debian\n").unwrap();
    // An absolute link, as a real /etc/os-release may be, reads the root's own file.
    symlink("/usr/lib/os-release", d.path().join("etc/os-release")).unwrap();
    assert_eq!(h.read_trimmed("/etc/os-release").unwrap(), "ID=debian");
    // ".." above the root stays at the root.
    symlink("../../../../../usr/lib", d.path().join("etc/up")).unwrap();
    assert_eq!(h.list("/etc/up").unwrap(), vec!["os-release"]);
    // A loop ends in an error, not a hang.
    symlink("loop2", d.path().join("etc/loop1")).unwrap();
    symlink("loop1", d.path().join("etc/loop2")).unwrap();
    both(|| assert!(h.read("/etc/loop1").is_err()));
}

#[test]
fn recorded_failures_stand_in_for_absent_files() {
    let (d, h) = root();
    fs::write(
        d.path().join(&UNREADABLE[1..]),
        r#"{"unreadable":{"/proc/1/task/1/stat":{"kind":"permission_denied"},
            "/sys/class/net/eth0/speed":{"kind":"os_error","errno":22},
            "/proc/interrupts":{"kind":"not_regular","what":"FIFO"}}}"#,
    )
    .unwrap();
    assert!(matches!(
        h.read("/proc/1/task/1/stat"),
        Err(HostError::PermissionDenied { .. })
    ));
    assert_eq!(
        h.read("/sys/class/net/eth0/speed")
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EINVAL)
    );
    assert_eq!(
        h.read("/proc/interrupts").unwrap_err().reason(),
        "not a regular file (FIFO)"
    );
    assert!(h.exists("/proc/interrupts"));
    assert!(h.read("/proc/other").unwrap_err().is_not_found());
    // Each failure maps back to what is recorded.
    let e = HostError::Io {
        path: "/x".into(),
        source: io::Error::from_raw_os_error(libc::EINVAL),
    };
    assert_eq!(
        Failure::of(&e).unwrap().error("/x").raw_os_error(),
        Some(22)
    );
    assert!(Failure::of(&HostError::NotFound { path: "/x".into() }).is_none());
}

#[test]
fn reads_through_dot_dot_links_survive_renames_elsewhere() {
    // openat2 with RESOLVE_IN_ROOT answers EAGAIN when any rename on the machine (a build, a netns move) races with
    // the resolution of "..": the kernel cannot then prove the path stayed inside. A snapshot's sysfs is full of
    // such links (sys/class/net/X -> ../../devices/…); a read must not fail because of someone else's rename.
    let (d, h) = root();
    let dev = d.path().join("sys/devices/virtual/net/x");
    fs::create_dir_all(&dev).unwrap();
    fs::write(dev.join("mtu"), "1500\n").unwrap();
    fs::create_dir_all(d.path().join("sys/class/net")).unwrap();
    symlink(
        "../../devices/virtual/net/x",
        d.path().join("sys/class/net/x"),
    )
    .unwrap();
    let other = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let renamer = {
        let (stop, dir) = (stop.clone(), other.path().to_path_buf());
        fs::write(dir.join("a"), "").unwrap();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                fs::rename(dir.join("a"), dir.join("b")).unwrap();
                fs::rename(dir.join("b"), dir.join("a")).unwrap();
            }
        })
    };
    let failed = (0..20_000)
        .filter(|_| h.read_trimmed("/sys/class/net/x/mtu").ok().as_deref() != Some("1500"))
        .count();
    stop.store(true, Ordering::Relaxed);
    renamer.join().unwrap();
    assert_eq!(failed, 0, "reads failed while files were renamed elsewhere");
}

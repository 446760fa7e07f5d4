//! `rmp-eval reflect` against a MainDevice no one here wrote (pysoem, which bundles SOEM), and its exits.
//! Needs root (network namespaces); CI is root.

mod common;
use common::nic as nic_support;

use std::process::Command;

use nic_support::*;

#[test]
fn pysoem_config_init_finds_one_subdevice() {
    if !root_or_skip("pysoem_config_init_finds_one_subdevice") {
        return;
    }
    let Some(py) = pysoem_python() else { return };
    let v = Veth::new();
    let r = v.reflect(&[]);
    let cap = Capture::start(&v.host, "ether proto 0x88a4", 2);
    let o = Command::new(&py)
        .args([
            "-c",
            "import sys, pysoem\nm = pysoem.Master()\nm.open(sys.argv[1])\nn = m.config_init()\n\
                      print('found', n, len(m.slaves))\nm.close()",
        ])
        .arg(&v.host)
        .output()
        .unwrap();
    let (code, out, err) = r.stop();
    let py_out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "pysoem: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        py_out.trim(),
        "found 1 1",
        "SOEM's detection BRD must see working counter 1"
    );
    assert_eq!(code, 0, "reflect exits 0 on SIGINT: {err}");
    // SOEM reads every SubDevice's EEPROM through many datagrams: all of them were answered and counted.
    let line = out.lines().last().unwrap();
    let n: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(n > 10 && line.contains(&format!("{n} EtherCAT")), "{out}");
    // SOEM's first frame and its answer, as tshark decodes them: the reply's source MAC has bit 0x02 set, as a
    // real ESC returns it, and its working counter is 1.
    let rows = cap.fields(&["eth.src", "ecat.cmd", "ecat.idx", "ecat.cnt"], &[]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (req, rep): (Vec<&str>, Vec<&str>) =
        (rows[0].split(';').collect(), rows[1].split(';').collect());
    assert_eq!((req[0], req[3]), ("01:01:01:01:01:01", "0"), "{rows:?}");
    assert_eq!((rep[0], rep[3]), ("03:01:01:01:01:01", "1"), "{rows:?}");
    assert_eq!((rep[1], rep[2]), (req[1], req[2]), "same command and index");
}

#[test]
fn reflect_count_stops_after_n_and_bad_names_exit_2() {
    if !root_or_skip("reflect_count_stops_after_n") {
        return;
    }
    let Some(py) = pysoem_python() else { return };
    let v = Veth::new();
    let r = v.reflect(&["--count", "3"]);
    // config_init sends far more than 3 frames; the reflector answers 3 and exits by itself.
    let _ = Command::new(&py)
        .args(["-c", "import sys, pysoem\nm = pysoem.Master()\nm.open(sys.argv[1])\nm.config_init()\nm.close()"])
        .arg(&v.host)
        .output()
        .unwrap();
    let (code, out, _) = r.wait();
    assert_eq!(code, 0);
    assert!(out.contains("answered 3 frames"), "{out}");

    for bad in ["ncnosuch9", "a/b", "eth0:1", "sixteen-bytes-xx"] {
        let o = Command::new(BIN)
            .args(["reflect", "--nic", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("rmp-eval: "), "{err}");
    }
}

#[test]
fn promiscuous_reflect_restores_the_flags() {
    if !root_or_skip("promiscuous_reflect_restores_the_flags") {
        return;
    }
    let v = Veth::new();
    let before = v.peer_flags();
    let r = v.reflect(&["--promisc"]);
    let during = v.peer_flags();
    let (code, _, err) = r.stop();
    let after = v.peer_flags();
    let promisc =
        |f: &str| u32::from_str_radix(f.trim().trim_start_matches("0x"), 16).unwrap() & 0x100 != 0;
    assert!(!promisc(&before), "{before}");
    assert!(
        promisc(&during),
        "--promisc puts the interface in promiscuous mode: {during}"
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(before, after, "flags identical before and after");
    // Killed without a chance to clean up, the kernel still drops the socket's promiscuous membership.
    let r = v.reflect(&["--promisc"]);
    assert!(promisc(&v.peer_flags()));
    r.signal(libc::SIGKILL);
    let _ = r.wait();
    assert_eq!(before, v.peer_flags());
}

#[test]
fn flags_guard_puts_back_what_someone_changed() {
    if !root_or_skip("flags_guard_puts_back_what_someone_changed") {
        return;
    }
    let v = Veth::new();
    let before = v.host_flags();
    {
        let _g = rmp_eval::measure::netif::FlagsGuard::new(&v.host).unwrap();
        // Something flips promiscuous mode by the interface flag (as the original did) while the guard lives.
        let o = Command::new("ip")
            .args(["link", "set", &v.host, "promisc", "on"])
            .output()
            .unwrap();
        assert!(o.status.success());
        assert_ne!(v.host_flags(), before);
    }
    assert_eq!(
        v.host_flags(),
        before,
        "dropping the guard restored the flags"
    );
}

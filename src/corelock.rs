//! Who measures on a CPU: every measurement (`run`, fix's before/after, the after-boot run) holds a shared lock on
//! /run/rmp-eval/measure-cpuN.lock while it runs; the monitor takes it exclusively without waiting, and skips its
//! pass when it cannot ("never while a measurement on that core runs"). Shared, so that measurements never wait
//! for each other as they did before; a lock file that cannot be made (no /run, not root) does not stop a
//! measurement — it only means the monitor cannot see it.
//!
//! Who measures on a NIC: a NIC run holds /run/rmp-eval/measure-nic-KEY.lock exclusively (KEY: the interface's
//! network namespace and index, `machine::net::nic_key`; /run is one directory for every namespace), taken without waiting; a
//! second run on the same interface is refused (two MainDevices on one segment answer each other's frames, and
//! each run's verdict would be about the other's traffic).

use std::fs::{File, OpenOptions};

use crate::error::{Error, Result};
use crate::host::Host;
use crate::sys::fs::{FileLock, lock_shared, try_lock_exclusive};

pub(crate) const DIR: &str = "/run/rmp-eval";

pub struct CoreLock {
    _lock: FileLock,
}

fn open(host: &Host, core: usize) -> std::io::Result<File> {
    host.create_dir_all(DIR).map_err(std::io::Error::other)?;
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(host.path(&format!("{DIR}/measure-cpu{core}.lock")))
}

/// Held by a measurement on `core` (waits only while the monitor holds it, which it does for one short pass).
pub fn shared(host: &Host, core: usize) -> Option<CoreLock> {
    let f = open(host, core).ok()?;
    lock_shared(f).ok().map(|l| CoreLock { _lock: l })
}

/// For the monitor: the lock when no measurement holds it, None when one does.
pub(crate) fn try_exclusive(host: &Host, core: usize) -> Result<Option<CoreLock>> {
    let f = open(host, core).map_err(|e| Error::sys(format!("{DIR}/measure-cpu{core}.lock"), e))?;
    try_lock_exclusive(f)
        .map(|l| l.map(|l| CoreLock { _lock: l }))
        .map_err(|e| Error::sys(format!("locking {DIR}/measure-cpu{core}.lock"), e))
}

/// Held by the one NIC run on `nic` (a validated interface name, `key` its namespace and index); a second is
/// refused with one line. As with the core's lock, a lock file that cannot be made does not stop the run.
pub(crate) fn nic_exclusive(host: &Host, nic: &str, key: &str) -> Result<Option<CoreLock>> {
    let name = format!("{DIR}/measure-nic-{key}.lock");
    let opened = host.create_dir_all(DIR).ok().and_then(|_| {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(host.path(&name))
            .ok()
    });
    let Some(f) = opened else {
        return Ok(None);
    };
    match try_lock_exclusive(f) {
        Ok(Some(l)) => Ok(Some(CoreLock { _lock: l })),
        Ok(None) => Err(Error::usage(format!(
            "--nic {nic}: another rmp-eval run is measuring on {nic} (it holds {name}); one run per NIC: \
             wait for it to end"
        ))),
        Err(e) => Err(Error::sys(format!("locking {name}"), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measurement_keeps_the_monitor_out_and_measurements_share() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        let m1 = shared(&h, 3).expect("lock file under the root");
        let m2 = shared(&h, 3).expect("a second measurement is not refused");
        assert!(try_exclusive(&h, 3).unwrap().is_none());
        // Another core is free.
        assert!(try_exclusive(&h, 2).unwrap().is_some());
        drop((m1, m2));
        let mon = try_exclusive(&h, 3).unwrap();
        assert!(mon.is_some());
    }

    #[test]
    fn one_run_per_nic() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        let first = nic_exclusive(&h, "eth1", "net1-if3")
            .unwrap()
            .expect("lock file under the root");
        let e = nic_exclusive(&h, "eth1", "net1-if3")
            .err()
            .expect("a second run is refused");
        assert!(
            e.to_string()
                .contains("another rmp-eval run is measuring on eth1"),
            "{e}"
        );
        assert!(
            nic_exclusive(&h, "eth2", "net1-if4").unwrap().is_some(),
            "another NIC is free"
        );
        assert!(
            nic_exclusive(&h, "eth1", "net2-if3").unwrap().is_some(),
            "the eth1 of another network namespace is free"
        );
        drop(first);
        assert!(nic_exclusive(&h, "eth1", "net1-if3").unwrap().is_some());
    }
}

//! Steering a run's frames to the queues asked for, and putting the interface back.
//!
//! Transmit: AF_PACKET with PACKET_QDISC_BYPASS picks the queue through XPS for the sending CPU (without an XPS map
//! the kernel hashes the CPU number over the queues), so the sender's CPU is added to queue N's `xps_cpus` and
//! taken out of every other queue's. Receive: an ethtool flow rule sends the probe's EtherType (UDP: source port
//! 7) to queue N; a driver without flow rules is refused by name. Every old value is recorded under
//! /run/rmp-eval/queues/ before it changes (the rule right after the driver gives its location), put back on drop,
//! and a record a killed run left is applied by the next run (`restore_leftovers`).

use super::{QueueReport, delta};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::machine::net::{self, Keyed, xps_path};
use crate::measure::nic::frame;
use crate::measure::spec::{Mode, NicSpec};
use crate::parse::mask;
use crate::sys::ethtool_query::{self, Flow};
use crate::sys::{ifname, process};

/// Where the old values wait until they are put back (tmpfs: a reboot resets queues and rules too).
pub(crate) const RECORD_DIR: &str = "/run/rmp-eval/queues";

/// The queues of one run; restored on drop.
pub(crate) struct Steering {
    host: Host,
    nic: String,
    /// The record's name: the interface's namespace and index (`machine::net::nic_key`).
    key: String,
    /// XPS masks changed: (queue, the text read before).
    xps: Vec<(usize, String)>,
    /// The flow rule's location.
    rule: Option<u32>,
    txq: Option<u16>,
    rxq: Option<u16>,
    queues: (usize, usize),
    /// The driver's statistics before the first frame (None: it has none).
    before: Option<Vec<(String, u64)>>,
}

fn record_path(key: &str) -> String {
    format!("{RECORD_DIR}/{key}")
}

/// The driver's name, for messages ("the driver veth").
fn driver(nic: &str) -> String {
    ethtool_query::driver(nic)
        .map(|(d, _)| d)
        .unwrap_or_else(|_| "unknown".into())
}

impl Steering {
    /// Steers as `spec` asks (nothing when it asks for no queue); `cpu` is the sender's CPU, `key` the interface's
    /// (`machine::net::nic_key`).
    pub(crate) fn apply(
        host: &Host,
        spec: &NicSpec,
        cpu: usize,
        key: &str,
    ) -> Result<Option<Steering>> {
        let nic = spec.name.as_str();
        if spec.txq.is_none() && spec.rxq.is_none() {
            return Ok(None);
        }
        ifname::validate(nic)?;
        if let Some(pid) = owner(host, key) {
            return Err(Error::failed(format!(
                "another run (pid {pid}) is steering the queues of {nic}: wait until it ends"
            )));
        }
        let queues = crate::machine::net::queue_counts(host, nic).unwrap_or((1, 1));
        let mut s = Steering {
            host: host.clone(),
            nic: nic.to_string(),
            key: key.to_string(),
            xps: Vec::new(),
            rule: None,
            txq: spec.txq,
            rxq: spec.rxq,
            queues,
            before: ethtool_query::stats(nic).ok(),
        };
        if let Some(q) = spec.rxq {
            s.steer_rx(spec.mode, q)?;
        }
        if let Some(q) = spec.txq
            && queues.0 > 1
        {
            s.steer_tx(usize::from(q), cpu)?;
        }
        Ok(Some(s))
    }

    fn steer_rx(&mut self, mode: Mode, q: u16) -> Result<()> {
        let flow = match mode {
            Mode::Udp => Flow::UdpFrom(7),
            m => Flow::Ether(frame::ethertype(m)),
        };
        let loc = ethtool_query::insert_rule(&self.nic, flow, u32::from(q)).map_err(|e| {
            let nic = &self.nic;
            if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
                Error::failed(format!(
                    "--rxq {q}: {nic}'s driver ({}) has no receive flow rules (ethtool -N): the receive queue \
                     cannot be chosen on {nic}",
                    driver(nic)
                ))
            } else if e.raw_os_error() == Some(libc::ENOSPC) {
                // qemu's igb, with ntuple-filters "off [fixed]", answers so: no table, or a full one.
                Error::failed(format!(
                    "--rxq {q}: {nic}'s driver ({}) has no free receive flow rule (ENOSPC): its rule table is \
                     full or it offers none (`ethtool -k {nic}` shows ntuple-filters, `ethtool -n {nic}` the rules)",
                    driver(nic)
                ))
            } else {
                Error::sys(format!("--rxq {q}: a flow rule on {nic} ({})", driver(nic)), e)
            }
        })?;
        self.rule = Some(loc);
        self.record()
    }

    fn steer_tx(&mut self, q: usize, cpu: usize) -> Result<()> {
        let mut plan = Vec::new();
        for k in 0..self.queues.0 {
            let path = xps_path(&self.nic, k);
            let old = self.host.read_trimmed(&path).map_err(|e| {
                Error::failed(format!(
                    "--txq {q}: cannot read {path} ({}): this kernel or driver has no XPS",
                    e.reason()
                ))
            })?;
            let mut cpus = mask::parse(&old).map_err(|e| Error::failed(format!("{path}: {e}")))?;
            let had = cpus.contains(&cpu);
            if k == q && !had {
                cpus.push(cpu);
            } else if k != q && had {
                cpus.retain(|&c| c != cpu);
            } else {
                continue;
            }
            let new = mask::format(
                &cpus,
                old.chars().filter(char::is_ascii_hexdigit).count() * 4,
            );
            plan.push((k, old, new));
        }
        // Recorded before the first write: a crash in between leaves a record of values not yet changed.
        self.xps = plan.iter().map(|(k, old, _)| (*k, old.clone())).collect();
        self.record()?;
        for (k, _, new) in &plan {
            let path = xps_path(&self.nic, *k);
            self.host
                .write_value(&path, new)
                .map_err(|e| Error::failed(format!("--txq {q}: writing {path}: {}", e.reason())))?;
        }
        Ok(())
    }

    fn record(&self) -> Result<()> {
        let mut text = format!("pid {}\n", std::process::id());
        for (k, old) in &self.xps {
            text.push_str(&format!("xps {k} {old}\n"));
        }
        if let Some(l) = self.rule {
            text.push_str(&format!("rule {l}\n"));
        }
        self.host.create_dir_all(RECORD_DIR)?;
        self.host
            .write_atomic(&record_path(&self.key), text.as_bytes(), None)?;
        Ok(())
    }

    /// What the driver's per-queue counters say of the run: `sent` frames out, `received` replies in.
    pub(crate) fn report(&self, sent: u64, received: u64) -> QueueReport {
        let mut r = QueueReport {
            txq: self.txq,
            rxq: self.rxq,
            ..QueueReport::default()
        };
        let after = ethtool_query::stats(&self.nic).ok();
        let (Some(b), Some(a)) = (&self.before, &after) else {
            r.notes.push(format!(
                "{}'s driver ({}) has no statistics",
                self.nic,
                driver(&self.nic)
            ));
            return r;
        };
        for (want, dir, n, moved, slot) in [
            (self.txq, "tx", self.queues.0, sent, &mut r.tx),
            (self.rxq, "rx", self.queues.1, received, &mut r.rx),
        ] {
            let Some(q) = want else { continue };
            *slot = delta(b, a, dir, usize::from(q), n, moved);
            if slot.is_none() {
                r.notes.push(format!(
                    "not verified: {}'s driver ({}) has no per-queue {dir} packet counter",
                    self.nic,
                    driver(&self.nic)
                ));
            }
        }
        r
    }
}

impl Drop for Steering {
    fn drop(&mut self) {
        let mut ok = true;
        for (k, old) in &self.xps {
            ok &= self.host.write_value(&xps_path(&self.nic, *k), old).is_ok();
        }
        if let Some(l) = self.rule {
            ok &= ethtool_query::delete_rule(&self.nic, l).is_ok();
        }
        // Kept when something could not be put back: the next run tries again.
        if ok {
            let _ = self.host.remove_file(&record_path(&self.key));
        }
    }
}

/// The live run whose record steers the queues of the interface `key` names, if any.
fn owner(host: &Host, key: &str) -> Option<i32> {
    let text = host.read(&record_path(key)).ok()?;
    let pid: i32 = text
        .lines()
        .next()?
        .strip_prefix("pid ")?
        .trim()
        .parse()
        .ok()?;
    (pid > 0 && !process::is_gone(pid)).then_some(pid)
}

/// Puts back what a run that did not end (kill -9) left steered, from its records; one line per record. A record
/// whose run is still alive (another run on another NIC) is that run's to put back, and one of another network
/// namespace is for a run there.
pub(crate) fn restore_leftovers(host: &Host) -> Vec<String> {
    restore_keyed(host, |key| net::keyed(host, key))
}

/// `restore_leftovers` with the interface each record's key names found by `keyed`.
fn restore_keyed(host: &Host, keyed: impl Fn(&str) -> Keyed) -> Vec<String> {
    let mut said = Vec::new();
    for key in host.list(RECORD_DIR).unwrap_or_default() {
        let path = record_path(&key);
        if owner(host, &key).is_some() {
            continue;
        }
        let nic = match keyed(&key) {
            Keyed::Here(nic) => nic,
            Keyed::Elsewhere => continue,
            Keyed::Gone => {
                let _ = host.remove_file(&path);
                said.push(format!(
                    "dropped the queue record {path}: its interface is gone"
                ));
                continue;
            }
            Keyed::Unreadable => {
                let _ = host.remove_file(&path);
                said.push(format!("dropped an unreadable queue record {path}"));
                continue;
            }
        };
        let text = host.read(&path).unwrap_or_default();
        let mut failed = Vec::new();
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            let done = match w[..] {
                ["xps", k, old] => k
                    .parse::<usize>()
                    .ok()
                    .filter(|_| mask::parse(old).is_ok())
                    .is_some_and(|k| host.write_value(&xps_path(&nic, k), old).is_ok()),
                ["pid", _] => true,
                ["rule", l] => l
                    .parse::<u32>()
                    .is_ok_and(|l| ethtool_query::delete_rule(&nic, l).is_ok()),
                _ => false,
            };
            if !done {
                failed.push(line.to_string());
            }
        }
        let _ = host.remove_file(&path);
        said.push(if failed.is_empty() {
            format!("restored the queue steering of {nic} that an earlier run left changed")
        } else {
            format!(
                "could not restore all of the queue steering of {nic} an earlier run left ({}); record dropped",
                failed.join("; ")
            )
        });
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_runs_xps_record_is_put_back_and_consumed() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::with_root(dir.path());
        host.create_dir_all("/sys/class/net/eth9/queues/tx-1")
            .unwrap();
        host.write_atomic(&xps_path("eth9", 1), b"2\n", None)
            .unwrap();
        host.create_dir_all(RECORD_DIR).unwrap();
        host.write_atomic(&record_path("net1-if9"), b"xps 1 0\n", None)
            .unwrap();
        host.write_atomic(&record_path("eth9"), b"xps 1 0\n", None)
            .unwrap();
        // Another namespace's record: left for a run there, even with an interface of the same name here.
        host.write_atomic(&record_path("net2-if9"), b"xps 1 1\n", None)
            .unwrap();
        let keyed = |key: &str| match net::parse_key(key) {
            Some((1, 9)) => Keyed::Here("eth9".into()),
            Some(_) => Keyed::Elsewhere,
            None => Keyed::Unreadable,
        };
        let said = restore_keyed(&host, keyed);
        assert_eq!(host.read_trimmed(&xps_path("eth9", 1)).unwrap(), "0");
        assert!(
            said.iter()
                .any(|s| s.contains("restored the queue steering of eth9")),
            "{said:?}"
        );
        assert!(said.iter().any(|s| s.contains("unreadable")), "{said:?}");
        assert_eq!(host.list(RECORD_DIR).unwrap(), ["net2-if9"]);
        // A record whose run is alive (this process, say) is that run's: left as it is.
        let mine = format!("pid {}\nxps 1 0\n", std::process::id());
        host.write_atomic(&record_path("net1-if9"), mine.as_bytes(), None)
            .unwrap();
        host.write_atomic(&xps_path("eth9", 1), b"2\n", None)
            .unwrap();
        assert!(restore_keyed(&host, keyed).is_empty());
        assert_eq!(host.read_trimmed(&xps_path("eth9", 1)).unwrap(), "2");
        assert_eq!(owner(&host, "net1-if9"), Some(std::process::id() as i32));
    }
}

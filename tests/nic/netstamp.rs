//! A NIC run and its `reflect` peer leave the kernel's `netstamp_needed_key` alone. A socket asking for software
//! receive stamps (SO_TIMESTAMPING with SOF_TIMESTAMPING_RX_SOFTWARE) is the key's first user or its last one
//! closing, and each switch runs `netstamp_clear` from a kworker, which patches kernel text with IPIs to every CPU,
//! the RT core included. Counted with the `workqueue_execute_start` event, filtered on that work function's address
//! (/proc/kallsyms), in a tracefs instance of this test's own (this host's kernel has no kprobe events). The test
//! holds the live machine alone, so no other rmp-eval test opens or closes such a socket meanwhile; a host process
//! that keeps the key on would hide the old behaviour (the count stays 0 either way) but cannot fail the test.

use std::fs;
use std::path::PathBuf;

use crate::common;
use common::nic::*;

const EVENT: &str = "events/workqueue/workqueue_execute_start";

/// The instance, removed on drop.
struct Instance(PathBuf);

impl Instance {
    fn counting_netstamp_clear() -> Result<Instance, String> {
        let kallsyms =
            fs::read_to_string("/proc/kallsyms").map_err(|e| format!("/proc/kallsyms: {e}"))?;
        let addr = kallsyms
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.len() >= 3 && w[2] == "netstamp_clear")
            .map(|w| w[0].to_string())
            .filter(|a| !a.trim_start_matches('0').is_empty())
            .ok_or("no address for netstamp_clear in /proc/kallsyms")?;
        let root = PathBuf::from("/sys/kernel/tracing/instances");
        if !root.is_dir() {
            return Err("no tracefs instances at /sys/kernel/tracing".into());
        }
        let i = Instance(root.join(format!("rmp-eval-netstamp-{}", std::process::id())));
        let event = i.0.join(EVENT);
        fs::create_dir(&i.0)
            .and_then(|()| fs::write(event.join("filter"), format!("function == 0x{addr}")))
            .and_then(|()| fs::write(event.join("enable"), "1"))
            .map_err(|e| format!("tracing workqueue_execute_start in an instance: {e}"))?;
        Ok(i)
    }

    /// The times netstamp_clear started so far.
    fn hits(&self) -> usize {
        let trace = fs::read_to_string(self.0.join("trace")).unwrap();
        trace
            .lines()
            .filter(|l| l.contains("function netstamp_clear"))
            .count()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = fs::write(self.0.join(EVENT).join("enable"), "0");
        let _ = fs::remove_dir(&self.0);
    }
}

#[test]
fn a_nic_run_and_its_reflector_never_switch_the_netstamp_key() {
    let test = "a_nic_run_and_its_reflector_never_switch_the_netstamp_key";
    if !common::require_root(test) {
        return;
    }
    let _live = common::lock::LIVE.alone();
    let _tracefs = common::tracefs::mounted();
    let probe = match Instance::counting_netstamp_clear() {
        Ok(p) => p,
        Err(why) => {
            common::cannot_run(test, &why);
            return;
        }
    };
    let v = Veth::new();
    let r = v.reflect(&[]);
    let o = run_nic(&v.host, &["--iterations", "200", "--json"]);
    let (code, _, err) = r.stop();
    let hits = probe.hits();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(code, 0, "reflect: {err}");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    // Replies came back stamped: the receive path the stamps now come from works.
    assert!(j["rtt"]["count"].as_u64().unwrap() > 0, "{}", j["rtt"]);
    assert_eq!(
        hits, 0,
        "netstamp_clear ran {hits} times during a NIC run and a reflect: a socket switched the netstamp key"
    );
}

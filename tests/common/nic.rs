//! Shared by the NIC tests (tests/nic/, and runs with --nic elsewhere): veth pairs with one end in a private network
//! namespace (a "drive" on the other side of the cable), the reflector, and the tools no one here wrote. Every name
//! carries the `nc` prefix and a unique suffix (the pid and a sequence number: the tests are threads of one
//! process); everything is removed on drop, also when a test fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_rmp-eval");

fn ip(args: &[&str]) -> Output {
    Command::new("ip")
        .args(args)
        .output()
        .expect("ip (iproute2) runs")
}

fn ip_ok(args: &[&str]) {
    let o = ip(args);
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `host` stays in our namespace; `peer` lives in namespace `ns`.
pub struct Veth {
    pub host: String,
    pub peer: String,
    pub ns: String,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

impl Veth {
    pub fn new() -> Veth {
        Veth::with_queues(1)
    }

    /// A pair whose ends have `n` transmit and `n` receive queues each.
    pub fn with_queues(n: usize) -> Veth {
        let q = n.to_string();
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}{}", std::process::id() % 100_000, n);
        let v = Veth {
            host: format!("ncA{id}"),
            peer: format!("ncB{id}"),
            ns: format!("nc-test-{id}"),
        };
        // Leftovers of a killed earlier run with the same pid would make `add` fail: clear them first.
        let _ = ip(&["link", "del", &v.host]);
        let _ = ip(&["netns", "del", &v.ns]);
        ip_ok(&["netns", "add", &v.ns]);
        ip_ok(&[
            "link",
            "add",
            &v.host,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            &v.peer,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ]);
        ip_ok(&["link", "set", &v.peer, "netns", &v.ns]);
        ip_ok(&["link", "set", &v.host, "up"]);
        ip_ok(&["-n", &v.ns, "link", "set", &v.peer, "up"]);
        v.wait_up();
        v
    }

    /// Frames sent before the qdisc is up are dropped: wait until both ends say so.
    fn wait_up(&self) {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            let a = std::fs::read_to_string(format!("/sys/class/net/{}/operstate", self.host))
                .unwrap_or_default();
            let b = ip(&["-n", &self.ns, "-o", "link", "show", &self.peer]);
            if a.trim() == "up" && String::from_utf8_lossy(&b.stdout).contains("state UP") {
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("veth {} did not come up", self.host);
    }

    /// A command run inside the peer's namespace.
    pub fn in_ns(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns, program]);
        c
    }

    /// `rmp-eval reflect` on the peer end, returned once its socket is bound (it has said so on stdout).
    pub fn reflect(&self, extra: &[&str]) -> Reflector {
        let mut c = self.in_ns(BIN);
        c.args(["reflect", "--nic", &self.peer]).args(extra);
        Reflector::start(c, "reflect: answering")
    }

    /// `reflect` as above at SCHED_FIFO `prio` (chrt), for tests whose bounds a reflector stalled for a few hundred
    /// ms by a loaded machine would break (frames still in flight at a checkpoint are counted as lost).
    pub fn reflect_fifo(&self, prio: u8) -> Reflector {
        let mut c = self.in_ns("chrt");
        c.args(["-f", &prio.to_string(), BIN, "reflect", "--nic", &self.peer]);
        Reflector::start(c, "reflect: answering")
    }

    /// tests/nic_faulty_reflector.py (EtherCAT with injected faults) on the peer end, once bound.
    pub fn faulty(&self, extra: &[&str]) -> Reflector {
        let mut c = self.in_ns("python3");
        c.arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/nic_faulty_reflector.py"
        ))
        .arg(&self.peer)
        .args(extra);
        Reflector::start(c, "ready")
    }

    pub fn host_flags(&self) -> String {
        std::fs::read_to_string(format!("/sys/class/net/{}/flags", self.host)).unwrap()
    }

    pub fn peer_flags(&self) -> String {
        let o = self
            .in_ns("cat")
            .arg(format!("/sys/class/net/{}/flags", self.peer))
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.host]);
        let _ = ip(&["netns", "del", &self.ns]);
    }
}

/// A running reflector; killed on drop if the test did not stop it.
pub struct Reflector {
    child: Option<Child>,
    out: Option<std::io::BufReader<std::process::ChildStdout>>,
    first: String,
}

impl Reflector {
    /// Starts `c` (stdout and stderr piped) and waits for its first line, which must start with `ready`.
    pub fn start(mut c: Command, ready: &str) -> Reflector {
        use std::io::BufRead;
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().expect("reflector starts");
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        let _ = out.read_line(&mut first);
        if !first.starts_with(ready) {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("reflector did not start: {first} {}", text(&o.stderr));
        }
        Reflector {
            child: Some(child),
            out: Some(out),
            first,
        }
    }

    /// True while it runs.
    pub fn alive(&mut self) -> bool {
        self.child.as_mut().unwrap().try_wait().unwrap().is_none()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// Sends `sig` to the reflector itself (not to `ip netns exec`, which execs it: same pid).
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// Stops it with SIGINT and returns its exit code and output.
    pub fn stop(self) -> (i32, String, String) {
        self.signal(libc::SIGINT);
        self.wait()
    }

    /// Waits for it to end: exit code, all of stdout, stderr.
    pub fn wait(mut self) -> (i32, String, String) {
        use std::io::Read;
        let mut out = std::mem::take(&mut self.first);
        let _ = self.out.take().unwrap().read_to_string(&mut out);
        let o = self.child.take().unwrap().wait_with_output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            out,
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }
}

impl Drop for Reflector {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The venv that tests/install-deps.sh fills with pysoem (RMP_EVAL_PYSOEM_VENV overrides).
pub fn pysoem_python() -> Option<PathBuf> {
    let venv = std::env::var_os("RMP_EVAL_PYSOEM_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/rmp-eval-tests/pysoem-venv"));
    let py = venv.join("bin/python");
    if py.exists() {
        return Some(py);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI: {} missing; tests/install-deps.sh installs it",
        py.display()
    );
    eprintln!(
        "pysoem venv missing at {}: run tests/install-deps.sh",
        venv.display()
    );
    None
}

/// A temp directory with the nc prefix, removed on drop.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("nc-test-")
        .tempdir()
        .unwrap()
}

/// `rmp-eval run --nic IF --no-config ARGS…` saving into the tests' results directory, to run or spawn.
pub fn nic_run(iface: &str, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(["run", "--nic", iface, "--no-config"])
        .args(args)
        .env(super::RESULTS_ENV, super::results_dir());
    c
}

/// Has `cmd` run in a mount namespace of its own with `own` bind-mounted on `dir`: the same path, only this
/// test's files in it. For the records of a killed run, which every NIC run puts back on any interface it finds
/// them for: in the machine's own directory another test's run (in this process or another) could take a record
/// first and say so instead of the run the test watches.
pub fn with_records_of_its_own<'a>(
    cmd: &'a mut Command,
    dir: &'static str,
    own: &Path,
) -> &'a mut Command {
    std::fs::create_dir_all(dir).unwrap();
    let src = own.to_path_buf();
    // SAFETY: between fork and exec only unshare(2) and mount(2), with paths made before the fork.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, move || {
            use nix::mount::{MsFlags, mount};
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)?;
            mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                None::<&str>,
            )?;
            mount(
                Some(&src),
                dir,
                None::<&str>,
                MsFlags::MS_BIND,
                None::<&str>,
            )?;
            Ok(())
        })
    }
}

/// `nic_run`'s output; stdout is a pipe.
pub fn run_nic(iface: &str, extra: &[&str]) -> Output {
    nic_run(iface, extra).output().unwrap()
}

/// The frames a NIC run's result says it sent: one at each of the sender's wakeups, the first (which only starts
/// its clock) too. `--iterations N` spans N periods, missed ones included, so a loaded machine sends fewer than N + 1.
pub fn frames_sent(result: &serde_json::Value) -> u64 {
    assert_eq!(result["series"][0]["label"], "Sender", "{result}");
    result["series"][0]["count"].as_u64().unwrap() + 1
}

/// `run_nic` with the result also written as JSON (`--output`): the report on stdout, the result beside it.
pub fn run_nic_with_result(iface: &str, extra: &[&str]) -> (Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("result.json");
    let mut args = extra.to_vec();
    args.extend(["--output", file.to_str().unwrap()]);
    let o = run_nic(iface, &args);
    let j = std::fs::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("no result: {}", text(&o.stderr)));
    (o, j)
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A segment with several ends: a bridge in its own namespace with `host` (in our namespace) and `n` more veth
/// ends in that namespace (`ends`), each a port of the bridge. Removed on drop.
pub struct Bridge {
    pub host: String,
    pub ns: String,
    pub ends: Vec<String>,
}

impl Bridge {
    pub fn new(n: usize) -> Bridge {
        let k = SEQ.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}{}", std::process::id() % 100_000, k);
        let b = Bridge {
            host: format!("ncH{id}"),
            ns: format!("nc-br-{id}"),
            ends: (0..n).map(|i| format!("ncE{i}x{id}")).collect(),
        };
        let _ = ip(&["link", "del", &b.host]);
        let _ = ip(&["netns", "del", &b.ns]);
        ip_ok(&["netns", "add", &b.ns]);
        let ns = |args: &[&str]| {
            let mut v = vec!["-n", b.ns.as_str()];
            v.extend_from_slice(args);
            ip_ok(&v);
        };
        ns(&["link", "add", "br0", "type", "bridge"]);
        ns(&["link", "set", "br0", "up"]);
        // The peer is made in the bridge's namespace: a name in ours would be shared by every bridge being made.
        ip_ok(&[
            "link", "add", &b.host, "type", "veth", "peer", "name", "hp", "netns", &b.ns,
        ]);
        ns(&["link", "set", "hp", "master", "br0", "up"]);
        for (i, e) in b.ends.iter().enumerate() {
            let port = format!("p{i}");
            ns(&["link", "add", e, "type", "veth", "peer", "name", &port]);
            ns(&["link", "set", &port, "master", "br0", "up"]);
            ns(&["link", "set", e, "up"]);
        }
        ip_ok(&["link", "set", &b.host, "up"]);
        // Ports forward once the bridge has them up (no STP here); wait for the host end like Veth does.
        let t = Instant::now();
        while std::fs::read_to_string(format!("/sys/class/net/{}/operstate", b.host))
            .unwrap_or_default()
            .trim()
            != "up"
        {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "bridge did not come up"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        b
    }

    /// `rmp-eval reflect` on end `i`.
    pub fn reflect(&self, i: usize, extra: &[&str]) -> Reflector {
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &self.ns,
            BIN,
            "reflect",
            "--nic",
            &self.ends[i],
        ])
        .args(extra);
        Reflector::start(c, "reflect: answering")
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.host]);
        let _ = ip(&["netns", "del", &self.ns]);
    }
}

/// The name a NIC run gives its lock and records for `iface` of this process's network namespace (src/machine/net.rs:
/// `nic_key`): "net{namespace inode}-if{index}".
pub fn key(iface: &str) -> String {
    let ns = std::fs::read_link("/proc/self/ns/net").unwrap();
    let ns = ns.to_string_lossy();
    let inode = ns.trim_start_matches("net:[").trim_end_matches(']');
    let idx = std::fs::read_to_string(format!("/sys/class/net/{iface}/ifindex")).unwrap();
    format!("net{inode}-if{}", idx.trim())
}

/// The XPS masks of `iface`'s four transmit queues (the pairs of `Veth::with_queues(4)`), as sysfs gives them.
pub fn xps(iface: &str) -> Vec<String> {
    (0..4)
        .map(|q| {
            std::fs::read_to_string(format!("/sys/class/net/{iface}/queues/tx-{q}/xps_cpus"))
                .unwrap()
        })
        .collect()
}

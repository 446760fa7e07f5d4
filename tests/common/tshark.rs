//! tshark, the independent peer that decodes what went over the wire: is it there, a capture on an interface
//! started and ready, and the fields of the frames it captured.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::nic::{tempdir, text};

/// True when tshark is installed (tests/install-deps.sh installs it).
pub fn tshark() -> bool {
    Path::new("/usr/bin/tshark").exists()
}

/// The EtherType of the sentinel frames (IEEE 802 local experimental 1): nothing under test sends or answers it.
const SENTINEL_TYPE: &str = "0x88b5";

/// tshark capturing on an interface into a pcap, whole from the first frame on: started, and its capture seen
/// to hold a sentinel frame sent after "Capturing on" (libpcap may still drop what arrives while it installs its
/// filter). It counts the frames it captured (sentinels apart) from its own decoded output, and leaves the
/// interface's promiscuous mode alone (-p: a veth hands its capture every frame anyway), so that a test sees the
/// flags the program under test left.
pub struct Capture {
    child: Option<Child>,
    pub path: PathBuf,
    count: usize,
    seen: std::sync::Arc<Seen>,
    _dir: tempfile::TempDir,
}

#[derive(Default)]
struct Seen {
    frames: std::sync::atomic::AtomicUsize,
    sentinels: std::sync::atomic::AtomicUsize,
    /// Set (under its lock) before tshark is reaped: its pid may then be another process's.
    reaped: std::sync::Mutex<bool>,
}

impl Capture {
    /// Capture on `iface` until `count` frames through `filter` (sentinels not counted) are captured.
    pub fn start(iface: &str, filter: &str, count: usize) -> Capture {
        Capture::start_at(None, iface, filter, count)
    }

    /// `start` on an interface in network namespace `ns`.
    pub fn start_in(ns: &str, iface: &str, filter: &str, count: usize) -> Capture {
        Capture::start_at(Some(ns), iface, filter, count)
    }

    fn start_at(ns: Option<&str>, iface: &str, filter: &str, count: usize) -> Capture {
        use std::io::{BufRead, BufReader};
        use std::sync::atomic::Ordering;
        let dir = tempdir();
        let path = dir.path().join("cap.pcap");
        let filter = format!("({filter}) or ether proto {SENTINEL_TYPE}");
        let print = ["-p", "-l", "-n", "-P", "-T", "fields", "-e", "eth.type"];
        let mut child = start_tshark(in_ns(ns, "tshark"), iface, &filter, &print, &path);
        let seen = std::sync::Arc::new(Seen::default());
        let out = child.stdout.take().unwrap();
        let s = seen.clone();
        let pid = child.id() as i32;
        // As `-c count` would, but sentinels apart: stopped once `count` frames are in.
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if l.trim() == SENTINEL_TYPE {
                    s.sentinels.fetch_add(1, Ordering::SeqCst);
                } else if s.frames.fetch_add(1, Ordering::SeqCst) + 1 == count {
                    let reaped = s.reaped.lock().unwrap();
                    if !*reaped {
                        // SAFETY: kill(2) on our own child, not reaped while the lock is held.
                        unsafe { libc::kill(pid, libc::SIGINT) };
                    }
                }
            }
        });
        let t = Instant::now();
        while seen.sentinels.load(Ordering::SeqCst) == 0 {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "tshark on {iface} never captured a sentinel frame"
            );
            send_sentinel(ns, iface);
            std::thread::sleep(Duration::from_millis(50));
        }
        Capture {
            child: Some(child),
            path,
            count,
            seen,
            _dir: dir,
        }
    }

    /// Waits (up to 10 s) for the capture to hold its frames, ends it, then decodes it with `tshark -T fields -e
    /// …`, one line per frame (sentinels left out).
    pub fn fields(mut self, fields: &[&str], extra: &[&str]) -> Vec<String> {
        self.wait();
        let mut cmd = Command::new("tshark");
        cmd.arg("-r").arg(&self.path).args(extra).args([
            "-Y",
            &not_sentinel(),
            "-T",
            "fields",
            "-E",
            "separator=;",
        ]);
        for f in fields {
            cmd.args(["-e", f]);
        }
        let o = cmd.output().unwrap();
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .take(self.count)
            .map(str::to_string)
            .collect()
    }
}

/// The display filter that leaves the sentinels out.
fn not_sentinel() -> String {
    format!("not eth.type == {SENTINEL_TYPE}")
}

/// `program`, in network namespace `ns` when there is one.
fn in_ns(ns: Option<&str>, program: &str) -> Command {
    match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, program]);
            c
        }
        None => Command::new(program),
    }
}

/// One broadcast sentinel frame out of `iface` (Python's AF_PACKET socket: the tests hold no raw socket code).
fn send_sentinel(ns: Option<&str>, iface: &str) {
    const SEND: &str = "import socket,sys\n\
        s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\n\
        s.bind((sys.argv[1],0))\n\
        s.send(bytes.fromhex('ffffffffffff02000000b5e088b5')+b'rmp-eval test sentinel'.ljust(46,b'.'))\n";
    let o = in_ns(ns, "python3")
        .args(["-c", SEND, iface])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "sentinel on {iface}: {}",
        text(&o.stderr)
    );
}

impl Capture {
    /// Waits up to 10 s for the capture to hold its frames, then ends it (SIGINT: tshark closes its file).
    fn wait(&mut self) {
        let mut c = self.child.take().unwrap();
        let t = Instant::now();
        while self.seen.frames.load(std::sync::atomic::Ordering::SeqCst) < self.count
            && t.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        *self.seen.reaped.lock().unwrap() = true;
        // SAFETY: kill(2) on our own child's pid, not yet waited for.
        unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
        let t = Instant::now();
        while c.try_wait().unwrap().is_none() {
            if t.elapsed() > Duration::from_secs(10) {
                let _ = c.kill();
                let _ = c.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Each captured frame's bytes and capture stamp (ns since the epoch), once the capture ended (`tshark -T json
    /// -x`: the stamp as tshark prints it, the bytes as captured; sentinels left out).
    pub fn frames(mut self) -> Vec<(u64, Vec<u8>)> {
        self.wait();
        let o = Command::new("tshark")
            .arg("-r")
            .arg(&self.path)
            .args(["-Y", &not_sentinel(), "-T", "json", "-x"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let l = &p["_source"]["layers"];
                let t = l["frame"]["frame.time_epoch"].as_str()?;
                let raw = l["frame_raw"][0].as_str()?;
                let bytes = (0..raw.len() / 2)
                    .map(|i| u8::from_str_radix(&raw[2 * i..2 * i + 2], 16).unwrap())
                    .collect();
                Some((epoch_ns(t), bytes))
            })
            .take(self.count)
            .collect()
    }
}

/// "secs.fraction" (frame.time_epoch) in ns.
fn epoch_ns(s: &str) -> u64 {
    let (sec, frac) = s.split_once('.').unwrap_or((s, "0"));
    let frac = format!("{frac:0<9}");
    sec.parse::<u64>().unwrap_or(0) * 1_000_000_000 + frac[..9].parse::<u64>().unwrap_or(0)
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// tshark on `iface` for `secs` seconds into a pcap in `dir`; returns once it captures.
pub fn capture_for(iface: &str, filter: &str, secs: u32, dir: &Path) -> (Child, PathBuf) {
    let path = dir.join("cap.pcap");
    let child = start_tshark(
        Command::new("tshark"),
        iface,
        filter,
        &["-a", &format!("duration:{secs}")],
        &path,
    );
    (child, path)
}

/// tshark capturing on `iface` into `path` (`opts`: when it stops, or what it prints: with -P its stdout is
/// piped), returned once it says "Capturing on"; its stderr drained from then on, so that it never blocks on a full
/// pipe.
fn start_tshark(
    mut tshark: Command,
    iface: &str,
    filter: &str,
    opts: &[&str],
    path: &Path,
) -> Child {
    use std::io::{BufRead, BufReader};
    let mut child = tshark
        .args(["-i", iface, "-f", filter])
        .args(opts)
        .arg("-w")
        .arg(path)
        .stdout(if opts.contains(&"-P") {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .spawn()
        .expect("tshark runs (tests/install-deps.sh installs it)");
    let err = child.stderr.take().unwrap();
    let mut lines = BufReader::new(err).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.contains("Capturing on") => break,
            Some(Ok(_)) => continue,
            _ => panic!("tshark did not start capturing on {iface}"),
        }
    }
    std::thread::spawn(move || for _ in lines {});
    child
}

/// `tshark -r PCAP -T fields -e …`, one line per frame.
pub fn read_fields(pcap: &Path, fields: &[&str]) -> Vec<String> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(pcap)
        .args(["-T", "fields", "-E", "separator=;"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().unwrap();
    text(&o.stdout).lines().map(str::to_string).collect()
}

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

/// tshark capturing on an interface into a pcap, started and ready (it said "Capturing on").
pub struct Capture {
    child: Option<Child>,
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Capture {
    pub fn start(iface: &str, filter: &str, count: usize) -> Capture {
        Capture::start_at(Command::new("tshark"), iface, filter, count)
    }

    /// `start` on an interface in network namespace `ns`.
    pub fn start_in(ns: &str, iface: &str, filter: &str, count: usize) -> Capture {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, "tshark"]);
        Capture::start_at(c, iface, filter, count)
    }

    fn start_at(tshark: Command, iface: &str, filter: &str, count: usize) -> Capture {
        let dir = tempdir();
        let path = dir.path().join("cap.pcap");
        let child = start_tshark(tshark, iface, filter, &["-c", &count.to_string()], &path);
        Capture {
            child: Some(child),
            path,
            _dir: dir,
        }
    }

    /// Waits (up to 10 s) for the capture to end, then decodes it with `tshark -T fields -e …`, one line per frame.
    pub fn fields(mut self, fields: &[&str], extra: &[&str]) -> Vec<String> {
        self.wait();
        let mut cmd = Command::new("tshark");
        cmd.arg("-r")
            .arg(&self.path)
            .args(extra)
            .args(["-T", "fields", "-E", "separator=;"]);
        for f in fields {
            cmd.args(["-e", f]);
        }
        let o = cmd.output().unwrap();
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Capture {
    /// Waits up to 10 s for the capture to end (then ends it).
    fn wait(&mut self) {
        let mut c = self.child.take().unwrap();
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
    /// -x`: the stamp as tshark prints it, the bytes as captured).
    pub fn frames(mut self) -> Vec<(u64, Vec<u8>)> {
        self.wait();
        let o = Command::new("tshark")
            .arg("-r")
            .arg(&self.path)
            .args(["-T", "json", "-x"])
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

/// tshark capturing on `iface` into `path` (`stop`: when it stops), returned once it says "Capturing on"; its
/// stderr drained from then on, so that it never blocks on a full pipe.
fn start_tshark(
    mut tshark: Command,
    iface: &str,
    filter: &str,
    stop: &[&str],
    path: &Path,
) -> Child {
    use std::io::{BufRead, BufReader};
    let mut child = tshark
        .args(["-i", iface, "-f", filter])
        .args(stop)
        .arg("-w")
        .arg(path)
        .stdout(Stdio::null())
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

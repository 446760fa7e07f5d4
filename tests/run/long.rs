//! Long-run machinery through the binary: the HdrHistogram interval log read back by HdrHistogram's Python log
//! reader, SIGUSR1 and `q`/`r` on a terminal (a pty), and the checkpoint a `kill -9` leaves behind.
//! No timing thresholds: only counts, keys and what the files hold.

use crate::common;
use common::run as run_common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use run_common::*;
use serde_json::Value;

/// Reads every interval with hdrh's HistogramLogReader; prints one JSON line per interval: tag, count, max.
const READ_LOG: &str = r#"
import sys, json
from hdrh.log import HistogramLogReader
from hdrh.histogram import HdrHistogram
r = HistogramLogReader(sys.argv[1], HdrHistogram(1, 60_000_000_000, 3))
while True:
    h = r.get_next_interval_histogram()
    if h is None:
        break
    print(json.dumps({"tag": h.get_tag(), "count": h.get_total_count(), "max": h.get_max_value()}))
"#;

#[test]
fn interval_log_reads_back_in_python_and_sums_to_the_result() {
    if !common::require_root("interval_log_reads_back_in_python_and_sums_to_the_result") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let Some(py) = hdrh_python() else { return };
    let root = root_tree();
    let log = root.path().join("run.hlog");
    let o = run_on(
        root.path(),
        &[
            "--period-us",
            "500",
            "--duration",
            "2.5s",
            "--hlog",
            log.to_str().unwrap(),
            "--hlog-interval",
            "0.5",
            "--json",
        ],
    )
    .output()
    .unwrap();
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["series"][0];
    let o = Command::new(&py)
        .args(["-c", READ_LOG, log.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines: Vec<Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |tag: &str| lines.iter().filter(|l| l["tag"] == tag).collect::<Vec<_>>();
    let (dev, wake) = (of("Cyclic"), of("Cyclic.wakeup"));
    assert!(dev.len() >= 3, "{lines:?}");
    assert_eq!(dev.len(), wake.len());
    // Every period is in exactly one interval.
    let sum: u64 = dev.iter().map(|l| l["count"].as_u64().unwrap()).sum();
    assert_eq!(sum, s["count"].as_u64().unwrap());
    // The largest interval maximum is the run's (within the histogram's 0.1 %).
    let top = dev
        .iter()
        .map(|l| l["max"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let max_ns = s["max_us"].as_f64().unwrap() * 1000.0;
    assert!(
        (top - max_ns).abs() <= max_ns * 0.001 + 1.0,
        "{top} vs {max_ns}"
    );
    let mpi = &s["max_per_interval"];
    assert_eq!(mpi["interval_s"], 0.5);
    let peaks: Vec<f64> = mpi["max_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(
        peaks.iter().cloned().fold(0.0, f64::max),
        s["max_us"].as_f64().unwrap()
    );
}

#[test]
fn sigusr1_restarts_the_counts_and_the_result_says_when() {
    if !common::require_root("sigusr1_restarts_the_counts_and_the_result_says_when") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    // --iterations is the periods the whole run spans (the original's iterations), the reset included: the table
    // after the reset holds what is left of them. The reset is sent after 1 s; a loaded machine may still be in
    // setup then, so the periods before it may be none.
    let child = run_on(
        root.path(),
        &["--period-us", "1000", "--iterations", "3000", "--json"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGUSR1,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["series"][0];
    assert_eq!(v["resets"], 1, "{v}");
    assert!(v["reset_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(v["iterations"], 3000, "{v}");
    let count = s["count"].as_u64().unwrap();
    let after_reset = count + s["missed"].as_u64().unwrap();
    assert!(count > 0 && after_reset <= 3000, "{v}");
    let b = &s["buckets"];
    let banded: u64 = ["great", "good", "poor", "bad", "pathetic"]
        .iter()
        .map(|k| b[k].as_u64().unwrap())
        .sum();
    assert_eq!(banded, count, "bands restarted with the count");
    // The duration is the table's span, from the reset: the periods after it fit in it (two periods of slack for
    // the cycle the reset fell in).
    let duration_s = v["duration_s"].as_f64().unwrap();
    assert!(after_reset as f64 * 1e-3 <= duration_s + 2e-3, "{v}");
}

/// Runs argv[1:] on a pty (Python's standard library), so that the run sees a terminal; with PTY_STDIN_NULL set,
/// its stdin is /dev/null; with PTY_STTY_AFTER set, `stty -a` of the terminal follows it on the screen. `pump(secs, until)` reads the screen until the pattern shows (its match), the program
/// ends, or `secs` pass: the test acts on what the screen says, not after a fixed sleep, which a loaded machine
/// outlasts. What follows the prelude acts; the epilogue prints the exit code and puts the screen on stderr.
const PTY: &str = r#"
import os, pty, sys, time, select, signal, re, atexit
pid, fd = pty.fork()
if pid == 0:
    if os.environ.get("PTY_STDIN_NULL"):
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
    if os.environ.get("PTY_STTY_AFTER"):
        os.execv("/bin/sh", ["sh", "-c", '"$0" "$@"; rc=$?; stty -a; exit $rc'] + sys.argv[1:])
    os.execv(sys.argv[1], sys.argv[1:])
seen = b""
def pump(secs, until=None):
    global seen
    end = time.time() + secs
    while time.time() < end:
        m = until and re.search(until, seen)
        if m:
            return m
        if select.select([fd], [], [], 0.05)[0]:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                return None
    return None
def finish():
    # A program that did not end when told to is killed (and its exit code, -9, fails the test).
    done, status = os.waitpid(pid, os.WNOHANG)
    if done == 0:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status))
    sys.stderr.write(seen.decode(errors="replace"))
atexit.register(finish)
"#;

/// `rmp-eval run --root ROOT --no-config --output OUT` on a pty, driven by `script` (PTY and what acts).
fn on_pty(script: &str, root: &std::path::Path, out: &std::path::Path) -> Command {
    let mut c = Command::new("python3");
    c.args(["-c", script, bin(), "run", "--root"])
        .arg(root)
        .args(["--no-config", "--output"])
        .arg(out);
    c
}

#[test]
fn q_and_r_on_a_terminal() {
    if !common::require_root("q_and_r_on_a_terminal") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let out = root.path().join("r.json");
    // A pty from Python's standard library: the run sees a terminal, we type r once it offers keys, then q. Keys
    // that arrive without Enter show the raw mode was on; `stty -a` on the same terminal after the run shows it
    // was undone.
    let script = format!(
        "{PTY}{}",
        r#"
pump(60, rb"q or Ctrl\+C stops")
os.write(fd, b"r"); pump(1.0); os.write(fd, b"q"); pump(60)
"#
    );
    let o = on_pty(&script, root.path(), &out)
        .env("PTY_STTY_AFTER", "1")
        .output()
        .unwrap();
    let code: i32 = text(&o.stdout).trim().parse().unwrap_or(-1);
    // 0 or 1, or 3: a clean run of two seconds is too short to judge (inconclusive).
    assert!(
        matches!(code, 0 | 1 | 3),
        "exit {code}: {}",
        text(&o.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["resets"], 1, "r reset once: {v}");
    assert_eq!(v["interrupted"], true, "q ends the run as Ctrl+C does: {v}");
    assert_eq!(v["stopped_by"], "q", "and the result says it was q: {v}");
    let n = v["series"][0]["count"].as_u64().unwrap();
    assert!(n > 0, "{v}");
    let screen = text(&o.stderr);
    assert!(screen.contains("(r resets, q or Ctrl+C stops)"), "{screen}");
    // The terminal as the run found it: canonical mode and echo back on (stty prints "-echo" when off).
    let after = screen.rsplit_once("speed ").map(|(_, s)| s).unwrap_or("");
    let modes: Vec<&str> = after.split_whitespace().collect();
    assert!(
        modes.contains(&"icanon") && modes.contains(&"echo"),
        "terminal not restored after the run: {after}"
    );
}

#[test]
fn without_a_terminal_on_stdin_the_live_view_names_sigusr1_and_it_works() {
    if !common::require_root("without_a_terminal_on_stdin_the_live_view_names_sigusr1_and_it_works")
    {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let out = root.path().join("r.json");
    // The live view on a pty, stdin from /dev/null: keys cannot be read, so the footer must not offer them.
    // The test does what the footer says: kill -USR1 PID, then Ctrl+C (SIGINT).
    let script = format!(
        "{PTY}{}",
        r#"
m = pump(60, rb"kill -USR1 (\d+) resets")
if m:
    os.kill(int(m.group(1)), signal.SIGUSR1)
pump(1.0); os.kill(pid, signal.SIGINT); pump(60)
"#
    );
    let o = on_pty(&script, root.path(), &out)
        .env("PTY_STDIN_NULL", "1")
        .output()
        .unwrap();
    let screen = text(&o.stderr);
    assert!(!screen.contains("r resets"), "{screen}");
    assert!(screen.contains("resets, Ctrl+C stops)"), "{screen}");
    let code: i32 = text(&o.stdout).trim().parse().unwrap_or(-1);
    assert!(matches!(code, 0 | 1 | 3), "exit {code}: {screen}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["resets"], 1, "the pid the footer named took SIGUSR1: {v}");
    assert_eq!(v["interrupted"], true, "{v}");
}

#[test]
fn kill_9_leaves_the_last_checkpoint() {
    if !common::require_root("kill_9_leaves_the_last_checkpoint") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let mut child = run_on(root.path(), &["--duration", "60s", "--json"])
        .env("RMP_EVAL_CHECKPOINT_S", "0.5")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while results(root.path()).is_empty() && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1200));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let files = results(root.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(v["checkpoint"], true, "{v}");
    let s = &v["series"][0];
    assert!(s["count"].as_u64().unwrap() > 0, "{v}");
    assert!(!s["hdr"].as_str().unwrap().is_empty());
}

/// The newest JSON file in `dir` that says `checkpoint: true`, if one is there yet.
fn checkpoint_in(dir: &std::path::Path) -> Option<Value> {
    let rd = std::fs::read_dir(dir).ok()?;
    rd.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str::<Value>(&t).ok())
        .find(|v| v["checkpoint"] == true)
}

#[test]
fn nic_checkpoints_carry_the_round_trips_and_sigusr1_resets_them() {
    if !common::require_root("nic_checkpoints_carry_the_round_trips_and_sigusr1_resets_them") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let veth = common::nic::Veth::new();
    let _reflector = veth.reflect_fifo(30);
    let dir = common::nic::tempdir();
    let out = dir.path().join("r.json");
    // Long enough that the reset always comes before the end, however slow the machine: SIGINT ends it once a
    // checkpoint shows the reset.
    let child = common::nic::nic_run(&veth.host, &["--period-us", "1000", "--duration", "120s"])
        .args(["--json", "--output", out.to_str().unwrap()])
        .env("RMP_EVAL_CHECKPOINT_S", "0.5")
        // This run's results in its own directory, where the checkpoints are looked for.
        .env(common::RESULTS_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let wait_for = |what: &str, ok: &dyn Fn(&Value) -> bool| {
        let t = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            if let Some(v) = checkpoint_in(dir.path()).filter(|v| ok(v)) {
                return v;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "no checkpoint {what}"
            );
        }
    };
    // A checkpoint after more than two of the 1 s intervals in which both sides hand their statistics over, so
    // that one carrying only the last interval would show.
    let cp = wait_for("with round trips, 2.2 s into the run", &|v| {
        v["rtt"]["count"].as_u64() > Some(0) && v["series"][0]["count"].as_u64() > Some(2_200)
    });
    let rtt = &cp["rtt"];
    assert!(!rtt["hdr"].as_str().unwrap().is_empty(), "{rtt}");
    // Frames still in flight at the checkpoint are not lost (veth loses none).
    assert!(rtt["lost"].as_u64().unwrap() < 5, "{rtt}");
    let sender = cp["series"][0]["count"].as_u64().unwrap();
    // The sender's periods and the receiver's round trips are handed over once an interval (1 s: 1000 frames),
    // each side at its own moment, so a checkpoint can hold one interval more of one than of the other — but not
    // only the last interval (the sender is past 2200).
    assert!(
        rtt["count"].as_u64().unwrap().abs_diff(sender) <= 1_050,
        "{cp}"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::SIGUSR1).unwrap();
    wait_for("after the reset", &|v| v["resets"] == 1);
    nix::sys::signal::kill(pid, nix::sys::signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    let wall_ms = t.elapsed().as_millis() as u64;
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["resets"], 1, "{v}");
    let (sent_after, rtts) = (
        v["series"][0]["count"].as_u64().unwrap(),
        v["rtt"]["count"].as_u64().unwrap(),
    );
    // The round trips restarted with the sender's periods (both at their next cycle after the signal), not at the
    // start of the run: the periods before the checkpoint and those after the reset are disjoint spans of 1 ms
    // periods, which the run's wall time holds.
    assert!(
        sent_after + sender <= wall_ms + 2,
        "{sent_after} periods after the reset and {sender} before it in {wall_ms} ms: {v}"
    );
    assert!(
        rtts.abs_diff(sent_after) <= 50,
        "rtt {rtts} vs sender {sent_after}"
    );
    assert_eq!(v["rtt"]["lost"], 0, "{}", v["rtt"]);
    let hist = rmp_eval::measure::result::dist::decode(v["rtt"]["hdr"].as_str().unwrap()).unwrap();
    assert_eq!(hist.len(), rtts, "the stored histogram restarted too");
}

/// After a reset (SIGUSR1, the path `r` takes), everything the result says covers the span the table does:
/// the duration, the interference windows and the worst window count from the reset, not from the start. The
/// bounds are causal, not timings: the reset comes 2 s after the RT thread was seen, so the span after it is at
/// most the run's wall time less 2 s, and the periods the table counts fit in the duration.
#[test]
fn a_reset_restarts_the_duration_and_the_windows_with_the_table() {
    if !common::require_root("a_reset_restarts_the_duration_and_the_windows_with_the_table") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let started = Instant::now();
    let mut child = Command::new(bin())
        .args(["run", "--no-config", "--core"])
        .arg(common::rt_core().to_string())
        .args(["--duration", "6", "--json"])
        .env(common::RESULTS_ENV, common::results_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while thread_faults(child.id(), "rmp-eval-").is_empty() {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_secs(2));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGUSR1,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    let wall = started.elapsed().as_secs_f64();
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["resets"], 1, "{v}");

    let duration = v["duration_s"].as_f64().unwrap();
    let s = &v["series"][0];
    let periods = s["count"].as_f64().unwrap() + s["missed"].as_f64().unwrap_or(0.0);
    assert!(
        duration <= wall - 2.0,
        "duration {duration} s of a {wall} s run reset after 2 s"
    );
    assert!(
        periods * 0.001 <= duration + 0.002,
        "{periods} periods in {duration} s"
    );
    let i = &v["interference"];
    let windows = i["windows"].as_f64().unwrap();
    assert!(
        windows <= duration.ceil() + 1.0,
        "{windows} windows in {duration} s"
    );
    assert!(i["seconds"].as_f64().unwrap() <= duration + 1.0, "{i}");
    if let Some(w) = i["worst_window"].as_object() {
        assert!(w["start_s"].as_f64().unwrap() <= duration, "{i}");
    }
}

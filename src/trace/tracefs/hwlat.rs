//! The kernel's hardware latency detector (the hwlat tracer) for `run --hwlat`: the files it needs set, their old
//! values recorded under /run/rmp-eval/ before the first change (so that the next run puts them back after a
//! kill -9), and put back with the record removed when the tracer is dropped.

use std::fs::File;

use super::{SavedTracefs, TRACEFS, TraceError, Tracefs};
use crate::host::Host;

/// The old values of a running `run --hwlat`, until it has put them back (tmpfs: a reboot resets tracefs too).
pub(crate) const RECORD: &str = "/run/rmp-eval/hwlat";
const WIDTH: &str = "hwlat_detector/width";
const WINDOW: &str = "hwlat_detector/window";
/// Since Linux 5.14; older kernels move the one detector thread across the mask's CPUs themselves.
const MODE: &str = "hwlat_detector/mode";
/// One CPU at a time: the machine is never stopped whole.
const ROUND_ROBIN: &str = "round-robin";

/// What the detector is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HwlatSettings {
    /// Spinning with interrupts off for `width_us` of every `window_us`.
    pub(crate) width_us: u64,
    pub(crate) window_us: u64,
    /// Gaps above this are recorded (tracing_thresh).
    pub(crate) threshold_us: u64,
    pub(crate) cpus: Vec<usize>,
}

/// What a killed run leaves under RECORD.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Record {
    pid: i32,
    dir: String,
    saved: Vec<SavedTracefs>,
}

/// The hwlat tracer running; dropping it puts every file back as found and removes the record.
pub(crate) struct HwlatTracer {
    fs: Tracefs,
    /// The mode set, when the kernel has the file.
    pub(crate) mode: Option<&'static str>,
}

impl HwlatTracer {
    /// Refuses where there is no tracefs, no hwlat tracer or someone else tracing; then records the old values and
    /// starts the detector.
    pub(crate) fn start(host: &Host, s: &HwlatSettings) -> Result<HwlatTracer, TraceError> {
        let fs = Self::usable(host)?;
        let mode = host.exists(&fs.abs(MODE)).then_some(ROUND_ROBIN);
        let plan = plan(&fs, s, mode);
        let saved = plan
            .iter()
            .map(|(rel, _)| fs.found(rel))
            .collect::<Result<Vec<_>, _>>()?;
        let record = Record {
            pid: std::process::id() as i32,
            dir: fs.dir.clone(),
            saved,
        };
        let text = serde_json::to_string(&record).unwrap_or_default();
        host.write_atomic(RECORD, text.as_bytes(), None)?;
        // From here on a failure drops `t`: what was set is put back and the record removed.
        let mut t = HwlatTracer { fs, mode };
        for (rel, value) in &plan {
            t.fs.set(rel, value)?;
        }
        Ok(t)
    }

    /// tracefs, when it has the hwlat tracer and nobody else traces: checked before anything is changed (and before
    /// the run prepares what the refusal would make useless).
    pub(crate) fn usable(host: &Host) -> Result<Tracefs, TraceError> {
        let fs = Tracefs::open(host)?;
        let tracers = fs.read("available_tracers").unwrap_or_default();
        if !tracers.split_whitespace().any(|w| w == "hwlat") {
            return Err(TraceError::NoHwlat);
        }
        fs.refuse_busy("--hwlat")?;
        Ok(fs)
    }

    /// The consuming reader of every CPU's gaps, non-blocking.
    pub(crate) fn pipe(&self) -> Result<File, TraceError> {
        self.fs.pipe(None)
    }

    /// Stops recording, before the last read of the pipe.
    pub(crate) fn stop(&self) {
        self.fs.stop();
    }
}

impl Drop for HwlatTracer {
    fn drop(&mut self) {
        let left = self.fs.restore();
        for line in &left {
            eprintln!("rmp-eval: {line}");
        }
        // What could not be put back stays recorded: the next run tries again.
        if left.is_empty() {
            let _ = self.fs.host.remove_file(RECORD);
        }
    }
}

/// The files to write, in order: recording off, the detector's settings with the tracer still nop, then the
/// tracer and recording on. Width and window go in the order the kernel accepts from what is there now (the
/// width must stay below the window at every step).
fn plan(fs: &Tracefs, s: &HwlatSettings, mode: Option<&str>) -> Vec<(String, String)> {
    let window_now = fs
        .read(WINDOW)
        .ok()
        .and_then(|w| w.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let width = (WIDTH.to_string(), s.width_us.to_string());
    let window = (WINDOW.to_string(), s.window_us.to_string());
    let sizes = if s.width_us < window_now {
        [width, window]
    } else {
        [window, width]
    };
    let mut p = vec![
        ("tracing_on".to_string(), "0".to_string()),
        ("tracing_thresh".to_string(), s.threshold_us.to_string()),
        (
            "tracing_cpumask".to_string(),
            crate::parse::mask::format(&s.cpus, 0),
        ),
    ];
    p.extend(sizes);
    if let Some(m) = mode {
        p.push((MODE.to_string(), m.to_string()));
    }
    p.push(("current_tracer".to_string(), "hwlat".to_string()));
    p.push(("tracing_on".to_string(), "1".to_string()));
    p
}

/// Puts back what a `run --hwlat` that did not end (kill -9) left changed, from its record; one line for the user.
/// The record of a run still going (its process lives) is left alone.
pub(crate) fn restore_leftovers(host: &Host) -> Vec<String> {
    let Ok(text) = host.read(RECORD) else {
        return Vec::new();
    };
    let msg = match serde_json::from_str::<Record>(&text) {
        Ok(r) if r.pid != std::process::id() as i32 && still_running(r.pid) => {
            return Vec::new();
        }
        Ok(r) => match Tracefs::open(host) {
            Ok(mut fs) => {
                if [TRACEFS, super::DEBUGFS_TRACING].contains(&r.dir.as_str()) {
                    fs.dir = r.dir;
                }
                fs.saved = r.saved;
                drop(fs);
                "put back the tracefs settings (hwlat tracer) that an earlier run --hwlat left changed".to_string()
            }
            Err(e) => {
                format!("could not put back the hwlat tracer's settings ({e}); record dropped")
            }
        },
        Err(_) => format!("dropped an unreadable hwlat record {RECORD}"),
    };
    let _ = host.remove_file(RECORD);
    vec![msg]
}

/// Whether the run that wrote a record is still going: its process lives and is rmp-eval (not another that got
/// its pid since). The process ran on this machine, also under --root: its /proc is the live one.
fn still_running(pid: i32) -> bool {
    if crate::sys::process::is_gone(pid) {
        return false;
    }
    let comm = Host::live().read_trimmed(&format!("{}/{pid}/comm", crate::machine::PROC));
    comm.map_or(true, |c| c == "rmp-eval")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tracefs tree as a kernel with the hwlat tracer shows it (values of a 6.1 kernel's defaults).
    fn tree(tracers: &str) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("sys/kernel/tracing");
        std::fs::create_dir_all(t.join("hwlat_detector")).unwrap();
        for (f, v) in [
            ("available_tracers", tracers),
            ("current_tracer", "nop\n"),
            ("set_event", ""),
            ("trace_marker", ""),
            ("tracing_on", "1\n"),
            ("tracing_thresh", "0\n"),
            ("tracing_cpumask", "f\n"),
            ("hwlat_detector/width", "500000\n"),
            ("hwlat_detector/window", "1000000\n"),
            ("hwlat_detector/mode", "none [round-robin] per-cpu\n"),
        ] {
            std::fs::write(t.join(f), v).unwrap();
        }
        let h = Host::with_root(d.path());
        (d, h)
    }

    fn settings() -> HwlatSettings {
        HwlatSettings {
            width_us: 400_000,
            window_us: 2_000_000,
            threshold_us: 10,
            cpus: vec![3, 0],
        }
    }

    #[test]
    fn set_recorded_and_put_back_byte_for_byte() {
        let (_d, h) = tree("hwlat blk function nop\n");
        let before = |f: &str| h.read(&format!("{TRACEFS}/{f}")).unwrap();
        let files = [
            "current_tracer",
            "tracing_thresh",
            "tracing_cpumask",
            WIDTH,
            WINDOW,
            MODE,
        ];
        let old: Vec<String> = files.iter().map(|f| before(f)).collect();
        let t = HwlatTracer::start(&h, &settings()).unwrap();
        assert_eq!(t.mode, Some(ROUND_ROBIN));
        assert_eq!(before("current_tracer"), "hwlat");
        assert_eq!(before("tracing_cpumask"), "9");
        assert_eq!(before(WIDTH), "400000");
        assert_eq!(before(WINDOW), "2000000");
        assert_eq!(before(MODE), ROUND_ROBIN);
        assert!(h.read(RECORD).unwrap().contains("\"current_tracer\""));
        drop(t);
        let after: Vec<String> = files.iter().map(|f| before(f)).collect();
        assert_eq!(after, old);
        assert!(!h.exists(RECORD));
    }

    #[test]
    fn a_killed_runs_record_is_put_back_by_the_next() {
        let (_d, h) = tree("hwlat nop\n");
        let t = HwlatTracer::start(&h, &settings()).unwrap();
        // As kill -9 leaves it: the tracer set, the record there, of a process that is gone.
        std::mem::forget(t);
        let rec = h.read(RECORD).unwrap();
        let dead = rec.replace(
            &format!("\"pid\":{}", std::process::id()),
            "\"pid\":2147483646",
        );
        h.write_atomic(RECORD, dead.as_bytes(), None).unwrap();
        assert_eq!(restore_leftovers(&h).len(), 1);
        assert_eq!(
            h.read(&format!("{TRACEFS}/current_tracer")).unwrap(),
            "nop\n"
        );
        assert_eq!(
            h.read(&format!("{TRACEFS}/{MODE}")).unwrap(),
            "none [round-robin] per-cpu\n"
        );
        assert!(!h.exists(RECORD));
        assert!(restore_leftovers(&h).is_empty());
        // pid 1 lives, but is not rmp-eval: its pid was reused after the kill.
        let t = HwlatTracer::start(&h, &settings()).unwrap();
        std::mem::forget(t);
        let rec = h.read(RECORD).unwrap();
        let reused = rec.replace(&format!("\"pid\":{}", std::process::id()), "\"pid\":1");
        h.write_atomic(RECORD, reused.as_bytes(), None).unwrap();
        assert_eq!(restore_leftovers(&h).len(), 1);
        assert_eq!(
            h.read(&format!("{TRACEFS}/current_tracer")).unwrap(),
            "nop\n"
        );
    }

    #[test]
    fn the_record_of_a_run_still_going_is_left_alone() {
        let (d, h) = tree("hwlat nop\n");
        // A process named rmp-eval (comm is the name it was started by) stands for the run that is going.
        let named = d.path().join("rmp-eval");
        std::os::unix::fs::symlink("/bin/sleep", &named).unwrap();
        let mut child = std::process::Command::new(&named)
            .arg("30")
            .spawn()
            .unwrap();
        let comm = format!("/proc/{}/comm", child.id());
        for _ in 0..500 {
            if std::fs::read_to_string(&comm).is_ok_and(|c| c.trim() == "rmp-eval") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let rec = format!(r#"{{"pid":{},"dir":"{TRACEFS}","saved":[]}}"#, child.id());
        h.write_atomic(RECORD, rec.as_bytes(), None).unwrap();
        let said = restore_leftovers(&h);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(said.is_empty(), "{said:?}");
        assert!(h.exists(RECORD));
        // Once it is gone, its record is a leftover.
        assert_eq!(restore_leftovers(&h).len(), 1);
    }

    #[test]
    fn refused_without_the_tracer_or_when_busy() {
        let (_d, h) = tree("blk function nop\n");
        let e = HwlatTracer::start(&h, &settings()).err().unwrap();
        assert!(e.to_string().contains("CONFIG_HWLAT_TRACER"), "{e}");
        let (_d, h) = tree("hwlat nop\n");
        h.write_value(&format!("{TRACEFS}/current_tracer"), "function\n")
            .unwrap();
        let e = HwlatTracer::start(&h, &settings()).err().unwrap();
        assert!(matches!(e, TraceError::Busy(_, "--hwlat")), "{e}");
        assert!(!h.exists(RECORD));
    }
}

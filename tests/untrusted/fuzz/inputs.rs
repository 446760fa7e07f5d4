//! Property tests (proptest) over the snapshot's reader and writer and over compare's input: random small
//! machine trees with mutated files, links aimed anywhere and FIFOs; mutated result files. Fixed seed and case
//! count in CI (tests/untrusted/fuzz/mod.rs); tests/untrusted/mod.rs says how to run longer.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use super::{clean_line, mutated, run};
use proptest::prelude::*;
use rmp_eval::checks::{Ctx, Status};
use rmp_eval::host::Host;

const QEMU: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/debian12-rt-qemu-isolated"
);

/// Files the checks read, with the capture's content as the seed.
const FILES: &[&str] = &[
    "proc/cmdline",
    "sys/devices/system/cpu/online",
    "sys/devices/system/cpu/isolated",
    "sys/devices/system/cpu/nohz_full",
    "proc/interrupts",
    "proc/irq/default_smp_affinity",
    "sys/devices/virtual/workqueue/cpumask",
    "proc/1/task/1/stat",
    "proc/1/task/1/status",
    "proc/swaps",
];

/// Link targets: inside, above the root, absolute, loops.
const TARGETS: &[&str] = &[
    "../../..",
    "/",
    "/etc",
    "x",
    "../../../../../../../tmp",
    "loop",
    ".",
    "/proc/1",
];

#[derive(Debug, Clone)]
enum Entry {
    File(usize, String),
    Fifo(usize),
    Link(usize, usize),
}

fn entry() -> impl Strategy<Value = Entry> {
    let seeds: Vec<String> = FILES
        .iter()
        .map(|f| fs::read_to_string(Path::new(QEMU).join(f)).unwrap_or_default())
        .collect();
    prop_oneof![
        6 => (0..FILES.len(), mutated(seeds)).prop_map(|(i, s)| Entry::File(i, s)),
        1 => (0..FILES.len()).prop_map(Entry::Fifo),
        2 => (0..FILES.len(), 0..TARGETS.len()).prop_map(|(i, t)| Entry::Link(i, t)),
    ]
}

fn build(root: &Path, entries: &[Entry]) {
    for e in entries {
        let (i, ..) = match e {
            Entry::File(i, _) | Entry::Fifo(i) | Entry::Link(i, _) => (*i,),
        };
        let p = root.join(FILES[i]);
        let _ = fs::create_dir_all(p.parent().unwrap());
        let _ = fs::remove_file(&p);
        let _ = match e {
            Entry::File(_, s) => fs::write(&p, s),
            Entry::Fifo(_) => {
                let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
                // SAFETY: mkfifo with a NUL-terminated path we own.
                unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
                Ok(())
            }
            Entry::Link(_, t) => symlink(TARGETS[*t], &p),
        };
    }
}

fn findings(h: &Host, core: usize) -> Vec<(String, Status, String)> {
    let ctx = Ctx {
        core,
        nic: None,
        pid: None,
        smi_seconds: None,
    };
    rmp_eval::registry::run_all(h, &ctx)
        .into_iter()
        .map(|f| (f.id.to_string(), f.status, f.detail))
        .collect()
}

#[test]
fn snapshot_of_random_trees_stays_inside_and_is_faithful() {
    let cases = (super::config().cases / 4).max(8);
    let strategy = proptest::collection::vec(entry(), 1..8);
    let s = std::sync::atomic::AtomicU32::new(0);
    run("snapshot", strategy, |entries| {
        if s.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= cases {
            return Ok(());
        }
        let root = tempfile::Builder::new().prefix("fz-src").tempdir().unwrap();
        let base = tempfile::Builder::new().prefix("fz-out").tempdir().unwrap();
        // Start from two real CPUs so that checks run, then apply the random entries.
        fs::create_dir_all(root.path().join("sys/devices/system/cpu/cpu1")).unwrap();
        fs::write(root.path().join("sys/devices/system/cpu/online"), "0-1\n").unwrap();
        build(root.path(), &entries);
        let out = base.path().join("copy");
        let src = Host::with_root(root.path());
        match rmp_eval::commands::snapshot::snapshot_into(&src, &out) {
            Ok(_) => {
                let copy = Host::with_root(&out);
                for core in [0, 1] {
                    prop_assert_eq!(findings(&src, core), findings(&copy, core), "core {}", core);
                }
            }
            Err(e) => clean_line(&e.to_string())?,
        }
        // Nothing beside the output in its parent, nothing in the source changed into a directory.
        let names: Vec<_> = fs::read_dir(base.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        prop_assert!(names.len() <= 1, "{:?}", names);
        Ok(())
    });
}

#[test]
fn compare_input_is_validated_or_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let seed = serde_json::json!({"period_us":1000,"duration_s":10.0,"mode":"cyclic","verdict":"fail","rtt":null,
        "series":[{"label":"Cyclic","count":10000,"min_us":0.5,"max_us":900.0,"max_index":3,"p50_us":2.0,
        "p99_us":2.1,"p999_us":900.0,"p9999_us":900.0,
        "buckets":{"great":9980,"good":0,"poor":0,"bad":0,"pathetic":20}}]})
    .to_string();
    let good = d.path().join("good.json");
    fs::write(&good, &seed).unwrap();
    let good = rmp_eval::measure::result::store::load(&good).unwrap();
    let p = d.path().join("case.json");
    run("compare", mutated(vec![seed]), |s| {
        fs::write(&p, &s).unwrap();
        let r = rmp_eval::measure::result::store::load(&p)
            .and_then(|r| rmp_eval::report::compare_input::validate(&r, "case.json").map(|_| r));
        match r {
            Err(e) => clean_line(&e.to_string())?,
            Ok(r) => {
                for (b, a) in [(&good, &r), (&r, &good)] {
                    let c = rmp_eval::report::compare::compare(b, a, "b", "a");
                    let text = rmp_eval::report::compare::render_text(&c, false);
                    prop_assert!(
                        !text.chars().any(|c| c.is_control() && c != '\n'),
                        "{:?}",
                        text
                    );
                    let json = serde_json::to_string(&c).unwrap();
                    prop_assert!(!json.contains("null"), "{}", json);
                }
            }
        }
        Ok(())
    });
}

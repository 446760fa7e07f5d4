//! SIGKILL at random moments of fix and of rollback, 201 that land while the process runs, from a fixed
//! seed. After each, the next rollback leaves the tree (content, mode, owner, links, directories) as it was before
//! fix, and no temporary file behind. Three workers, each on its own copy of the captured Debian guest's tree, reused run after run
//! (each run must leave it as it found it).

use crate::common;
use common::Rng;
use common::fix as fix_support;
use fix_support::{BIN, Root, diff, text};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 201;
const WORKERS: usize = 3;
const STEPS: &str = "cmdline,sysctl,workqueue";

fn spawn(r: &Root, args: &[&str]) -> std::process::Child {
    Command::new(BIN)
        .arg(args[0])
        .arg("--root")
        .arg(r.dir.path())
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Runs the command and SIGKILLs it after `after` (if it is still running). True when it was killed.
fn kill_after(r: &Root, args: &[&str], after: Duration) -> bool {
    let mut c = spawn(r, args);
    let t0 = Instant::now();
    while t0.elapsed() < after {
        if c.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let killed = c.try_wait().unwrap().is_none();
    let _ = c.kill();
    c.wait().unwrap();
    killed
}

fn timed(r: &Root, args: &[&str]) -> Duration {
    let t0 = Instant::now();
    let st = spawn(r, args).wait().unwrap();
    assert!(st.success(), "{args:?}");
    t0.elapsed()
}

const FIX: &[&str] = &[
    "fix",
    "--core",
    "1",
    "--only",
    STEPS,
    "--yes",
    "--no-measure",
];
const ROLLBACK: &[&str] = &["rollback", "--yes"];

/// Runs until `runs` kills have landed while the process ran (or `runs * 4` attempts). The kill moment is drawn
/// from the shortest complete fix or rollback seen so far on this worker, so a slow first run (cold caches, a busy
/// machine) does not make later kills fall after the process has ended.
fn worker(seed: u64, runs: usize) -> usize {
    let r = Root::untuned();
    let start = r.tree();
    let mut fix_d = timed(&r, FIX);
    let mut rb_d = timed(&r, ROLLBACK);
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
    let mut rng = Rng(seed | 1);
    let mut killed = 0;
    let mut i = 0;
    while killed < runs && i < runs * 4 {
        let of_rollback = i % 2 == 1;
        let span = if of_rollback { rb_d } else { fix_d };
        let at = Duration::from_micros(rng.below(span.as_micros() as usize) as u64);
        let hit = if of_rollback {
            fix_d = fix_d.min(timed(&r, FIX));
            kill_after(&r, ROLLBACK, at)
        } else {
            kill_after(&r, FIX, at)
        };
        killed += usize::from(hit);
        // A child the killed process had just forked (the shell that sources GRUB's files) holds the lock until
        // its exec closes it: a moment, not a state.
        let t0 = Instant::now();
        let mut o = r.rmp("rollback", &["--yes"]);
        for _ in 0..20 {
            if !String::from_utf8_lossy(&o.stderr).contains("another rmp-eval fix or rollback") {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            o = r.rmp("rollback", &["--yes"]);
        }
        assert_eq!(
            o.status.code(),
            Some(0),
            "seed {seed} run {i} (kill of {} at {at:?}): {}",
            if of_rollback { "rollback" } else { "fix" },
            text(&o)
        );
        if !hit && !of_rollback {
            // The fix ran to its end, so this rollback undid a whole fix: a fresh measure of a rollback.
            rb_d = rb_d.min(t0.elapsed());
        }
        let d = diff(&start, &r.tree());
        assert_eq!(
            d,
            Vec::<String>::new(),
            "seed {seed} run {i}: kill of {} at {at:?}",
            if of_rollback { "rollback" } else { "fix" }
        );
        i += 1;
    }
    killed
}

#[test]
fn sigkill_at_random_moments_of_fix_and_rollback() {
    let seed: u64 = std::env::var("RMP_EVAL_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_f1c5);
    let killed: usize = std::thread::scope(|s| {
        let hs: Vec<_> = (0..WORKERS)
            .map(|w| s.spawn(move || worker(seed.wrapping_add(w as u64 * 7919), RUNS / WORKERS)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    eprintln!("seed {seed}: {killed} kills landed while fix or rollback ran");
    // The kills must land while the process runs, or the test shows nothing; four attempts per landed kill is
    // far more than a machine needs unless fix and rollback end before any kill can reach them.
    assert!(
        killed >= RUNS / WORKERS * WORKERS,
        "only {killed} of {RUNS} kills hit a running process in {} attempts",
        RUNS * 4
    );
}

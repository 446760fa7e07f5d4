//! What the integration tests share, one module per family: `check` (run the binary, read its JSON), `fix`
//! (fixture roots, tree hashes), `grub` (GRUB's line as its shell sees it), `lock` (what the tests share on this
//! machine: the live machine and its RT core), `nic` (veth pairs in namespaces, the reflector), `tshark`
//! (the frames as an independent peer decodes them), `run` (a --root tree so results never land in the machine's
//! /var/lib). A test module takes it with `use crate::common;`.
//!
//! One gate for tests that need root or a machine resource: [`require_root`] / [`cannot_run`]. Outside CI a test
//! that cannot run says so and passes; with `RMP_EVAL_REQUIRE_ROOT=1` (tests/run-all.sh sets it when it runs as
//! root, .ci/run always) it fails instead, so a CI run without root cannot go green without the root tests.

pub mod check;
pub mod fix;
pub mod grub;
pub mod lock;
pub mod nic;
pub mod run;
pub mod tracefs;
pub mod tshark;

/// xorshift64*: a fixed seed, so that a failure can be run again (RMP_EVAL_TEST_SEED picks another).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// True when the test may go on; false (after saying why) when it must not and the run is not strict. In a
/// strict run (`RMP_EVAL_REQUIRE_ROOT=1`) a test that cannot run fails.
pub fn cannot_run(test: &str, why: &str) -> bool {
    if std::env::var("RMP_EVAL_REQUIRE_ROOT").as_deref() == Ok("1") {
        panic!("{test}: cannot run here ({why}) and RMP_EVAL_REQUIRE_ROOT=1 says it must");
    }
    eprintln!("{test}: skipped ({why}); RMP_EVAL_REQUIRE_ROOT=1 turns this into a failure");
    false
}

/// The binary to be run as nobody (uid/gid 65534, no groups, no inherited capabilities: no CAP_SYS_NICE, an
/// RTPRIO limit of 0, no reading root's files); add its arguments. Switching needs root.
pub fn as_nobody() -> std::process::Command {
    let mut c = std::process::Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
    ])
    .arg(env!("CARGO_BIN_EXE_rmp-eval"));
    c
}

/// True when running as root; otherwise [`cannot_run`].
pub fn require_root(test: &str) -> bool {
    nix::unistd::geteuid().is_root() || cannot_run(test, "needs root")
}

/// Where tests that measure on the live machine (no --root) have `run`/`fix` save their results, so nothing lands in
/// the machine's /var/lib/rmp-eval/results: pass it as `cmd.env(RESULTS_ENV, common::results_dir())`.
pub fn results_dir() -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("results");
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub use rmp_eval::measure::result::store::RESULTS_ENV;

/// The result files in the machine's own results directory (what a live test must leave untouched).
pub fn machine_results() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(rmp_eval::measure::result::store::RESULTS_DIR)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The RT core rmp-eval picks by default: the last online CPU, read here independently of rmp-eval.
pub fn rt_core() -> usize {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let last = online.trim().rsplit([',', '-']).next().unwrap();
    last.parse()
        .unwrap_or_else(|e| panic!("online CPUs {online:?}: {e}"))
}

/// A helper process (a spinner, a fake controller), killed when dropped.
pub struct Helper(pub std::process::Child);

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `python3 -c SCRIPT ARGS…` and waits for the line "ready" it prints once it is set up.
pub fn python_ready(script: &str, args: &[String]) -> Helper {
    use std::io::BufRead;
    let mut c = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    std::io::BufReader::new(c.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let h = Helper(c);
    assert_eq!(line.trim(), "ready", "helper did not start");
    h
}

/// script(1) running the shell line `setup` then `program` (a quoted command line) on a new pseudo-terminal.
/// The program is exec'd by a pinned /bin/sh, so a Ctrl+C typed there reaches it alone: a dash left waiting
/// for it would die of the SIGINT itself and script would report 130 whatever the program did, and which
/// shell script starts follows the caller's $SHELL.
pub fn on_a_terminal(setup: &str, program: &str) -> std::process::Command {
    let mut c = std::process::Command::new("script");
    c.args(["-qfec", &format!("{setup}exec {program}"), "/dev/null"])
        .env("SHELL", "/bin/sh");
    c
}

/// The terminal cells `s` takes (two for ✔️ and other wide symbols), as rmp-eval counts them.
pub fn cells(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

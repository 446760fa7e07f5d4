//! The fuzzing harness the property tests share: a fixed seed, a fixed number of cases (RMP_FUZZ_CASES, default
//! 256; RMP_FUZZ_SEED picks another seed), inputs made by mutating a corpus of real captures, and a hang detector.
//! `parsers` covers every parser in src/parse, `inputs` the snapshot's reader and writer and compare's input;
//! `cargo test --release --test it fuzz::` runs both (tests/untrusted/mod.rs: longer runs).

mod inputs;
mod parsers;

use std::fmt::Debug;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// Not a performance bound (those are in BENCHMARKS.md): a case taking this long has hung.
const HANG: Duration = Duration::from_secs(20);

pub fn config() -> Config {
    let cases = std::env::var("RMP_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    }
}

fn seed() -> [u8; 32] {
    let s: u64 = std::env::var("RMP_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(17);
    let mut b = [0u8; 32];
    for (i, chunk) in b.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &s.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(i as u64)
                .to_le_bytes(),
        );
    }
    b
}

/// Runs `f` on `cases` inputs from `s`, deterministically; a failure panics with the shrunk input.
pub fn run<S: Strategy>(name: &str, s: S, f: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: Debug,
{
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed());
    let mut runner = TestRunner::new_with_rng(config(), rng);
    let r = runner.run(&s, |v| {
        let t = Instant::now();
        f(v)?;
        prop_assert!(t.elapsed() < HANG, "{name}: a case took {:?}", t.elapsed());
        Ok(())
    });
    if let Err(e) = r {
        panic!("{name}: {e}");
    }
}

/// An error message as a user sees it: one line, no control characters, short.
pub fn clean_line(e: &str) -> Result<(), TestCaseError> {
    prop_assert!(!e.contains('\n'), "several lines: {e:?}");
    prop_assert!(
        !e.chars().any(char::is_control),
        "control characters: {e:?}"
    );
    prop_assert!(
        e.len() <= 400,
        "{} bytes: {:?}…",
        e.len(),
        &e[..80.min(e.len())]
    );
    Ok(())
}

/// Pieces that parsers of kernel text care about, and some that break terminals.
const TOKENS: &[&str] = &[
    ",",
    "-",
    ":",
    "/",
    "N",
    "all",
    "\n",
    " ",
    "\t",
    "\x1b[2J",
    "\0",
    "(null)",
    "99999999999999999999",
    "0-8191",
    "CPU",
    "\u{fffd}",
    "4294967296",
    "-1",
    "0x",
    "=",
    "\"",
    ")",
    "(",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, usize),
    Delete(usize, usize),
    Repeat(usize, usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Flip(p, b)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Mutation::Insert(p, t)),
        (any::<usize>(), 1..64usize).prop_map(|(p, n)| Mutation::Delete(p, n)),
        (any::<usize>(), 1..32usize, 1..200usize).prop_map(|(p, n, k)| Mutation::Repeat(p, n, k)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(mut b: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let at = |p: usize, b: &Vec<u8>| if b.is_empty() { 0 } else { p % (b.len() + 1) };
    match *m {
        Mutation::Flip(p, v) if !b.is_empty() => {
            let i = p % b.len();
            b[i] = v;
        }
        Mutation::Flip(..) => {}
        Mutation::Insert(p, t) => {
            let i = at(p, &b);
            b.splice(i..i, TOKENS[t].bytes());
        }
        Mutation::Delete(p, n) => {
            let i = at(p, &b);
            let j = (i + n).min(b.len());
            b.drain(i..j);
        }
        Mutation::Repeat(p, n, k) => {
            let i = at(p, &b);
            let j = (i + n).min(b.len());
            let piece = b[i..j].to_vec();
            for _ in 0..k {
                b.splice(j..j, piece.iter().copied());
            }
        }
        Mutation::Truncate(p) => {
            let i = at(p, &b);
            b.truncate(i);
        }
    }
    b
}

/// A corpus entry with up to 8 random mutations (and, sometimes, none: the corpus itself is checked too).
pub fn mutated(corpus: Vec<String>) -> impl Strategy<Value = String> {
    (
        proptest::sample::select(corpus),
        proptest::collection::vec(mutation(), 0..8),
    )
        .prop_map(|(seed, ms)| {
            let b = ms.iter().fold(seed.into_bytes(), apply);
            String::from_utf8_lossy(&b).into_owned()
        })
}

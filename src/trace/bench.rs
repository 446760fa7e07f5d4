//! The time `run --trace` spends on its kept windows once tracing stopped — decoded into the event model,
//! explained, and rendered for the saved file — over every window of a large capture (each of its 1500 cycles
//! marked, a window from one marker to the next). A benchmark, not a test (BENCHMARKS.md, "--trace: the
//! analysis"); run it with:
//!
//! cargo test --lib trace::bench -- --ignored --nocapture  (BENCHMARKS.md: debug build; --release for absolute times)

use std::time::Instant;

use super::analyse::explain;
use super::collect::{Item, Kept};
use super::event::render;
use super::raw::saved_cmdlines;
use super::raw::tests::{CYCLIC, events_of, schema_of};
use super::session::decode;

#[test]
#[ignore = "a benchmark: cargo test --lib trace::bench -- --ignored --nocapture"]
fn analysis_of_a_large_capture() {
    let s = schema_of(CYCLIC);
    let comms =
        saved_cmdlines(&std::fs::read_to_string(format!("{CYCLIC}/saved_cmdlines")).unwrap());
    let mut windows: Vec<Kept> = Vec::new();
    let mut cur: Vec<Item> = Vec::new();
    for e in events_of(&s, CYCLIC, 1, "cpu1.raw") {
        let m = s.mark(&e.data);
        cur.push(Item::Raw(e));
        if let Some(m) = m {
            windows.push(Kept {
                cycle: m.cycle,
                lat_ns: m.lat_ns,
                items: std::mem::take(&mut cur),
                lost: false,
                tail: false,
            });
        }
    }
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let (mut explained, mut bytes) = (0, 0);
        for k in &windows {
            let entries = decode(k, Some(&s), &comms);
            explained += usize::from(explain(&entries, 1).is_some());
            bytes += render(&entries).len();
        }
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(explained, windows.len());
        std::hint::black_box(bytes);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{} windows: median {:.1} ms (runs {times:.1?})",
        windows.len(),
        times[2]
    );
}

use super::*;
use crate::measure::result::{RunMode, Verdict};
use crate::measure::series::Series;

fn result(spike_ns: u64, spikes: u64) -> RunResult {
    let mut s = Series::new("Cyclic", 1000, None);
    for i in 0..10_000u64 {
        let late = if i % (10_000 / spikes.max(1)) == 0 && spikes > 0 {
            spike_ns
        } else {
            2_000
        };
        s.record(1_000_000 + late, Some(10_000 + late));
    }
    let series = vec![s.summary()];
    RunResult {
        period_us: 1000,
        duration_s: 10.0,
        mode: RunMode::Cyclic,
        verdict: RunResult::judge(&series, None),
        series,
        rtt: None,
        bucket_width_us: 125.0,
        started: String::new(),
        label: String::new(),
        core: Some(1),
        priority: Some(42),
        kernel: String::new(),
        interrupted: false,
        dma_latency_held: true,
        error: None,
        checkpoint: false,
        reset_at: None,
        resets: 0,
        identity: None,
        load: None,
        interference: None,
        trace: None,
    }
}

#[test]
fn tuned_machine_compares_better() {
    let before = result(900_000, 20);
    let after = result(0, 0);
    assert_eq!(before.verdict, Verdict::Fail);
    let c = compare(&before, &after, "b.json", "a.json");
    assert_eq!(c.verdict, Change::Better);
    let outside = c
        .rows
        .iter()
        .find(|r| r.metric == "Cyclic outside Great")
        .unwrap();
    assert_eq!((outside.before, outside.after), (0.2, 0.0));
    let max = c
        .rows
        .iter()
        .find(|r| r.metric == "Cyclic max deviation")
        .unwrap();
    assert_eq!((max.before, max.after, max.change), (900.0, 2.0, -898.0));
    assert!(
        c.summary
            .starts_with("better — Cyclic outside Great 0.2 → 0 %"),
        "{}",
        c.summary
    );
    let text = render_text(&c, false);
    assert!(text.contains("Verdict: better"), "{text}");
    let cells: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("| Cyclic max deviation"))
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(
        cells[1..5],
        ["Cyclic max deviation (us)", "900", "2", "-898"],
        "{text}"
    );
    assert!(!text.contains('\x1b'));
    // And the other way round.
    assert_eq!(compare(&after, &before, "a", "b").verdict, Change::Worse);
    assert_eq!(compare(&after, &after, "a", "a").verdict, Change::Unchanged);
}

#[test]
fn json_keys() {
    let c = compare(&result(0, 0), &result(300_000, 5), "x", "y");
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["verdict"], "worse");
    assert!(v["rows"][0]["metric"].is_string());
    assert!(v["rows"][0]["change"].is_number());
    assert_eq!(
        v["rows"][0]["trend"], "unchanged",
        "a run's length is neither better nor worse"
    );
}

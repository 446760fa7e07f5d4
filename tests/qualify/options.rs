//! qualify's --confidence, --budget and --load: bad values are one line and exit 2 with nothing written; the
//! plan shows the claim each period is measured for, the load and the budget, and a plan that may take longer
//! than the budget is refused before anything is changed.

use super::trial_cycle::STATE;
use crate::common::fix::{Root, text};

fn refused(r: &Root, args: &[&str]) -> String {
    let o = r.rmp("qualify", args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!r.exists(STATE), "nothing is written: {}", text(&o));
    err
}

#[test]
fn bad_confidence_budget_or_load_is_one_line_and_exit_2() {
    let r = Root::untuned();
    for (args, says) in [
        (&["--core", "1", "--confidence", "1/x"][..], "not a rate"),
        (&["--core", "1", "--confidence", "0/h"][..], "not a rate"),
        (&["--core", "1", "--budget", "0"][..], "not a duration"),
        (&["--core", "1", "--budget", "2x"][..], "not a duration"),
        (&["--core", "1", "--load", "cpu,disk"][..], "not a load"),
    ] {
        let err = refused(&r, args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_plan_longer_than_the_budget_is_refused_before_anything_changes() {
    let r = Root::untuned();
    let start = r.tree();
    // 1/h at 95 % needs about 3 h per period with none outside Great: four periods cannot fit in 8 h.
    let err = refused(
        &r,
        &[
            "--core",
            "1",
            "--confidence",
            "1/h",
            "--budget",
            "8h",
            "--yes",
        ],
    );
    assert!(err.contains("more than --budget 8.0 h"), "{err}");
    assert_eq!(r.tree(), start);
}

#[test]
fn the_plan_shows_the_claim_the_load_and_the_budget() {
    let r = Root::untuned();
    // No terminal and no --yes: the plan is shown, then the question is refused.
    let o = r.rmp(
        "qualify",
        &[
            "--core",
            "1",
            "--periods",
            "1000,250",
            "--confidence",
            "1/10min",
            "--budget",
            "2h",
            "--load",
            "cpu,io",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        out.contains("1000 µs, 250 µs (each until it proves, at 95 %, a rate of cycles outside Great below 6/h: up to 30.0 min each"),
        "{out}"
    );
    assert!(out.contains("under load: stress-ng cpu, io"), "{out}");
    // The baseline (1 min) and two periods of at most 30 min (−ln 0.05 × 10 min each).
    assert!(
        out.contains("at most 1.0 h of measurement (--budget 2.0 h)"),
        "{out}"
    );
    assert!(!r.exists(STATE));
}

#[test]
fn one_at_a_time_with_measurements_too_short_to_judge_a_step_is_refused() {
    let r = Root::untuned();
    let err = refused(
        &r,
        &["--core", "1", "--one-at-a-time", "--seconds", "5", "--yes"],
    );
    assert!(
        err.contains("--one-at-a-time needs --seconds 10 or more"),
        "{err}"
    );
    // 10 s is enough: the plan is shown (and refused here only for want of a terminal to ask on).
    let o = r.rmp(
        "qualify",
        &["--core", "1", "--one-at-a-time", "--seconds", "10"],
    );
    assert!(
        text(&o).contains("then measured and compared"),
        "{}",
        text(&o)
    );
}

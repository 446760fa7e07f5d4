//! The check report's lines and summary: colour only when allowed, the fix hint on failures, remedy order.

use rmp_eval::checks::{Finding, Section, Status};
use rmp_eval::output::Output;
use rmp_eval::report::check::{line, summarize};

fn finding(status: Status, remedy: Option<&'static str>) -> Finding {
    Finding {
        id: "turbo",
        section: Section::Core,
        title: "Turbo/boost disabled",
        status,
        detail: "intel_pstate/no_turbo=0".into(),
        remedy,
    }
}

#[test]
fn colour_only_when_allowed_and_fix_hint_on_failures() {
    let f = finding(Status::Fail, Some("turbo"));
    let plain = line(&f, Output::plain());
    assert_eq!(
        plain,
        "Turbo/boost disabled                ❌   intel_pstate/no_turbo=0  [fix: turbo]"
    );
    let coloured = line(
        &f,
        Output {
            terminal: true,
            color: true,
        },
    );
    assert!(coloured.contains("\x1b[31m❌\x1b[0m"), "{coloured:?}");
    let ok = line(&finding(Status::Pass, None), Output::plain());
    assert!(!ok.contains("[fix:") && ok.contains("✔️    "), "{ok}");
}

#[test]
fn summary_counts_and_orders_remedies_as_fix_applies_them() {
    let mut a = finding(Status::Fail, Some("turbo"));
    a.id = "turbo";
    let mut b = finding(Status::Fail, Some("cmdline"));
    b.id = "core_isolated";
    let mut c = finding(Status::Fail, None);
    c.id = "swap";
    let s = summarize(&[
        a,
        b,
        c,
        finding(Status::Pass, None),
        finding(Status::Unknown, None),
    ]);
    assert_eq!((s.pass, s.fail, s.unknown, s.info), (1, 3, 1, 0));
    assert_eq!(s.remedies, vec!["cmdline", "turbo"]);
    assert_eq!(s.manual, vec!["swap"]);
}

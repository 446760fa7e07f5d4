//! The check report's lines and summary: colour only when allowed, the fix hint on failures, remedy order.

use rmp_eval::checks::{CheckId, Finding, Section, Status};
use rmp_eval::output::Output;
use rmp_eval::remedy::StepId;
use rmp_eval::report::check::{line, summarize};

fn finding(status: Status, remedy: Option<StepId>) -> Finding {
    Finding {
        id: CheckId::parse("turbo").unwrap(),
        section: Section::Core,
        title: "Turbo/boost disabled",
        status,
        detail: "intel_pstate/no_turbo=0".into(),
        remedy,
        by_hand: None,
    }
}

#[test]
fn colour_only_when_allowed_and_fix_hint_on_failures() {
    let f = finding(Status::Fail, Some(StepId::Turbo));
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
            utf8: true,
            width: 80,
        },
    );
    assert!(coloured.contains("\x1b[31m❌\x1b[0m"), "{coloured:?}");
    let ok = line(&finding(Status::Pass, None), Output::plain());
    assert!(!ok.contains("[fix:") && ok.contains("✔️    "), "{ok}");
}

#[test]
fn summary_counts_and_orders_remedies_as_fix_applies_them() {
    let mut a = finding(Status::Fail, Some(StepId::Turbo));
    a.id = CheckId::parse("turbo").unwrap();
    let mut b = finding(Status::Fail, Some(StepId::Cmdline));
    b.id = CheckId::parse("core_isolated").unwrap();
    let mut c = finding(Status::Fail, None);
    c.id = CheckId::parse("swap").unwrap();
    c.by_hand = Some("swapoff -a".into());
    let s = summarize(&[
        a,
        b,
        c,
        finding(Status::Pass, None),
        finding(Status::Unknown, None),
    ]);
    assert_eq!((s.pass, s.fail, s.unknown, s.info), (1, 3, 1, 0));
    assert_eq!(s.remedies, vec![StepId::Cmdline, StepId::Turbo]);
    assert_eq!(s.manual, vec!["swap"]);
}

#[test]
fn ascii_marks_when_the_locale_is_not_utf8_and_by_hand_is_pointed_at() {
    let ascii = Output {
        utf8: false,
        ..Output::plain()
    };
    let f = finding(Status::Fail, Some(StepId::Turbo));
    assert_eq!(
        line(&f, ascii),
        "Turbo/boost disabled                FAIL intel_pstate/no_turbo=0  [fix: turbo]"
    );
    let mut w = finding(Status::Warn, None);
    w.by_hand = Some("needs Linux 6.17".into());
    let l = line(&w, ascii);
    assert_eq!(
        l,
        "Turbo/boost disabled                WARN intel_pstate/no_turbo=0  [by hand, below]"
    );
    assert!(l.is_ascii());
}

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
        "Turbo/boost disabled                  ❌   intel_pstate/no_turbo=0  [fix: turbo]"
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
    assert!(!ok.contains("[fix:") && ok.contains("✔️   "), "{ok}");
}

/// The detail column starts at the same terminal cell whatever the mark (✔️ and ❌ take two cells, `FAIL` four)
/// and however long the title (the longest check title, the Raspberry Pi's, included).
#[test]
fn details_line_up_in_terminal_cells() {
    let ascii = Output {
        utf8: false,
        ..Output::plain()
    };
    let mut starts = Vec::new();
    for title in [
        "Turbo/boost disabled",
        "Raspberry Pi clock fixed (config.txt)",
    ] {
        for status in [Status::Pass, Status::Fail, Status::Info, Status::Unknown] {
            for out in [Output::plain(), ascii] {
                let f = Finding {
                    title,
                    ..finding(status, None)
                };
                let l = line(&f, out);
                let at = l.find("intel_pstate").unwrap();
                starts.push((crate::common::cells(&l[..at]), l));
            }
        }
    }
    let first = starts[0].0;
    for (cells, l) in &starts {
        assert_eq!(*cells, first, "{l}");
    }
}

/// Piped (80 columns), the summary's command is on one line: it is what the user copies.
#[test]
fn piped_check_keeps_the_command_it_names_on_one_line() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rmp-eval"))
        .args(["check", "--root"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/desktop-i7-smt-untuned"
        ))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines().any(|l| l.contains("`rmp-eval fix --core 7`")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("`apt install linux-image-rt-amd64`")),
        "{out}"
    );
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
        "Turbo/boost disabled                  FAIL intel_pstate/no_turbo=0  [fix: turbo]"
    );
    let mut w = finding(Status::Warn, None);
    w.by_hand = Some("needs Linux 6.17".into());
    let l = line(&w, ascii);
    assert_eq!(
        l,
        "Turbo/boost disabled                  WARN intel_pstate/no_turbo=0  [by hand, below]"
    );
    assert!(l.is_ascii());
}

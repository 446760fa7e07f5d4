//! The live view and the final report on real pseudo-terminals of 80 and 132 columns, read back
//! through a terminal emulator (the vt100 crate): what the user sees, not the bytes. At 80 columns no line may
//! wrap (a wrapped line leaves the redraw one line short, and stale headers pile up); under LANG=C only ASCII.

use crate::common;
use common::run::*;

/// Runs `rmp-eval ARGS` under script(1) on a pseudo-terminal of `cols` × 200 and returns the raw output.
fn on_terminal(cols: u16, lang: &str, args: &str) -> (Option<i32>, Vec<u8>) {
    on_terminal_env(cols, lang, args, &[])
}

fn on_terminal_env(
    cols: u16,
    lang: &str,
    args: &str,
    env: &[(&str, &std::ffi::OsStr)],
) -> (Option<i32>, Vec<u8>) {
    let setup = format!("stty cols {cols} rows 200; ");
    let o = common::on_a_terminal(&setup, &format!("'{}' {args}", bin()))
        .env("LANG", lang)
        .env_remove("LC_ALL")
        .env_remove("LC_CTYPE")
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (o.status.code(), o.stdout)
}

fn screen(cols: u16, bytes: &[u8]) -> vt100::Parser {
    let nz = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut p = vt100::Parser::new(nz(200), nz(cols), 0);
    p.process(bytes);
    p
}

#[test]
fn live_view_and_report_fit_80_and_132_columns() {
    if !common::require_root("live_view_and_report_fit_80_and_132_columns") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    for (cols, wide) in [(80u16, false), (132, true)] {
        let root = root_tree();
        let args = format!(
            "run --root '{}' --no-config --duration 2",
            root.path().display()
        );
        let (code, raw) = on_terminal(cols, "C.UTF-8", &args);
        let p = screen(cols, &raw);
        let s = p.screen();
        let text = s.contents();
        assert!(matches!(code, Some(0 | 1 | 3)), "{cols}: {text}");
        assert!(
            String::from_utf8_lossy(&raw).contains("q or Ctrl+C stops)"),
            "{cols}: no live frame was drawn"
        );
        let (rows, _) = s.size();
        for r in 0..rows.get() {
            assert!(
                !s.row_wrapped(r),
                "{cols} columns: row {r} wrapped:\n{text}"
            );
        }
        // The live frames were erased: one band-table header is left, the final report's.
        let headers = text.lines().filter(|l| l.starts_with("| Label")).count();
        assert_eq!(headers, 1, "{cols} columns:\n{text}");
        assert!(
            !text.contains("q or Ctrl+C stops)"),
            "{cols}: a live frame was left:\n{text}"
        );
        assert_eq!(text.contains("< 250us"), wide, "{cols} columns:\n{text}");
        assert!(text.contains("Max dev"), "{text}");
    }
}

/// The report's last lines — the counters' and the trace's (the tick line was 270 characters), the verdict —
/// on a live run with --trace, where they are long: none wraps at 80 columns.
#[test]
fn the_run_reports_last_lines_fit_80_columns() {
    if !common::require_root("the_run_reports_last_lines_fit_80_columns") {
        return;
    }
    let _lock = common::lock::LIVE.alone();
    let args = format!(
        "run --no-config --core {} --duration 2 --trace",
        common::rt_core()
    );
    let results = common::results_dir();
    let env = [(common::RESULTS_ENV, results.as_os_str())];
    let (code, raw) = on_terminal_env(80, "C.UTF-8", &args, &env);
    let p = screen(80, &raw);
    let s = p.screen();
    let text = s.contents();
    assert!(matches!(code, Some(0 | 1 | 3)), "{text}");
    for part in ["Ticks: ", "Trace of CPU", "Verdict: ", "Saved: "] {
        assert!(text.contains(part), "no {part:?} on the screen:\n{text}");
    }
    let (rows, _) = s.size();
    for r in 0..rows.get() {
        assert!(!s.row_wrapped(r), "row {r} wrapped:\n{text}");
    }
}

#[test]
fn ascii_marks_when_the_locale_is_not_utf8() {
    let seed = common::check::fixture("seed-i3-13100te");
    let args = format!("--root '{}' check", seed.display());
    let (_, raw) = on_terminal(80, "C", &args);
    let text = String::from_utf8_lossy(&raw);
    // No symbol a C-locale console shows as garbage: marks and rules are ASCII.
    for sym in ['✔', '❌', '⚠', '⏳', '❔', 'ℹ', '━', '\u{fe0f}'] {
        assert!(!text.contains(sym), "{sym} under LANG=C:\n{text}");
    }
    assert!(text.contains("FAIL") && text.contains("ok  "), "{text}");
    let (_, raw) = on_terminal(80, "C.UTF-8", &args);
    assert!(String::from_utf8_lossy(&raw).contains('❌'));
}

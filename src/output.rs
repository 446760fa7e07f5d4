//! How to print: colour and live redraw only on a terminal without NO_COLOR; symbols only in a UTF-8 locale;
//! the terminal's width for layouts that have a narrow form.

use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// stdout is a terminal: live redraw allowed.
    pub terminal: bool,
    /// ANSI colour allowed (terminal, NO_COLOR unset, no --no-color).
    pub color: bool,
    /// The locale's character set is UTF-8: ✔/❌ and box rules; otherwise ASCII marks.
    pub utf8: bool,
    /// The terminal's columns (80 when stdout is not a terminal or the size is unknown).
    pub width: usize,
}

/// Width assumed when stdout is no terminal (files, pipes): what a serial console shows.
pub(crate) const DEFAULT_WIDTH: usize = 80;

impl Output {
    pub fn detect(no_color_flag: bool) -> Self {
        let terminal = std::io::stdout().is_terminal();
        let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let width = if terminal {
            terminal_width().unwrap_or(DEFAULT_WIDTH)
        } else {
            DEFAULT_WIDTH
        };
        Output {
            terminal,
            color: terminal && !no_color_env && !no_color_flag,
            utf8: locale_is_utf8(|k| std::env::var(k).ok()),
            width,
        }
    }

    /// Plain output (tests, files, pipes).
    pub fn plain() -> Self {
        Output {
            terminal: false,
            color: false,
            utf8: true,
            width: DEFAULT_WIDTH,
        }
    }
}

/// Whether the character set is UTF-8, as setlocale(3) decides it: the first of LC_ALL, LC_CTYPE, LANG that is
/// set and not empty; "C"/"POSIX" or no setting at all is ASCII.
pub(crate) fn locale_is_utf8(var: impl Fn(&str) -> Option<String>) -> bool {
    ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|k| var(k).filter(|v| !v.is_empty()))
        .is_some_and(|v| {
            let v = v.to_ascii_lowercase();
            v.contains("utf-8") || v.contains("utf8")
        })
}

/// The terminal's columns: TIOCGWINSZ on stdout, else $COLUMNS.
pub(crate) fn terminal_width() -> Option<usize> {
    if let Some(c) = crate::sys::term::stdout_columns() {
        return Some(c);
    }
    std::env::var("COLUMNS")
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|&c| c > 0)
}

/// Writes `text` to the writer a command was given, as `out!` does to stdout: a closed pipe (`rmp-eval check |
/// head -1`) ends the output silently, and it is flushed at once (a live view or a prompt may follow).
pub(crate) fn write(w: &mut dyn std::io::Write, text: &str) {
    let _ = w.write_all(text.as_bytes());
    let _ = w.flush();
}

/// `writeln!` to the writer a command was given (stdout from `main`, a buffer in a test), through `write`: a
/// closed pipe ends the output silently, and nothing panics.
#[macro_export]
macro_rules! outln {
    ($w:expr, $($arg:tt)*) => {
        $crate::output::write($w, &format!("{}\n", format_args!($($arg)*)))
    };
}

/// `write!` to the writer a command was given (see `outln!`), flushed at once.
#[macro_export]
macro_rules! out {
    ($w:expr, $($arg:tt)*) => {
        $crate::output::write($w, &format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_decides_like_setlocale() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(locale_is_utf8(env(&[("LANG", "en_US.UTF-8")])));
        assert!(locale_is_utf8(env(&[
            ("LC_CTYPE", "C.utf8"),
            ("LANG", "C")
        ])));
        assert!(!locale_is_utf8(env(&[
            ("LC_ALL", "C"),
            ("LANG", "en_US.UTF-8")
        ])));
        assert!(!locale_is_utf8(env(&[("LANG", "C")])));
        assert!(!locale_is_utf8(env(&[])));
        assert!(locale_is_utf8(env(&[
            ("LC_ALL", ""),
            ("LANG", "de_DE.UTF-8")
        ])));
    }
}

//! How to print: colour and live redraw only on a terminal without NO_COLOR.

use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// stdout is a terminal: live redraw allowed.
    pub terminal: bool,
    /// ANSI colour allowed (terminal, NO_COLOR unset, no --no-color).
    pub color: bool,
}

impl Output {
    pub fn detect(no_color_flag: bool) -> Self {
        let terminal = std::io::stdout().is_terminal();
        let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Output {
            terminal,
            color: terminal && !no_color_env && !no_color_flag,
        }
    }

    /// Plain output (tests, files, pipes).
    pub fn plain() -> Self {
        Output {
            terminal: false,
            color: false,
        }
    }
}

/// `println!` that never panics: a closed pipe (`rmp-eval check | head -1`) ends the output silently.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `print!` that never panics (see `outln!`).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut o = std::io::stdout().lock();
        let _ = write!(o, $($arg)*);
        let _ = o.flush();
    }};
}

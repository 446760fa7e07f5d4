//! Text from a machine or a file made safe to print: one home for the rule, used by check details, parser
//! errors and compare's labels.

/// A character no output may carry raw: a control character (it drives a terminal, and XML forbids most of them)
/// or one of the two noncharacters XML forbids too.
pub(crate) fn unprintable(c: char) -> bool {
    c.is_control() || matches!(c, '\u{fffe}' | '\u{ffff}')
}

/// Control characters (escape sequences, newlines, a NUL) are shown escaped (`\u{1b}`, `\n`) and text longer
/// than `max` characters is cut with an ellipsis, so a hostile or broken input can neither drive the terminal
/// nor flood it.
pub fn sanitize(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    for c in s.chars() {
        let piece: String = if unprintable(c) {
            c.escape_default().collect()
        } else {
            c.to_string()
        };
        n += piece.chars().count();
        if n > max {
            out.push('…');
            break;
        }
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_bounds() {
        assert_eq!(sanitize("a\x1b[2Jb\nc", 40), "a\\u{1b}[2Jb\\nc");
        assert_eq!(sanitize(&"x".repeat(1_000_000), 10), "xxxxxxxxxx…");
        assert_eq!(sanitize("ok", 10), "ok");
        assert_eq!(sanitize("a\u{ffff}\u{85}", 40), "a\\u{ffff}\\u{85}");
    }
}

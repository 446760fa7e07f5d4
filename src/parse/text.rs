//! Text from a machine or a file made safe to print: one home for the rule, used by check details, parser
//! errors and compare's labels.

/// A character no output may carry raw: a control character (it drives a terminal, and XML forbids most of them),
/// one of the two noncharacters XML forbids too, or a bidirectional-text control (embeddings, overrides,
/// isolates and marks: U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C), which reorders what is shown
/// after it and can make a result read as another (`pass` written backwards over `fail`).
pub(crate) fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{fffe}'
                | '\u{ffff}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
        )
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
        // Bidirectional controls: a right-to-left override, an isolate, marks; not the letters around them.
        assert_eq!(
            sanitize(
                "ok\u{202e}liaf\u{2066}\u{2069}\u{200f}\u{200e}\u{61c}\u{202a}\u{2067}",
                200
            ),
            "ok\\u{202e}liaf\\u{2066}\\u{2069}\\u{200f}\\u{200e}\\u{61c}\\u{202a}\\u{2067}"
        );
        assert_eq!(
            sanitize("\u{5d0}\u{2065}\u{202f}", 10),
            "\u{5d0}\u{2065}\u{202f}"
        );
    }
}

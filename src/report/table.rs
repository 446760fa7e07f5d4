//! A small text table: columns sized to their widest cell, optional colour applied after padding so that escape
//! bytes never disturb the alignment (and never appear when colour is off).

/// ANSI colours used by the reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paint {
    None,
    Green,
    Yellow,
    Red,
    Bold,
}

impl Paint {
    pub(crate) fn apply(self, s: &str, color: bool) -> String {
        let code = match self {
            Paint::None => return s.to_string(),
            Paint::Green => "32",
            Paint::Yellow => "33",
            Paint::Red => "31",
            Paint::Bold => "1",
        };
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// The colour of a band's count: green for Great, yellow for Good, red beyond; nothing for an empty cell.
    pub(crate) fn band(band: usize, count: u64) -> Paint {
        match (band, count) {
            (_, 0) => Paint::None,
            (0, _) => Paint::Green,
            (1, _) => Paint::Yellow,
            _ => Paint::Red,
        }
    }
}

pub(crate) struct Cell {
    pub(crate) text: String,
    pub(crate) paint: Paint,
}

impl<T: Into<String>> From<T> for Cell {
    fn from(t: T) -> Self {
        Cell {
            text: t.into(),
            paint: Paint::None,
        }
    }
}

pub(crate) fn painted(text: impl Into<String>, paint: Paint) -> Cell {
    Cell {
        text: text.into(),
        paint,
    }
}

/// Rows in the original's pipe style; a `None` row is the rule under the header. The first column is left-aligned,
/// the rest right-aligned.
pub(crate) fn render(rows: &[Option<Vec<Cell>>], color: bool) -> String {
    let ncol = rows.iter().flatten().map(Vec::len).max().unwrap_or(0);
    let mut width = vec![0usize; ncol];
    for row in rows.iter().flatten() {
        for (i, c) in row.iter().enumerate() {
            width[i] = width[i].max(c.text.chars().count());
        }
    }
    let mut s = String::new();
    for row in rows {
        match row {
            None => {
                s.push('|');
                for (i, w) in width.iter().enumerate() {
                    s.push_str(&"-".repeat(w + 2));
                    s.push(if i + 1 == ncol { '|' } else { '+' });
                }
            }
            Some(cells) => {
                s.push('|');
                for (i, w) in width.iter().enumerate() {
                    let (text, paint) = cells
                        .get(i)
                        .map_or(("", Paint::None), |c| (c.text.as_str(), c.paint));
                    let pad = w - text.chars().count();
                    let body = paint.apply(text, color);
                    if i == 0 {
                        s.push_str(&format!(" {body}{} |", " ".repeat(pad)));
                    } else {
                        s.push_str(&format!(" {}{body} |", " ".repeat(pad)));
                    }
                }
            }
        }
        s.push('\n');
    }
    s
}

/// µs without needless decimals: 125, 12.5, 3.142.
pub(crate) fn us(v: f64) -> String {
    if (v - v.round()).abs() < 0.0005 {
        format!("{}", v.round() as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        let t = format!("{v:.3}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// HH:MM:SS.mmm, as the original prints the duration.
pub(crate) fn duration(secs: f64) -> String {
    let ms = (secs.max(0.0) * 1000.0).round() as u64;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// The cells `s` takes on a terminal: each character's width (two for ✔️, ❌ and other wide symbols, none for a
/// combining mark), less the ANSI escape sequences (colour).
pub(crate) fn visible_width(s: &str) -> usize {
    use unicode_width::UnicodeWidthStr;
    let mut n = 0;
    let mut rest = s;
    while let Some(at) = rest.find('\x1b') {
        n += rest[..at].width();
        let tail = &rest[at + 1..];
        let end = tail
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or(tail.len(), |e| e + 1);
        rest = &tail[end..];
    }
    n + rest.width()
}

/// The words of `text` as a line may be broken between them: split at spaces, except inside `backquotes` — a
/// command the user will copy stays on one line, however long.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for w in text.split_whitespace() {
        match (open, out.last_mut()) {
            (true, Some(last)) => {
                last.push(' ');
                last.push_str(w);
            }
            _ => out.push(w.to_string()),
        }
        if w.matches('`').count() % 2 == 1 {
            open = !open;
        }
    }
    out
}

/// Every line of `text` that is wider than `columns` word-wrapped to them (the terminal would wrap it anyway, and
/// a wrapped line breaks a redraw): continuation lines indented two more than the line; a word wider than a line
/// is cut, but never a `command`. Lines that fit (tables chosen to fit) are left as they are.
pub(crate) fn fit(text: &str, columns: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if visible_width(body) <= columns {
            out.push_str(line);
            continue;
        }
        let lead = body.len() - body.trim_start_matches(' ').len();
        let rest = " ".repeat((lead + 2).min(columns / 2));
        let mut cur = " ".repeat(lead);
        let mut empty = true;
        for word in words(body) {
            for piece in cut(&word, columns.saturating_sub(rest.len()).max(1)) {
                let w = visible_width(&piece);
                if !empty && visible_width(&cur) + 1 + w > columns {
                    out.push_str(&cur);
                    out.push('\n');
                    cur = rest.clone();
                    empty = true;
                }
                if !empty {
                    cur.push(' ');
                }
                cur.push_str(&piece);
                empty = false;
            }
        }
        out.push_str(&cur);
        out.push_str(nl);
    }
    out
}

/// `word` in pieces of at most `max` characters (a word with escapes is left whole: colour words are short; so is
/// a `command`, which is copied).
fn cut(word: &str, max: usize) -> Vec<String> {
    if word.contains('\x1b') || word.contains('`') || word.chars().count() <= max {
        return vec![word.to_string()];
    }
    let chars: Vec<char> = word.chars().collect();
    chars.chunks(max).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_are_terminal_cells_and_commands_stay_whole() {
        // ✔️ is U+2714 with the emoji variation selector: two cells, as ❌; escapes take none.
        assert_eq!(visible_width("✔️"), 2);
        assert_eq!(visible_width("❌"), 2);
        assert_eq!(visible_width("\x1b[32m✔️\x1b[0m ok"), 5);
        assert_eq!(
            words("run `rmp-eval fix --core 7` now"),
            ["run", "`rmp-eval fix --core 7`", "now"]
        );
        let t = "Summary: 5 passed, 25 failed; `rmp-eval fix --core 7` repairs: turbo, sysctl\n";
        let wrapped = fit(t, 30);
        assert!(
            wrapped
                .lines()
                .any(|l| l.trim() == "`rmp-eval fix --core 7`"),
            "{wrapped}"
        );
        let long = "see `apt install linux-image-rt-amd64-unsigned-with-a-long-name`\n";
        assert!(
            fit(long, 20).contains("`apt install linux-image-rt-amd64-unsigned-with-a-long-name`")
        );
    }

    #[test]
    fn fit_wraps_only_lines_wider_than_the_terminal() {
        let t = "short\n    a b c d e f\n\x1b[31mred words here\x1b[0m\n";
        assert_eq!(fit(t, 20), t);
        assert_eq!(visible_width("\x1b[31mred\x1b[0m"), 3);
        assert_eq!(
            fit("  one two three four", 10),
            "  one two\n    three\n    four"
        );
        assert_eq!(fit("abcdefghijkl", 5), "abc\n  def\n  ghi\n  jkl");
        assert_eq!(fit("x\n", usize::MAX), "x\n");
    }

    #[test]
    fn aligned_and_plain_without_colour() {
        let rows = vec![
            Some(vec![Cell::from("Label"), Cell::from("Count")]),
            None,
            Some(vec![Cell::from("Cyclic"), painted("62367", Paint::Green)]),
        ];
        let t = render(&rows, false);
        assert_eq!(
            t,
            "| Label  | Count |\n|--------+-------|\n| Cyclic | 62367 |\n"
        );
        assert!(render(&rows, true).contains("\x1b[32m62367\x1b[0m |"));
    }

    #[test]
    fn numbers() {
        assert_eq!(us(125.0), "125");
        assert_eq!(us(12.5), "12.5");
        assert_eq!(us(2.7184), "2.718");
        assert_eq!(us(1234.56), "1234.6");
        assert_eq!(duration(62.445), "00:01:02.445");
        assert_eq!(duration(3725.0), "01:02:05.000");
    }
}

//! The documentation's examples are the binary's output. Each example block in README.md and docs/ follows a
//! marker that says how it was made:
//!
//! ```text
//! <!-- example [live|manual] [head=N] [tail=N]
//! setup: a command run first, not shown
//! $ the command shown (sudo and all), run as written
//! cleanup: a command run last, not shown
//! -->
//! ```
//!
//! The commands run in bash in a fresh directory that holds `tests` (a link to the repository's), with the
//! binary under test first on PATH and `sudo` a function that runs its arguments. head/tail keep the first and
//! last lines of the last command's output, with "…" between. Plain examples read a fixture (`--root`): the same
//! every time, checked here line by line. `live` ones measure this machine (root): checked here for the lines
//! they show (table headers, row labels, "Label:" lines). `manual` ones set up interfaces or change the machine:
//! only regenerated. `tools/regenerate-examples.sh` (RMP_EVAL_BLESS=1) rewrites every block from the binary.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, PartialEq)]
enum Kind {
    Fixture,
    Live,
    Manual,
}

struct Example {
    file: PathBuf,
    kind: Kind,
    head: Option<usize>,
    tail: Option<usize>,
    setup: Vec<String>,
    commands: Vec<String>,
    cleanup: Vec<String>,
    /// The block's line range (the fence lines included) in the file.
    block: std::ops::Range<usize>,
    shown: Vec<String>,
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page under docs/.
fn pages() -> Vec<PathBuf> {
    let mut v = vec![repo().join("README.md")];
    let mut dirs = vec![repo().join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

fn parse_marker(file: &Path, head: &str, body: &[&str]) -> Example {
    let mut ex = Example {
        file: file.to_path_buf(),
        kind: Kind::Fixture,
        head: None,
        tail: None,
        setup: vec![],
        commands: vec![],
        cleanup: vec![],
        block: 0..0,
        shown: vec![],
    };
    for word in head.split_whitespace() {
        match word.split_once('=') {
            Some(("head", n)) => ex.head = Some(n.parse().unwrap()),
            Some(("tail", n)) => ex.tail = Some(n.parse().unwrap()),
            None if word == "live" => ex.kind = Kind::Live,
            None if word == "manual" => ex.kind = Kind::Manual,
            _ => panic!(
                "{}: unknown word {word:?} in an example marker",
                file.display()
            ),
        }
    }
    for line in body {
        if let Some(c) = line.strip_prefix("setup: ") {
            ex.setup.push(c.to_string());
        } else if let Some(c) = line.strip_prefix("cleanup: ") {
            ex.cleanup.push(c.to_string());
        } else if let Some(c) = line.strip_prefix("$ ") {
            ex.commands.push(c.to_string());
        } else if !line.trim().is_empty() {
            panic!("{}: example marker line {line:?}", file.display());
        }
    }
    assert!(
        !ex.commands.is_empty(),
        "{}: an example marker without a `$ ` command",
        file.display()
    );
    ex
}

/// Every marked example of one page, with the block that follows its marker.
fn examples_in(file: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < lines.len() {
        let Some(head) = lines[i].strip_prefix("<!-- example") else {
            i += 1;
            continue;
        };
        let end = (i..lines.len())
            .find(|&j| lines[j].trim() == "-->")
            .expect("an unclosed example marker");
        let mut ex = parse_marker(file, head, &lines[i + 1..end]);
        let open = end + 1;
        assert!(
            lines.get(open).is_some_and(|l| l.starts_with("```")),
            "{}:{}: an example marker not followed by a ``` block",
            file.display(),
            open + 1
        );
        let close = (open + 1..lines.len())
            .find(|&j| lines[j].starts_with("```"))
            .expect("an unclosed block");
        ex.block = open..close + 1;
        ex.shown = lines[open + 1..close]
            .iter()
            .map(|s| s.to_string())
            .collect();
        out.push(ex);
        i = close + 1;
    }
    out
}

fn all_examples() -> Vec<Example> {
    pages().iter().flat_map(|p| examples_in(p)).collect()
}

/// Runs the example's commands as its marker says; returns the block's lines as they are to be shown (`whole`:
/// all the last command printed, not the marker's excerpt).
fn render(ex: &Example, results: Option<&Path>, whole: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(repo().join("tests"), dir.path().join("tests")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_rmp-eval")).parent().unwrap();
    let mut script = String::from("sudo() { \"$@\"; }\n");
    for s in &ex.setup {
        // A setup's status is not its success: a run that set up a comparison exits 1 on a fail verdict.
        script += &format!("{{ {s} ; }} >>setup.log 2>&1\n");
    }
    for (i, c) in ex.commands.iter().enumerate() {
        match c.strip_suffix('&') {
            Some(bg) => script += &format!("{{ {bg} ; }} >out.{i} 2>&1 &\nsleep 1\n"),
            None => script += &format!("{{ {c} ; }} >out.{i} 2>&1\n"),
        }
    }
    for s in &ex.cleanup {
        script += &format!("{{ {s} ; }} >>setup.log 2>&1\n");
    }
    // The commands' own exit status is part of what they show (an example may show a refusal).
    script += "exit 0\n";
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(&script).current_dir(dir.path());
    cmd.env(
        "PATH",
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    cmd.env("NO_COLOR", "1").env_remove("COLUMNS");
    if let Some(r) = results {
        cmd.env(common::RESULTS_ENV, r);
    }
    let st = cmd.status().unwrap();
    assert!(
        st.success(),
        "{}: the example's script failed: {script}",
        ex.file.display()
    );
    let mut shown = vec![];
    for (i, c) in ex.commands.iter().enumerate() {
        shown.push(format!("$ {c}"));
        let out = std::fs::read_to_string(dir.path().join(format!("out.{i}"))).unwrap_or_default();
        let mut lines: Vec<String> = out.lines().map(|l| l.trim_end().to_string()).collect();
        if i + 1 == ex.commands.len() && !whole {
            lines = excerpt(lines, ex.head, ex.tail);
        }
        shown.extend(lines);
    }
    shown
}

/// The first `head` and last `tail` lines, "…" between them when lines were left out.
fn excerpt(lines: Vec<String>, head: Option<usize>, tail: Option<usize>) -> Vec<String> {
    if head.is_none() && tail.is_none() {
        return lines;
    }
    let (h, t) = (head.unwrap_or(0), tail.unwrap_or(0));
    if h + t >= lines.len() {
        return lines;
    }
    let mut v = lines[..h].to_vec();
    v.push("…".to_string());
    v.extend_from_slice(&lines[lines.len() - t..]);
    v
}

/// What a line's format is, without its numbers or free text: a table row's cells (a cell with a digit is `N`),
/// a rule, a command as written, or a line's words up to its first digit, colon or column gap. Lines indented four
/// spaces (wrapped text) have none.
fn shape(line: &str) -> Option<String> {
    let t = line.trim_end();
    if t.starts_with("    ") || t.starts_with('\t') || t.is_empty() || t == "…" {
        return None;
    }
    // A progress line ("[00:00:10.082] Cyclic: …") comes every 10 s: a run of 10 s prints it or not.
    if t.starts_with('[') && t[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if let Some(row) = t.strip_prefix('|') {
        if row.starts_with('-') {
            return Some(format!("|- {} columns", row.matches(['+', '|']).count()));
        }
        let cells: Vec<String> = row
            .trim_end_matches('|')
            .split('|')
            .map(|c| c.trim())
            .map(|c| {
                if c.contains(|x: char| x.is_ascii_digit()) {
                    "N".to_string()
                } else {
                    c.to_string()
                }
            })
            .collect();
        return Some(format!("| {} |", cells.join(" | ")));
    }
    if t.starts_with(['━', '─', '═']) {
        return Some("rule".to_string());
    }
    if t.starts_with("$ ") {
        return Some(t.to_string());
    }
    // A check's row is "name   status   detail": its name is the format, the detail is the machine's.
    let column = t.find("   ").unwrap_or(t.len());
    let cut = t
        .find(|c: char| c.is_ascii_digit() || c == ':')
        .unwrap_or(t.len())
        .min(column);
    let words: Vec<&str> = t[..cut].split_whitespace().collect();
    Some(words.join(" "))
}

fn shapes(lines: &[String]) -> Vec<String> {
    lines.iter().filter_map(|l| shape(l)).collect()
}

fn where_(ex: &Example) -> String {
    let rel = ex.file.strip_prefix(repo()).unwrap_or(&ex.file);
    format!("{}:{}", rel.display(), ex.block.start + 1)
}

const REGENERATE: &str = "regenerate the examples: tools/regenerate-examples.sh";

/// Writes the fresh blocks into their pages (RMP_EVAL_BLESS=1), bottom up so the line ranges hold.
fn bless(kinds: &[Kind]) {
    for page in pages() {
        let mut exs = examples_in(&page);
        exs.retain(|e| kinds.contains(&e.kind));
        if exs.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        for ex in exs.iter().rev() {
            let mut block = vec![lines[ex.block.start].clone()];
            block.extend(render(ex, None, false));
            block.push("```".to_string());
            lines.splice(ex.block.clone(), block);
        }
        std::fs::write(&page, lines.join("\n") + "\n").unwrap();
    }
}

fn blessing() -> bool {
    std::env::var_os("RMP_EVAL_BLESS").is_some()
}

#[test]
fn fixture_examples_are_what_the_binary_prints() {
    if blessing() {
        return bless(&[Kind::Fixture]);
    }
    let exs: Vec<Example> = all_examples()
        .into_iter()
        .filter(|e| e.kind == Kind::Fixture)
        .collect();
    assert!(
        exs.len() >= 4,
        "the README's and the guide's fixture examples are marked: {}",
        exs.len()
    );
    for ex in exs {
        let now = shapes(&render(&ex, None, false));
        let shown = shapes(&ex.shown);
        assert_eq!(
            shown,
            now,
            "{}: the example's lines are not the binary's; {REGENERATE}",
            where_(&ex)
        );
    }
}

#[test]
fn live_examples_have_the_binary_format() {
    if blessing() {
        if common::require_root("live examples") {
            let _live = common::lock::LIVE.alone();
            bless(&[Kind::Live, Kind::Manual]);
        }
        return;
    }
    let exs: Vec<Example> = all_examples()
        .into_iter()
        .filter(|e| e.kind == Kind::Live)
        .collect();
    assert!(!exs.is_empty(), "the README's run example is marked live");
    if !common::require_root("live examples") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let results = tempfile::tempdir().unwrap();
    for ex in exs {
        let now = shapes(&render(&ex, Some(results.path()), true));
        // What a live run lists under a heading (the interrupts, threads and wrapped text) is this moment's.
        let headings: Vec<String> = ex
            .shown
            .iter()
            .filter(|l| !l.starts_with([' ', '\t']))
            .cloned()
            .collect();
        for s in shapes(&headings) {
            assert!(
                now.contains(&s),
                "{}: the binary no longer prints a line like {s:?}; {REGENERATE}\nit printed:\n{}",
                where_(&ex),
                now.join("\n")
            );
        }
    }
}

#[test]
fn the_shape_of_a_line_is_its_format_not_its_numbers() {
    let s = |l: &str| shape(l).unwrap();
    assert_eq!(
        s("| Cyclic |  9830 |   9643 | 9895.4 |"),
        s("| Cyclic | 1 | 2 | 3.5 |")
    );
    assert_ne!(
        s("| Label  | Count | < 125us | Max Latency | index |"),
        s("| Label  | Count | < 125us | Max dev | at |")
    );
    assert_eq!(s("Verdict: fail — 187 period(s)"), "Verdict");
    assert_eq!(
        s("Cyclic max period: 10895.4us at index 188"),
        "Cyclic max period"
    );
    assert_eq!(shape("    wrapped text of the line above"), None);
    assert_eq!(s("|--------+-------|"), "|- 2 columns");
}

#[test]
fn every_example_of_a_command_is_marked() {
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, w) in lines.windows(2).enumerate() {
            let shows_a_command = w[0].starts_with("```")
                && ["$ rmp-eval", "$ sudo rmp-eval", "$ sudo ip netns exec"]
                    .iter()
                    .any(|p| w[1].starts_with(p));
            let marked = i > 0 && lines[i - 1] == "-->";
            assert!(
                !shows_a_command || marked,
                "{}:{}: an example without a marker (tests/docs/examples.rs says how to mark it)",
                page.display(),
                i + 1
            );
        }
    }
}

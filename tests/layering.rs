//! The layering of docs/architecture.md, checked on the source: a module may use (`crate::…`) only the layers
//! below it. Layers, top down:
//!   commands / cli → job, qualify → report → fix, measure + trace → checks → machine → sys, host, parse and the small
//!   shared files.
//! And commands do not use each other: what two commands share sits below them (`job`, `report`, …); a command's
//! own parts are its submodules (commands/fix/measure.rs).
//! (`trace`, the why-late half of measuring, is in measure's layer; the two use each other. So is `ethercat`,
//! whose echo answers measure's probes.)
//! A module's file is where its module path says: no `#[path]` attribute; and every file of tests/ is a module of
//! the one test crate.
//! `KNOWN` lists the upward uses still in the tree, each with why; a new upward use fails this test.
//! And the system-call layer: outside src/sys no `unsafe`, no libc function call and no `nix` (libc's constants
//! and types are fine) — with no exceptions.
use std::collections::BTreeSet;
use std::path::Path;

/// The rank of a top-level module: a file may use modules of a lower or equal rank only.
fn rank(module: &str) -> Option<u32> {
    Some(match module {
        "commands" | "cli" => 7,
        "job" | "qualify" => 6,
        "report" => 5,
        "fix" | "measure" | "trace" | "ethercat" | "tunable" | "registry" => 4,
        "checks" => 3,
        "machine" => 2,
        "sys" | "after_boot_state" | "host" | "parse" | "cgroup" | "corelock" | "error"
        | "output" | "remedy" | "wallclock" | "out" | "outln" => 1,
        _ => return None,
    })
}

/// Upward uses left as they are (file, used module) — each a piece of work, not a rule.
const KNOWN: &[(&str, &str)] = &[];

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every .rs file under src/: its path from the crate's root ("src/…", with /) and its text.
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files(&root.join("src"), &mut all);
    all.iter()
        .map(|f| {
            let rel = f
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// Every top-level module a file names as `crate::NAME`.
fn uses(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        if i > 0 && text.as_bytes()[i - 1].is_ascii_alphanumeric() || text.as_bytes()[i - 1] == b'_'
        {
            continue; // `rmp_eval_crate::…` or similar: not ours
        }
        let rest = &text[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

#[test]
fn no_module_uses_a_layer_above_it() {
    let mut bad = Vec::new();
    let mut known_seen = BTreeSet::new();
    for (rel, text) in sources() {
        let top = rel["src/".len()..]
            .split(['/', '.'])
            .next()
            .unwrap()
            .to_string();
        let Some(mine) = rank(&top) else { continue };
        for used in uses(&text) {
            if used == top {
                continue;
            }
            let Some(theirs) = rank(&used) else {
                bad.push(format!(
                    "{rel}: crate::{used} is in no layer (add it to rank())"
                ));
                continue;
            };
            if theirs > mine {
                if KNOWN.contains(&(rel.as_str(), used.as_str())) {
                    known_seen.insert((rel.clone(), used.clone()));
                } else {
                    bad.push(format!(
                        "{rel} ({top}) uses crate::{used}, a layer above it"
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "upward uses:\n{}", bad.join("\n"));
    // A listed exception that is gone must leave the list, so that it cannot come back unseen.
    for (f, m) in KNOWN {
        assert!(
            known_seen.contains(&(f.to_string(), m.to_string())),
            "{f} no longer uses crate::{m}: remove it from KNOWN"
        );
    }
}

/// The command a file under src/commands/ is part of (`fix` for fix.rs and fix/measure.rs); None for the
/// dispatcher (mod.rs) and files elsewhere.
fn command_of(rel: &str) -> Option<&str> {
    let rest = rel.strip_prefix("src/commands/")?;
    let name = rest.split(['/', '.']).next()?;
    (name != "mod").then_some(name)
}

/// The command modules (of `commands`) that a file names: `crate::commands::X`, and from `src/commands/A.rs`
/// `super::X` (from `A/b.rs`, `super::super::X`), `use super::{X, …}` included.
fn commands_used(rel: &str, code: &str, commands: &BTreeSet<String>) -> BTreeSet<String> {
    let depth = rel.trim_start_matches("src/commands/").matches('/').count();
    let up = "super::".repeat(depth + 1);
    let mut out = BTreeSet::new();
    for prefix in ["crate::commands::", up.as_str()] {
        for (i, _) in code.match_indices(prefix) {
            let rest = &code[i + prefix.len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
                None => vec![rest],
            };
            for n in names {
                let n: String = n
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if commands.contains(&n) {
                    out.insert(n);
                }
            }
        }
    }
    out
}

/// Each command is a thin layer over the modules below `commands`: one command module using another fails.
#[test]
fn no_command_uses_another_command() {
    let all = sources();
    let commands: BTreeSet<String> = all
        .iter()
        .filter_map(|(rel, _)| command_of(rel))
        .map(str::to_string)
        .collect();
    let mut bad = Vec::new();
    for (rel, text) in &all {
        let Some(mine) = command_of(rel) else {
            continue;
        };
        for used in commands_used(rel, &code_only(text), &commands) {
            if used != mine {
                bad.push(format!("{rel} ({mine}) uses the command {used}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "commands using commands (move what they share below commands):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_a_command_using_another() {
    let commands: BTreeSet<String> = ["fix", "run", "report", "after_boot", "check"]
        .map(String::from)
        .into();
    let code = "use crate::commands::run;\nuse super::{report, fix};\nlet p = super::after_boot::pair();\n\
                mod tests { use super::*; fn t() { super::helper(); } }";
    let used: Vec<String> = commands_used("src/commands/fix.rs", code, &commands)
        .into_iter()
        .collect();
    assert_eq!(used, ["after_boot", "fix", "report", "run"]);
    // In fix/measure.rs, `super::` is fix itself; `super::super::check` is the command check.
    let used: Vec<String> = commands_used(
        "src/commands/fix/measure.rs",
        "use super::run; use super::super::check;",
        &commands,
    )
    .into_iter()
    .collect();
    assert_eq!(used, ["check"]);
    assert_eq!(command_of("src/commands/fix/measure.rs"), Some("fix"));
    assert_eq!(command_of("src/commands/mod.rs"), None);
    assert_eq!(command_of("src/report/run.rs"), None);
}

#[test]
fn the_check_sees_an_upward_use() {
    let u = uses(
        "use crate::commands::after_boot;\nlet x = crate::measure::session::rt::f();\n// rmp_eval_crate::x",
    );
    assert_eq!(u.into_iter().collect::<Vec<_>>(), ["commands", "measure"]);
    assert!(rank("commands") > rank("job"));
    assert!(rank("job") > rank("report"));
    assert!(rank("commands") > rank("checks"));
    assert!(rank("sys") < rank("checks"));
}

/// The code of a Rust file without its comments, string and char literals (each replaced by a space), so that
/// "unsafe-inline" in a string or `unsafe` in a doc comment is not code.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        let from = i;
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(h) = raw_string_hashes(rest) {
            // r"…", r#"…"#, br"…": ends at the quote followed by as many #.
            let open = rest.find('"').unwrap() + 1;
            let close = "\"".to_string() + &"#".repeat(h);
            i += rest[open..]
                .find(&close)
                .map_or(rest.len(), |e| open + e + close.len());
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            i += 2 + text[i + 2..].find('\'').map_or(0, |e| e + 1); // '\n', '\'', '\u{…}'
        } else if b[i] == b'\'' && rest.chars().nth(2) == Some('\'') {
            i += 1 + rest[1..].find('\'').unwrap() + 1; // 'x' (a lifetime 'a has no closing quote)
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        // The lines a literal or comment spans stay lines, so that line numbers and lengths hold.
        out.push(' ');
        out.extend(text[from..i.min(b.len())].matches('\n').map(|_| '\n'));
    }
    out
}

/// `Some(#s)` when `s` starts a raw string literal (r"…", r#"…"#, br"…").
fn raw_string_hashes(s: &str) -> Option<usize> {
    let s = s.strip_prefix('b').unwrap_or(s).strip_prefix('r')?;
    let h = s.bytes().take_while(|&c| c == b'#').count();
    (s.as_bytes().get(h) == Some(&b'"')).then_some(h)
}

/// What in this code is a system call made outside src/sys: `unsafe`, a `libc::f(` call, any `nix::` path.
fn system_calls(code: &str) -> Vec<String> {
    let word_at = |i: usize| {
        i == 0
            || !(code.as_bytes()[i - 1].is_ascii_alphanumeric() || code.as_bytes()[i - 1] == b'_')
    };
    let mut out = Vec::new();
    for (i, _) in code.match_indices("unsafe") {
        let after = code.as_bytes().get(i + 6).copied().unwrap_or(b' ');
        if word_at(i) && !(after.is_ascii_alphanumeric() || after == b'_') {
            out.push("unsafe".to_string());
        }
    }
    for (i, _) in code.match_indices("libc::") {
        let name: String = code[i + 6..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let called = code[i + 6 + name.len()..].trim_start().starts_with('(');
        if word_at(i) && called && name.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.push(format!("libc::{name}("));
        }
    }
    for (i, _) in code.match_indices("nix::") {
        if word_at(i) {
            out.push("nix::".to_string());
        }
    }
    out
}

#[test]
fn no_system_call_outside_src_sys() {
    let mut bad = Vec::new();
    for (rel, text) in sources()
        .iter()
        .filter(|(rel, _)| !rel.starts_with("src/sys/"))
    {
        for (n, line) in code_only(text).lines().enumerate() {
            for what in system_calls(line) {
                bad.push(format!("{rel}:{}: {what}", n + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "system calls outside src/sys (move them into src/sys behind a safe function):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_a_system_call_and_not_a_string() {
    let code = code_only(concat!(
        "let s = \"unsafe-inline\"; // unsafe { libc::close(3) }\n",
        "/* nix::unistd */ let r = r#\"libc::open(\"#; let q = '\"'; let t = '\\'';\n",
        "#![deny(clippy::undocumented_unsafe_blocks)] fn f<'a>(x: &'a u8) { let e = libc::EINVAL; }\n",
        "let fd = unsafe { libc::socket (1, 2, 3) }; let p: libc::termios; nix::unistd::getpid();",
    ));
    assert_eq!(code.lines().count(), 4, "{code}");
    let found: Vec<Vec<String>> = code.lines().map(system_calls).collect();
    assert_eq!(
        found,
        [
            vec![],
            vec![],
            vec![],
            vec!["unsafe".to_string(), "libc::socket(".into(), "nix::".into()]
        ],
        "{code}"
    );
}

/// Report renders what it is given; the machine is read below it (checks::machine_id for the identity). The
/// one `Host` in report is the metrics' textfile destination, which it writes (and whose directory it looks up).
#[test]
fn report_never_reads_the_machine() {
    let reads: Vec<String> = sources()
        .into_iter()
        .filter(|(f, _)| f.starts_with("src/report/") && f != "src/report/prometheus/mod.rs")
        .filter(|(_, t)| {
            let code = code_only(t);
            code.contains("crate::host")
                || code.contains("&Host")
                || code.contains("crate::machine")
        })
        .map(|(f, _)| f)
        .collect();
    assert!(reads.is_empty(), "report reads the machine in {reads:?}");
}

/// Every module's file is where its path says (`mod x;` in `a/b.rs` is `a/b/x.rs`): a reader finds a module by its
/// name, and a rename in git follows it. No `#[path = …]` in code (a string or comment that names it is fine).
#[test]
fn no_path_attribute() {
    let bad: Vec<String> = sources()
        .into_iter()
        .filter(|(_, text)| has_path_attribute(&code_only(text)))
        .map(|(rel, _)| rel)
        .collect();
    assert!(bad.is_empty(), "#[path] in:\n{}", bad.join("\n"));
}

fn has_path_attribute(code: &str) -> bool {
    code.match_indices('#').any(|(i, _)| {
        let rest = code[i + 1..].trim_start();
        let rest = rest.strip_prefix('!').unwrap_or(rest).trim_start();
        let Some(rest) = rest.strip_prefix('[') else {
            return false;
        };
        rest.trim_start()
            .strip_prefix("path")
            .is_some_and(|r| r.trim_start().starts_with('='))
    })
}

/// tests/ is one crate (tests/main.rs; Cargo.toml's `autotests = false`): a file there that no `mod` line names is
/// compiled by nobody, and its tests never run. Every .rs file under tests/ but main.rs is a module of its
/// directory's mod.rs (of main.rs at the top), and a directory of modules has its mod.rs.
#[test]
fn every_file_under_tests_is_a_module_of_the_test_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tests = root.join("tests");
    let mut all = Vec::new();
    files(&tests, &mut all);
    let mut orphans = Vec::new();
    for f in &all {
        let rel = f.strip_prefix(&tests).unwrap();
        if rel.starts_with("fixtures") || rel.starts_with("vm") || rel.starts_with("package") {
            continue;
        }
        let dir = rel.parent().unwrap();
        let stem = rel.file_stem().unwrap().to_string_lossy().into_owned();
        let (parent_dir, name) = match stem.as_str() {
            "main" if dir.as_os_str().is_empty() => continue,
            "mod" => (
                dir.parent().unwrap(),
                dir.file_name().unwrap().to_string_lossy().into_owned(),
            ),
            _ => (dir, stem),
        };
        let parent = if parent_dir.as_os_str().is_empty() {
            tests.join("main.rs")
        } else {
            tests.join(parent_dir).join("mod.rs")
        };
        let declared = std::fs::read_to_string(&parent).is_ok_and(|t| {
            code_only(&t).lines().any(|l| {
                let l = l.trim();
                let l = l.strip_prefix("pub ").unwrap_or(l);
                l == format!("mod {name};")
            })
        });
        if !declared {
            orphans.push(rel.display().to_string());
        }
    }
    assert!(
        orphans.is_empty(),
        "in tests/ but no module of the test crate (add `mod NAME;` to its directory's mod.rs):\n{}",
        orphans.join("\n")
    );
}

#[test]
fn the_check_sees_a_path_attribute() {
    assert!(has_path_attribute(&code_only(
        "#[path = \"x_tests.rs\"]\nmod tests;"
    )));
    assert!(has_path_attribute(&code_only("#[ path= \"a.rs\"] mod a;")));
    assert!(!has_path_attribute(&code_only(
        "// #[path = \"x.rs\"]\n#[cfg(test)]\nmod tests;"
    )));
    assert!(!has_path_attribute(&code_only(
        "let s = \"#[path = x]\"; #[pathological] fn f() {}"
    )));
}

/// A folder under src/ is a module with parts: `foo/tests.rs` sits beside `foo/mod.rs` or beside `foo.rs`'s other
/// submodules. A folder that holds only tests.rs is one file's tests put a level away from it.
#[test]
fn no_folder_holds_only_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files(&root.join("src"), &mut all);
    let bad = folders_of_tests_only(all.iter().map(|f| {
        f.strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/")
    }));
    assert!(
        bad.is_empty(),
        "folders holding only tests.rs (move foo.rs to foo/mod.rs, or the tests into foo.rs):\n{}",
        bad.join("\n")
    );
}

/// The folders among `files` (paths with /) whose only .rs file is tests.rs.
fn folders_of_tests_only(files: impl Iterator<Item = String>) -> Vec<String> {
    let mut code = BTreeSet::new();
    let mut tests = BTreeSet::new();
    for f in files {
        let (dir, name) = f.rsplit_once('/').unwrap_or(("", &f));
        if name == "tests.rs" {
            tests.insert(dir.to_string());
        } else {
            code.insert(dir.to_string());
        }
    }
    tests.difference(&code).cloned().collect()
}

#[test]
fn the_check_sees_a_folder_of_tests_only() {
    let files = [
        "src/a.rs",
        "src/a/tests.rs",
        "src/b/mod.rs",
        "src/b/tests.rs",
        "src/c.rs",
        "src/c/tests.rs",
    ]
    .map(String::from);
    let mut with_part = files.to_vec();
    with_part.push("src/c/part.rs".into());
    assert_eq!(folders_of_tests_only(files.into_iter()), ["src/a", "src/c"]);
    assert_eq!(folders_of_tests_only(with_part.into_iter()), ["src/a"]);
}

/// Type names another module can name are unique in the crate: a reader who meets `Collector` or `Ended` knows
/// which one without looking at the imports. Private types are read where they are defined and may repeat.
/// `KNOWN_TWICE` lists the names still defined more than once; it may only shrink (a name listed that is no longer
/// defined twice fails too, so that the list stays true).
#[test]
fn no_type_name_defined_twice() {
    let mut defined: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (rel, text) in sources() {
        for name in visible_types(&code_only(&text)) {
            defined.entry(name).or_default().push(rel.clone());
        }
    }
    let twice: BTreeSet<&str> = defined
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, _)| name.as_str())
        .collect();
    let known: BTreeSet<&str> = KNOWN_TWICE.iter().copied().collect();
    let new: Vec<String> = twice
        .difference(&known)
        .map(|n| format!("{n}: {}", defined[*n].join(", ")))
        .collect();
    assert!(
        new.is_empty(),
        "type names defined twice (rename one):\n{}",
        new.join("\n")
    );
    let gone: Vec<&&str> = known.difference(&twice).collect();
    assert!(
        gone.is_empty(),
        "no longer defined twice, remove from KNOWN_TWICE: {gone:?}"
    );
}

/// Items are `pub(crate)` unless the binary, the tests or the examples use them: the number of items (and fields)
/// declared plain `pub` under src/ may only shrink. Widening one to `pub` needs a user outside the library, and
/// then this bound, raised on purpose.
#[test]
fn pub_items_only_shrink() {
    const MAX_PUB: usize = 377;
    let count: usize = sources()
        .iter()
        .map(|(_, text)| {
            code_only(text)
                .lines()
                .filter(|l| l.trim_start().starts_with("pub "))
                .count()
        })
        .sum();
    assert!(
        count <= MAX_PUB,
        "{count} `pub` declarations under src/, at most {MAX_PUB}: make the new ones pub(crate)"
    );
}

/// Names defined more than once today, to be renamed: each is a piece of work, not a rule.
const KNOWN_TWICE: &[&str] = &[];

/// The names of the structs, enums, unions, traits and type aliases `code` defines as `pub` or `pub(…)`.
fn visible_types(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let Some(rest) = line.trim_start().strip_prefix("pub") else {
            continue;
        };
        let rest = match rest.strip_prefix('(') {
            Some(r) => r.split_once(')').map_or("", |(_, r)| r),
            None => rest,
        };
        let mut words = rest.split_whitespace();
        let (Some(kind), Some(name)) = (words.next(), words.next()) else {
            continue;
        };
        if ["struct", "enum", "union", "trait", "type"].contains(&kind) {
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

#[test]
fn the_check_sees_the_types_defined() {
    let code = "pub(crate) struct A { x: u8 }\n    pub enum B<T> {}\npub(super) trait C: D {}\n\
                pub(crate) type E = u8;\nstruct F;\npub(crate) fn g() {}\npub(in crate::x) union H {}\n";
    assert_eq!(visible_types(code), ["A", "B", "C", "E", "H"]);
}

/// Every path under src/ or tests/ that the code's comments and the docs name is there: a comment that points at
/// a file that was moved or removed sends the reader nowhere.
#[test]
fn every_path_named_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts: Vec<std::path::PathBuf> = Vec::new();
    files(&root.join("src"), &mut texts);
    files(&root.join("tests"), &mut texts);
    texts.retain(|f| !f.starts_with(root.join("tests/fixtures")) && !f.ends_with("layering.rs"));
    for d in ["docs", "docs/tasks"] {
        for e in std::fs::read_dir(root.join(d)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md") {
                texts.push(p);
            }
        }
    }
    for f in [
        "README.md",
        "HACKING.md",
        "BENCHMARKS.md",
        "Cargo.toml",
        "build.rs",
        "tests/install-deps.sh",
    ] {
        texts.push(root.join(f));
    }
    let mut missing = Vec::new();
    for f in &texts {
        let text = std::fs::read_to_string(f).unwrap();
        for p in named_paths(&text) {
            if !root.join(&p).exists() {
                missing.push(format!("{}: {p}", f.strip_prefix(root).unwrap().display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths named that do not exist:\n{}",
        missing.join("\n")
    );
}

/// The `src/…` and `tests/…` paths of files (with an extension) or folders (ending in /) that `text` names.
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["src/", "tests/"] {
        for (i, _) in text.match_indices(start) {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || "_-./".contains(c)) {
                continue; // a longer path (target/…/src/…, /usr/src/…) or a word
            }
            let path: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_-./".contains(*c))
                .collect();
            let path = path.trim_end_matches('.');
            let last = path.rsplit('/').next().unwrap_or("");
            if path.len() > start.len() && (path.ends_with('/') || last.contains('.')) {
                out.push(path.to_string());
            }
        }
    }
    out
}

#[test]
fn the_check_reads_the_paths_named() {
    let text = "see src/measure/nic/ and (tests/run/cyclic.rs). Not /usr/src/linux/ nor my_tests/x.rs nor src/";
    assert_eq!(
        named_paths(text),
        ["src/measure/nic/", "tests/run/cyclic.rs"]
    );
}

/// Comments say why, not which issue asked for it: the tracker's numbers mean nothing to a reader of the code.
#[test]
fn no_comment_names_an_issue() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files(&root.join("src"), &mut all);
    files(&root.join("tests"), &mut all);
    let mut bad = Vec::new();
    for f in all.iter().filter(|f| !f.ends_with("layering.rs")) {
        for (n, line) in std::fs::read_to_string(f).unwrap().lines().enumerate() {
            if line.find("//").is_some_and(|c| names_an_issue(&line[c..])) {
                bad.push(format!(
                    "{}:{}: {}",
                    f.strip_prefix(root).unwrap().display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "comments naming an issue:\n{}",
        bad.join("\n")
    );
}

/// "issue 16", "Issue #9", "issues 3 and 4".
fn names_an_issue(comment: &str) -> bool {
    let lower = comment.to_ascii_lowercase();
    lower.match_indices("issue").any(|(i, _)| {
        let rest = lower[i + "issue".len()..].trim_start_matches('s');
        let rest = rest.trim_start().trim_start_matches('#');
        rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

#[test]
fn the_check_sees_an_issue_named() {
    assert!(names_an_issue("// as issue 16 item 12 asks"));
    assert!(names_an_issue("//! Issue #9: SIGKILL"));
    assert!(!names_an_issue("// the issue is 2 s of stall"));
    assert!(!names_an_issue("// a known issue"));
}

/// fix, measure and trace take the machine's facts (CPUs, IRQs, NIC readings, the paths of kernel files) from
/// `machine`, the layer below checks, not from a check family: a check is a verdict, not a source of facts.
/// What they may use of checks: the verdicts (`Finding`, `Status`, the ids) and the wanted sysctl values (`knob`).
#[test]
fn fix_measure_and_trace_read_facts_from_machine() {
    const FACTS: &[&str] = &[
        "machine", "irq", "nic", "nic_hw", "nic_irq", "ethtool", "system", "power",
    ];
    let mut bad = Vec::new();
    for (rel, text) in sources() {
        if !["src/fix/", "src/measure/", "src/trace/"]
            .iter()
            .any(|d| rel.starts_with(d))
        {
            continue;
        }
        let code = code_only(&text);
        for (i, _) in code.match_indices("checks::") {
            let family: String = code[i + "checks::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if FACTS.contains(&family.as_str()) {
                bad.push(format!("{rel}: checks::{family}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "facts taken from checks:\n{}",
        bad.join("\n")
    );
}

/// Each machine path has one home: no two `const …: &str = "/…"` in src/ name the same path.
#[test]
fn each_path_constant_once() {
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    let mut bad = Vec::new();
    for (rel, text) in sources() {
        for line in text.lines() {
            let l = line.trim_start();
            let Some(rest) = l.split_once("const ").map(|(_, r)| r) else {
                continue;
            };
            let Some((name, value)) = rest.split_once(": &str = \"/") else {
                continue;
            };
            let Some(path) = value.split('"').next() else {
                continue;
            };
            let at = format!("{rel} {name}");
            if let Some(first) = seen.insert(format!("/{path}"), at.clone()) {
                bad.push(format!("/{path}: {first} and {at}"));
            }
        }
    }
    assert!(bad.is_empty(), "a path defined twice:\n{}", bad.join("\n"));
}

/// Where a --root run may behave differently from one on the running machine, outside the facts layer
/// (`machine/`) and `host/`: each file with why. What acts on the machine (ethtool writes, programs, mounts) takes a
/// `host::Kernel`, which only a live Host gives; facts read differently live and from a tree are machine/'s.
const LIVE_ONLY: &[(&str, &str)] = &[
    (
        "src/cgroup.rs",
        "a tree's cgroup can hold no thread of this process",
    ),
    (
        "src/checks/firmware/mod.rs",
        "a tree's SMI counter stands still between two readings",
    ),
    ("src/fix/undo.rs", "the undo hint names --root DIR"),
    (
        "src/measure/session/mod.rs",
        "the PM QoS note concerns the running machine only",
    ),
    (
        "src/commands/fix.rs",
        "the before/after measurement is of the running machine",
    ),
    (
        "src/commands/reflect.rs",
        "reflect answers on the running machine's interfaces",
    ),
    (
        "src/commands/run.rs",
        "a --root run says that it measured this machine",
    ),
    (
        "src/commands/apply_saved.rs",
        "--follow watches the running machine's interfaces",
    ),
];

#[test]
fn only_the_listed_files_ask_whether_the_host_is_live() {
    let asking: BTreeSet<String> = sources()
        .into_iter()
        .filter(|(rel, _)| !rel.starts_with("src/host/") && !rel.starts_with("src/machine/"))
        .filter(|(_, code)| code_only(code).contains(".is_live()"))
        .map(|(rel, _)| rel)
        .collect();
    let listed: BTreeSet<String> = LIVE_ONLY.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(
        asking, listed,
        "files outside host/ and machine/ that branch on Host::is_live(): take a host::Kernel for what acts on \
         the machine, move a fact's live/tree reading into machine/, or list the file here with why"
    );
}

/// The `StepId` variants a source text names in `StepId::ALL` (src/remedy.rs).
fn all_steps(remedy: &str) -> BTreeSet<String> {
    let start = remedy.find("const ALL").expect("StepId::ALL");
    let body = &remedy[start
        ..remedy[start..]
            .find("];")
            .map_or(remedy.len(), |e| start + e)];
    body.split("StepId::")
        .skip(1)
        .map(|s| {
            s.chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect()
        })
        .collect()
}

/// Every fix step is a tunable: one module under src/tunable names it as its `step`, and registry::TUNABLES
/// lists that module's tunable. Adding a knob is one module plus one registry line.
#[test]
fn every_step_id_has_a_tunable() {
    let src = sources();
    let text = |rel: &str| {
        src.iter()
            .find(|(r, _)| r == rel)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("{rel} not found"))
    };
    let steps = all_steps(&text("src/remedy.rs"));
    assert_eq!(steps.len(), 13, "{steps:?}");
    let registry = code_only(&text("src/registry/mod.rs"));
    let mut tunables = BTreeSet::new();
    for (rel, t) in src.iter().filter(|(r, _)| r.starts_with("src/tunable/")) {
        let code = code_only(t);
        for (i, _) in code.match_indices(": Tunable = Tunable {") {
            let konst = code[..i].rsplit(' ').next().unwrap_or_default().to_string();
            let step: String = code[i..]
                .split_once("step: StepId::")
                .map(|(_, r)| {
                    r.chars()
                        .take_while(|c| c.is_ascii_alphanumeric())
                        .collect()
                })
                .unwrap_or_default();
            let module = rel
                .trim_start_matches("src/")
                .trim_end_matches(".rs")
                .trim_end_matches("/mod")
                .replace('/', "::");
            assert!(
                registry.contains(&format!("&{module}::{konst},")),
                "{rel}: {konst} is not in registry::TUNABLES"
            );
            tunables.insert(step);
        }
    }
    assert_eq!(
        tunables, steps,
        "steps without a tunable, or tunables of no step"
    );
}

#[test]
fn the_check_reads_the_steps() {
    let remedy = "pub const ALL: [StepId; 2] = [\n StepId::Cmdline,\n StepId::NicEee,\n];\nfn x() { StepId::Persist }";
    assert_eq!(
        all_steps(remedy).into_iter().collect::<Vec<_>>(),
        ["Cmdline", "NicEee"]
    );
}

/// Each `fn` with a body in `code` (from `code_only`): its name, first line (1-based) and length in lines, from
/// `fn` to the closing brace.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (i, _) in code.match_indices("fn ") {
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            continue;
        }
        let name: String = code[i + 3..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = code[i..].find(['{', ';']).map(|o| i + o) else {
            continue;
        };
        if name.is_empty() || b[open] == b';' {
            continue; // a fn pointer type, or a declaration without a body
        }
        let mut depth = 0;
        let close = (open..b.len())
            .find(|&j| {
                depth += match b[j] {
                    b'{' => 1,
                    b'}' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .unwrap_or(b.len() - 1);
        let first = code[..i].matches('\n').count() + 1;
        out.push((name, first, code[i..close].matches('\n').count() + 1));
    }
    out
}

/// The longest a function under src/commands may be: a command parses, calls one function and prints its report.
const COMMAND_FN_LINES: usize = 60;

#[test]
fn no_command_function_over_60_lines() {
    let mut long = Vec::new();
    for (rel, text) in sources()
        .iter()
        .filter(|(r, _)| r.starts_with("src/commands/"))
    {
        for (name, line, len) in functions(&code_only(text)) {
            if len > COMMAND_FN_LINES {
                long.push(format!("{rel}:{line}: {name}, {len} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "command functions over {COMMAND_FN_LINES} lines: move the work below commands (fix/, job/, report/ …) \
         and leave the command parsing, one call and printing:\n{long:#?}"
    );
}

#[test]
fn the_check_measures_a_function() {
    let code = code_only(concat!(
        "fn a() {\n    let s = \"{\n}\";\n    if x { y() }\n}\n",
        "type F = fn(u8) -> u8;\ntrait T { fn d(&self); }\n",
        "fn b<T>(x: T) -> Vec<T>\nwhere T: Copy\n{\n    vec![x]\n}\n",
    ));
    let got: Vec<(String, usize, usize)> = functions(&code);
    assert_eq!(
        got,
        [("a".to_string(), 1, 5), ("b".to_string(), 8, 5)],
        "{code}"
    );
}

/// Commands print typed reports (Serialize structs beside the work they report), never JSON built by hand.
#[test]
fn no_json_macro_under_commands() {
    let built: Vec<String> = sources()
        .into_iter()
        .filter(|(rel, t)| rel.starts_with("src/commands/") && code_only(t).contains("json!"))
        .map(|(rel, _)| rel)
        .collect();
    assert!(
        built.is_empty(),
        "json! under src/commands: print a typed Serialize report instead: {built:?}"
    );
}

/// The kernel command line is split by one tokenizer, `parse::cmdline` (on whitespace, except inside double
/// quotes): no other code keeps a quoted-or-not state while splitting words.
const OTHER_QUOTE_SPLITTERS: &[(&str, &str)] = &[(
    "src/tunable/cmdline/boot/grub_source.rs",
    "`without` models the drop-in's shell function word by word, its separators kept",
)];

#[test]
fn one_command_line_tokenizer() {
    let splitting: BTreeSet<String> = sources()
        .into_iter()
        .filter(|(rel, _)| rel != "src/parse/cmdline.rs")
        .filter(|(_, t)| quote_state(&code_only(t)))
        .map(|(rel, _)| rel)
        .collect();
    let listed: BTreeSet<String> = OTHER_QUOTE_SPLITTERS
        .iter()
        .map(|(f, _)| f.to_string())
        .collect();
    assert_eq!(
        splitting, listed,
        "split a command line with crate::parse::cmdline::tokens (or tokens_bytes), not a tokenizer of your own"
    );
}

/// Whether code keeps a quote state: a `quoted`/`in_quote(s)` flag flipped (`= !q`, `^=`).
fn quote_state(code: &str) -> bool {
    ["quoted", "in_quote", "in_quotes", "inquote"]
        .iter()
        .any(|q| code.contains(&format!("{q} = !{q}")) || code.contains(&format!("{q} ^=")))
}

#[test]
fn the_check_sees_a_second_tokenizer() {
    assert!(quote_state(&code_only(
        "let mut quoted = false; for c in s.chars() { if c == '\"' { quoted = !quoted; } }"
    )));
    assert!(quote_state(&code_only(
        "let mut in_quote = false; in_quote ^= c == b'\"';"
    )));
    assert!(!quote_state(&code_only("let quoted = format!(\"'{x}'\");")));
}

/// The command lines rmp-eval suggests are written by one formatter, `remedy::Suggested`: the measurement and the
/// trace name what to run by its variants (or a `measure::cause::Remedy`), never by text of their own.
const SUGGESTIONS: [&str; 4] = [
    "rmp-eval fix ",
    "rmp-eval check ",
    "rmp-eval reflect --",
    "`rmp-eval reflect`",
];

/// The lines of `text` that write a suggested command line: code and strings outside comments and test modules.
fn suggesting(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter(|l| SUGGESTIONS.iter().any(|s| l.contains(s)))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn measure_and_trace_write_no_command_line() {
    let mut bad = Vec::new();
    for (rel, text) in sources() {
        let below = rel.starts_with("src/measure/") || rel.starts_with("src/trace/");
        if below && !rel.ends_with("/tests.rs") {
            bad.extend(suggesting(&text).into_iter().map(|l| format!("{rel}: {l}")));
        }
    }
    assert!(
        bad.is_empty(),
        "command lines written below the commands (name them with remedy::Suggested):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_a_command_line() {
    let text = "// rmp-eval fix --core 1\nlet s = \"→ rmp-eval check --core {core} (see cstates)\";\n\
                let t = \"is `rmp-eval reflect` running?\";\n#[cfg(test)]\nmod tests { \"rmp-eval fix --core 3\" }";
    assert_eq!(suggesting(text).len(), 2, "{:?}", suggesting(text));
}

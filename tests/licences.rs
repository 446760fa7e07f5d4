//! The licence gate: every crate that can end up in the shipped binary (the non-dev, non-proc-macro dependencies of
//! rmp-eval as `cargo metadata --filter-platform` resolves them, for amd64 and arm64) is under a licence of the
//! allow-list, no crate is linked in two versions, and every direct dependency says why in a comment above
//! its line in Cargo.toml. What the package lists (debian/notices.py, which writes THIRD-PARTY and the SBOM) is checked to
//! be within what this gate read.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Licences a crate of the binary may be under (SPDX identifiers).
const ALLOWED: &[&str] = &[
    "MIT",
    "Apache-2.0",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "ISC",
    "Zlib",
    "Unlicense",
    "0BSD",
    "Unicode-3.0",
];

const TARGETS: &[&str] = &["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];

/// Whether an SPDX licence expression allows use under the allow-list: with OR one allowed alternative suffices,
/// with AND every part must be allowed (AND binds tighter than OR). "X WITH exception" is X with more permissions:
/// allowed when X is. Cargo's old "MIT/Apache-2.0" is an OR. None when the expression does not parse.
fn allowed(expr: &str) -> Option<bool> {
    let spaced = expr
        .replace('/', " OR ")
        .replace('(', " ( ")
        .replace(')', " ) ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let mut pos = 0;
    let v = or_expr(&tokens, &mut pos)?;
    (pos == tokens.len()).then_some(v)
}

fn or_expr(t: &[&str], pos: &mut usize) -> Option<bool> {
    let mut v = and_expr(t, pos)?;
    while t.get(*pos) == Some(&"OR") {
        *pos += 1;
        v |= and_expr(t, pos)?;
    }
    Some(v)
}

fn and_expr(t: &[&str], pos: &mut usize) -> Option<bool> {
    let mut v = term(t, pos)?;
    while t.get(*pos) == Some(&"AND") {
        *pos += 1;
        v &= term(t, pos)?;
    }
    Some(v)
}

fn term(t: &[&str], pos: &mut usize) -> Option<bool> {
    let tok = *t.get(*pos)?;
    *pos += 1;
    if tok == "(" {
        let v = or_expr(t, pos)?;
        if t.get(*pos) != Some(&")") {
            return None;
        }
        *pos += 1;
        return Some(v);
    }
    if matches!(tok, ")" | "AND" | "OR" | "WITH") {
        return None;
    }
    if t.get(*pos) == Some(&"WITH") {
        t.get(*pos + 1)?;
        *pos += 2;
    }
    Some(ALLOWED.contains(&tok.trim_end_matches('+')))
}

#[test]
fn licence_expressions_are_judged_as_spdx_says() {
    assert_eq!(allowed("MIT OR Apache-2.0"), Some(true));
    assert_eq!(allowed("MIT/Apache-2.0"), Some(true));
    assert_eq!(allowed("EUPL-1.2"), Some(false));
    assert_eq!(allowed("GPL-3.0-only OR MIT"), Some(true));
    assert_eq!(allowed("MIT AND GPL-3.0-only"), Some(false));
    assert_eq!(allowed("(MIT OR Apache-2.0) AND Unicode-3.0"), Some(true));
    assert_eq!(
        allowed("(MIT OR Apache-2.0) AND LGPL-2.1-only"),
        Some(false)
    );
    assert_eq!(allowed("MPL-2.0 OR EUPL-1.2 AND MIT"), Some(false));
    assert_eq!(
        allowed("Apache-2.0 WITH LLVM-exception OR Apache-2.0 OR MIT"),
        Some(true)
    );
    assert_eq!(allowed("MIT OR"), None);
    assert_eq!(allowed("(MIT"), None);
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn metadata(target: &str) -> Value {
    let o = cargo()
        .args(["metadata", "--locked", "--format-version", "1"])
        .args(["--filter-platform", target])
        .output()
        .expect("cargo metadata runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// (name, version) → licence expression of every crate reached from the root by normal (non-dev, non-build)
/// edges, proc-macro crates (which run in the compiler, not in the binary) and what only they use left out.
fn linked(meta: &Value) -> BTreeMap<(String, String), String> {
    let pkgs: BTreeMap<&str, &Value> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    let nodes: BTreeMap<&str, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let proc_macro = |p: &Value| {
        p["targets"].as_array().unwrap().iter().any(|t| {
            t["kind"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k == "proc-macro")
        })
    };
    let root = meta["resolve"]["root"].as_str().unwrap();
    let (mut seen, mut stack) = (BTreeSet::new(), vec![root]);
    while let Some(id) = stack.pop() {
        for d in nodes[id]["deps"].as_array().unwrap() {
            let normal = d["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            let dep = d["pkg"].as_str().unwrap();
            if normal && !proc_macro(pkgs[dep]) && seen.insert(dep) {
                stack.push(dep);
            }
        }
    }
    seen.iter()
        .map(|id| {
            let p = pkgs[id];
            let key = (
                p["name"].as_str().unwrap().to_string(),
                p["version"].as_str().unwrap().to_string(),
            );
            (key, p["license"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

#[test]
fn every_linked_crate_is_under_an_allowed_licence_in_one_version() {
    for target in TARGETS {
        let crates = linked(&metadata(target));
        assert!(crates.len() > 20, "{target}: {crates:?}");
        let refused: Vec<String> = crates
            .iter()
            .filter(|(_, l)| allowed(l) != Some(true))
            .map(|((n, v), l)| format!("{n} {v}: {l:?}"))
            .collect();
        assert!(
            refused.is_empty(),
            "{target}: crates outside the allow-list {ALLOWED:?}: {refused:?}"
        );
        let mut versions: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (n, v) in crates.keys() {
            versions.entry(n).or_default().push(v);
        }
        let twice: Vec<_> = versions.iter().filter(|(_, v)| v.len() > 1).collect();
        assert!(
            twice.is_empty(),
            "{target}: crates linked in two versions: {twice:?}"
        );
    }
}

/// The crates whose Cargo.toml line under [dependencies] has a comment above it naming the crate in backquotes
/// (the comment above a group of lines names each crate of the group).
fn crates_with_a_reason() -> BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let section = text
        .split("\n[dependencies]\n")
        .nth(1)
        .expect("Cargo.toml has [dependencies]");
    let section = section.split("\n[").next().unwrap();
    let (mut reason, mut in_comment, mut named) = (String::new(), false, BTreeSet::new());
    for line in section.lines() {
        if let Some(c) = line.strip_prefix('#') {
            if !in_comment {
                reason.clear();
            }
            in_comment = true;
            reason.push_str(c);
        } else if let Some((name, _)) = line.split_once(" = ") {
            in_comment = false;
            if reason.contains(&format!("`{}`", name.trim())) {
                named.insert(name.trim().to_string());
            }
        }
    }
    named
}

#[test]
fn every_direct_dependency_says_why_in_cargo_toml() {
    let meta = metadata(TARGETS[0]);
    let root = meta["resolve"]["root"].as_str().unwrap();
    let pkg = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == root)
        .unwrap();
    let table = crates_with_a_reason();
    assert!(table.contains("clap"), "{table:?}");
    let missing: Vec<&str> = pkg["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"].is_null())
        .map(|d| d["name"].as_str().unwrap())
        .filter(|n| !table.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "direct dependencies without a comment above their line in Cargo.toml that names them and says why: {missing:?}"
    );
}

#[test]
fn what_the_package_lists_is_what_the_gate_read() {
    for target in TARGETS {
        let gate = linked(&metadata(target));
        let o = Command::new("python3")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/debian/notices.py"))
            .args(["--target", target, "--list"])
            .output()
            .expect("python3 runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let listed = String::from_utf8(o.stdout).unwrap();
        assert!(listed.lines().count() > 20, "{listed}");
        for line in listed.lines() {
            let mut w = line.splitn(3, ' ');
            let key = (w.next().unwrap().to_string(), w.next().unwrap().to_string());
            assert!(
                gate.contains_key(&key),
                "{target}: the package lists {line}, which the gate did not read"
            );
        }
    }
}

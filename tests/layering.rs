//! The layering of docs/architecture.md, checked on the source: a module may use (`crate::…`) only the layers
//! below it. Layers, top down:
//!   commands / cli → report → fix, measure + trace → checks → sys, host, parse and the small shared files.
//! (`trace`, the why-late half of measuring, is in measure's layer; the two use each other.)
//! `KNOWN` lists the upward uses still in the tree, each with why; a new upward use fails this test.
use std::collections::BTreeSet;
use std::path::Path;

/// The rank of a top-level module: a file may use modules of a lower or equal rank only.
fn rank(module: &str) -> Option<u32> {
    Some(match module {
        "commands" | "cli" => 6,
        "report" => 5,
        "fix" | "measure" | "trace" => 4,
        "checks" => 3,
        "sys" | "after_boot_state" | "host" | "host_read" | "host_tar" | "host_tree" | "parse"
        | "cgroup" | "corelock" | "error" | "output" | "remedy" | "wallclock" | "out" | "outln" => {
            1
        }
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files(&root.join("src"), &mut all);
    let mut bad = Vec::new();
    let mut known_seen = BTreeSet::new();
    for f in &all {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let top = rel["src/".len()..]
            .split(['/', '.'])
            .next()
            .unwrap()
            .to_string();
        let Some(mine) = rank(&top) else { continue };
        let text = std::fs::read_to_string(f).unwrap();
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

#[test]
fn the_check_sees_an_upward_use() {
    let u = uses(
        "use crate::commands::after_boot;\nlet x = crate::measure::rt::f();\n// rmp_eval_crate::x",
    );
    assert_eq!(u.into_iter().collect::<Vec<_>>(), ["commands", "measure"]);
    assert!(rank("commands") > rank("checks"));
    assert!(rank("sys") < rank("checks"));
}

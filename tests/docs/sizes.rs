//! The documentation stays what a newcomer reads in an afternoon: README in five minutes, HACKING in one sitting,
//! the user's pages under docs/ within a bound. Developer detail goes beside the code it describes (module comments,
//! tests/package/README.md, tests/vm/README.md, Cargo.toml's reasons for each crate), not into these pages.

use std::path::Path;

fn size(rel: &str) -> u64 {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    if p.is_dir() {
        std::fs::read_dir(&p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|q| {
                size(
                    q.strip_prefix(env!("CARGO_MANIFEST_DIR"))
                        .unwrap()
                        .to_str()
                        .unwrap(),
                )
            })
            .sum()
    } else {
        std::fs::metadata(&p).unwrap().len()
    }
}

#[test]
fn hacking_is_read_in_one_sitting() {
    let n = size("HACKING.md");
    assert!(
        n <= 8 * 1024,
        "HACKING.md is {n} bytes, over 8 KiB: move detail beside the code it describes"
    );
}

#[test]
fn readme_is_read_in_five_minutes() {
    let n = size("README.md");
    assert!(
        n <= 12 * 1024,
        "README.md is {n} bytes, over 12 KiB: link to docs/ instead"
    );
}

#[test]
fn the_docs_are_read_in_an_afternoon() {
    let n = size("docs");
    assert!(
        n <= 100 * 1024,
        "docs/ is {n} bytes, over 100 KiB: merge pages that say the same thing, move developer detail beside the \
         code, and generate references instead of committing them"
    );
}

/// Every file under docs/ is a page someone reads: what is generated (the checks' reference, example reports) is
/// made by the build or a script, never committed beside the pages, where it would go stale.
#[test]
fn docs_hold_pages_only() {
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                assert!(
                    p.extension().is_some_and(|x| x == "md"),
                    "{} is not a page: generate it in the build (target/) instead",
                    p.display()
                );
            }
        }
    }
}

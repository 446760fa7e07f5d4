//! The documentation of the checks cannot drift from the registry: `generate` renders it (checks.md, the man page)
//! into the package, and nothing keeps a copy.

use crate::common::check::run;
use rmp_eval::checks::Section;
use rmp_eval::registry::CHECKS;
use std::collections::HashSet;

#[test]
fn docs_checks_md_is_the_registry_rendered() {
    let dir = tempfile::Builder::new()
        .prefix("ck-docs")
        .tempdir()
        .unwrap();
    let o = run(&["generate", dir.path().to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("checks.md")).unwrap();
    assert_eq!(md, rmp_eval::registry::doc::markdown());
    assert!(md.contains("### `preempt_rt` — "), "{md}");
    // The ids in the page and the man page: registry::doc's own tests.
    let man = std::fs::metadata(dir.path().join("rmp-eval-checks.7")).unwrap();
    assert!(man.len() > 0, "rmp-eval-checks.7 is empty");
}

#[test]
fn registry_ids_are_unique_documented_and_use_known_remedies() {
    let mut seen = HashSet::new();
    for c in CHECKS {
        assert!(seen.insert(c.id), "duplicate id {}", c.id);
        assert!(
            c.doc.contains("Passes") || c.doc.contains("Fails"),
            "{}: doc says not what passes",
            c.id
        );
        if let Some(r) = c.remedy {
            assert!(
                rmp_eval::remedy::StepId::ALL.contains(&r),
                "{}: unknown remedy {r}",
                c.id
            );
        }
    }
    // The original tool's 22 ids, stable, in their sections, and at least 12 more.
    let design = [
        (
            Section::System,
            "preempt_rt swap timer_migration rt_throttling clocksource af_xdp futex_hash",
        ),
        (
            Section::Core,
            "core_isolated nohz_full rcu_nocbs governor cpu_frequency irqaffinity unrelated_irqs smt_sibling cstates turbo",
        ),
        (
            Section::Nic,
            "nic_present nic_link nic_quiet nic_irqs_pinned rps",
        ),
    ];
    let mut n = 0;
    for (sec, ids) in design {
        for id in ids.split_whitespace() {
            let c = rmp_eval::checks::CheckId::parse(id)
                .and_then(rmp_eval::registry::find)
                .unwrap_or_else(|| panic!("{id} missing"));
            assert_eq!(c.section, sec, "{id}");
            n += 1;
        }
    }
    assert_eq!(n, 22);
    assert!(CHECKS.len() >= 22 + 12, "only {} checks", CHECKS.len());
}

#[test]
fn check_runs_no_subprocess() {
    // The original ran lscpu and zcat through a shell; check reads files only.
    let root = env!("CARGO_MANIFEST_DIR");
    let mut files = vec![
        format!("{root}/src/commands/check.rs"),
        format!("{root}/src/commands/snapshot.rs"),
        format!("{root}/src/report/check.rs"),
    ];
    let mut dirs = vec![format!("{root}/src/checks"), format!("{root}/src/parse")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path().to_string_lossy().into_owned();
            if e.path().is_dir() {
                dirs.push(p); // a module's own folder (parse/cpulist/tests.rs)
            } else {
                files.push(p);
            }
        }
    }
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap();
        for bad in [
            "process::Command",
            "Command::new",
            "libc::system",
            "popen",
            "execv",
        ] {
            assert!(!src.contains(bad), "{f} uses {bad}");
        }
    }
}

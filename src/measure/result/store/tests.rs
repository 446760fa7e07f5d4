use super::*;

fn result(label: &str, period_us: u32) -> RunResult {
    RunResult {
        period_us,
        label: label.into(),
        ..RunResult::for_test(vec![])
    }
}

#[test]
fn utc_dates() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    // 2000-02-29 (leap day of a century leap year) and a date late in 2026 (date -u -d @1796207979).
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(stamp(1_796_207_979), "20261202T103939Z");
}

#[test]
fn names() {
    assert_eq!(
        parse_name("20261202T103939Z-run.json"),
        Some(("20261202T103939Z", "run", 1))
    );
    assert_eq!(
        parse_name("20261202T103939Z-before-3.json"),
        Some(("20261202T103939Z", "before", 3))
    );
    assert_eq!(parse_name("20261202T103939Z-other.json"), None);
    assert_eq!(parse_name("2026120XT103939Z-run.json"), None);
    assert_eq!(parse_name("notes.txt"), None);
}

#[test]
fn save_then_resolve_newest_by_label() {
    let d = tempfile::tempdir().unwrap();
    let h = Host::with_root(d.path());
    assert!(newest(&h, "last").unwrap().is_none());
    let a = save(&h, &result("before", 1000), 1_796_207_979).unwrap();
    let b = save(&h, &result("before", 500), 1_796_207_979).unwrap();
    let c = save(&h, &result("after", 250), 1_796_207_980).unwrap();
    assert!(a.starts_with(d.path().join("var/lib/rmp-eval/results")));
    assert!(
        b.to_string_lossy()
            .ends_with("20261202T103939Z-before-2.json")
    );
    assert_eq!(newest(&h, "before").unwrap().unwrap(), b);
    assert_eq!(resolve(&h, "last").unwrap(), c);
    assert_eq!(
        load(&resolve(&h, "before").unwrap()).unwrap().period_us,
        500
    );
    assert!(matches!(resolve(&h, "run"), Err(Error::Usage(_))));
    assert!(matches!(
        resolve(&h, "/nonexistent.json"),
        Err(Error::Usage(_))
    ));
    std::fs::write(d.path().join("x.json"), "{}").unwrap();
    assert!(matches!(
        load(&d.path().join("x.json")),
        Err(Error::Usage(_))
    ));
}

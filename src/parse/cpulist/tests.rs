use super::*;

#[test]
fn kernel_samples() {
    // /sys/devices/system/cpu/online of the captured Debian 12 RT guest and of a 4-core i3-13100TE.
    assert_eq!(parse("0-1\n").unwrap(), vec![0, 1]);
    assert_eq!(parse("0-3").unwrap(), vec![0, 1, 2, 3]);
    // /sys/devices/system/cpu/isolated when nothing is isolated is an empty line.
    assert_eq!(parse("\n").unwrap(), Vec::<usize>::new());
    // nohz_full reads "(null)" on the captured untuned guest (Debian 6.1 kernel without nohz_full=).
    assert_eq!(parse("(null)\n").unwrap(), Vec::<usize>::new());
    // Hand-written lists with spaces, as users put them on the kernel command line.
    assert_eq!(parse(" 1, 3-4 ,7").unwrap(), vec![1, 3, 4, 7]);
    assert_eq!(parse("3,1,3").unwrap(), vec![1, 3]);
    // Stride form from Documentation/admin-guide/kernel-parameters.rst: 0-9:2/5 → 0,1,5,6.
    assert_eq!(parse("0-9:2/5").unwrap(), vec![0, 1, 5, 6]);
    // lib/bitmap-str.c's own example: 0-1023:2/256 → 0,1,256,257,512,513,768,769.
    assert_eq!(
        parse("0-1023:2/256").unwrap(),
        vec![0, 1, 256, 257, 512, 513, 768, 769]
    );
}

#[test]
fn kernel_grammar_all_n_and_empty_items() {
    // "all" and "N" need the machine's width (nr_cpu_ids), as in the kernel.
    assert_eq!(parse_for("all", Some(4)).unwrap(), vec![0, 1, 2, 3]);
    assert_eq!(parse_for("ALL", Some(2)).unwrap(), vec![0, 1]);
    assert_eq!(parse_for("2-N", Some(6)).unwrap(), vec![2, 3, 4, 5]);
    assert_eq!(parse_for("N", Some(6)).unwrap(), vec![5]);
    assert_eq!(parse_for("all:1/2", Some(6)).unwrap(), vec![0, 2, 4]);
    assert!(parse("all").is_err() && parse("1-N").is_err());
    // bitmap_find_region skips runs of separators: these are valid kernel lists.
    assert_eq!(parse("1,,2").unwrap(), vec![1, 2]);
    assert_eq!(parse(",,,").unwrap(), Vec::<usize>::new());
    assert_eq!(parse("1 2\t3").unwrap(), vec![1, 2, 3]);
    // A used count of 0 is accepted and sets nothing; leading zeros are fine.
    assert_eq!(parse("0-9:0/5").unwrap(), Vec::<usize>::new());
    assert_eq!(parse("007").unwrap(), vec![7]);
    // A CPU beyond the machine is -ERANGE.
    assert!(parse_for("4", Some(4)).is_err());
}

#[test]
fn malformed_lists_are_errors() {
    for bad in [
        "a",
        "1-",
        "-1",
        "3-1",
        "0-99999",
        "1:2",
        "0-9:3/2",
        "0-9:1/0",
        "2-N",
        "1.5",
        "1-2-3",
        "+1",
        "99999999999999999999",
    ] {
        assert!(parse(bad).is_err(), "{bad:?} accepted");
    }
    let e = parse("0-x").unwrap_err().to_string();
    assert!(e.contains("0-x") && e.contains("'x'"), "{e}");
}

#[test]
fn errors_are_one_clean_short_line() {
    let e = parse("1\n\x1b[2J\x1b[Hforged\nline3 x")
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n') && !e.contains('\x1b'), "{e:?}");
    let huge = format!("{}x", "1,".repeat(20_000));
    let e = parse(&huge).unwrap_err().to_string();
    assert!(e.len() < 200, "{} bytes", e.len());
    let e = parse(&"9".repeat(50_000)).unwrap_err().to_string();
    assert!(e.len() < 200, "{} bytes", e.len());
}

#[test]
fn hostile_lengths_cost_little() {
    // 70 kB of "0-8191," (the 5 s case) is refused as too long; 60 kB is parsed word-at-a-time.
    let long = "0-8191,".repeat(10_000);
    assert_eq!(parse(&long).unwrap_err().why, Malformed::TooLong);
    let ok = "0-8191,".repeat(8_000);
    assert_eq!(parse(&ok).unwrap().len(), 8192);
    let strided = "0-8191:1/2,".repeat(5_000);
    assert_eq!(parse(&strided).unwrap().len(), 4096);
}

#[test]
fn format_roundtrips() {
    assert_eq!(format(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    assert_eq!(format(&[]), "");
    assert_eq!(format(&[3]), "3");
    for s in ["0-3", "1,3-4,7", "0,2,4-6"] {
        assert_eq!(format(&parse(s).unwrap()), s);
    }
}

//! What a user reads when the command line is wrong: clap's messages whole (what is
//! missing, "a similar subcommand exists"), one wrong-NIC message listing the interfaces there are, whole-number
//! errors in words, a run without SCHED_FIFO permission that says so before anything else, and bare `rmp-eval`
//! printing the four verbs instead of measuring.

use crate::common;

use common::check::*;

/// (exit code, stdout, stderr).
fn rmp(args: &[&str]) -> (Option<i32>, String, String) {
    let o = run(args);
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

#[test]
fn parser_messages_are_whole() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["reflect"],
            "rmp-eval: the following required arguments were not provided: --nic <IF>\n\
             Usage: rmp-eval reflect --nic <IF>\n",
        ),
        (
            &["chek"],
            "rmp-eval: unrecognized subcommand 'chek'; a similar subcommand exists: 'check'\n",
        ),
        (
            &["compare", "last"],
            "rmp-eval: the following required arguments were not provided: <AFTER>\n\
             Usage: rmp-eval compare <BEFORE> <AFTER>\n",
        ),
        (
            &["run", "--iterations", "1.5"],
            "rmp-eval: invalid value '1.5' for '--iterations <N>': '1.5' is not a whole number (1 or more)\n",
        ),
        (
            &["run", "--send-priority", "100"],
            "rmp-eval: invalid value '100' for '--send-priority <P>': 100 is out of range (1 to 99)\n",
        ),
        (
            &["-i", "x"],
            "rmp-eval: invalid value 'x' for '--iterations <N>': 'x' is not a whole number (1 or more)\n",
        ),
    ];
    for (args, want) in cases {
        let (code, out, err) = rmp(args);
        assert_eq!(code, Some(2), "{args:?}");
        assert_eq!(err, *want, "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
}

#[test]
fn a_wrong_nic_gets_one_message_listing_the_interfaces_everywhere() {
    let root = fixture("seed-i3-13100te");
    let r = root.to_str().unwrap();
    let want = "rmp-eval: --nic eth9: no such network interface (interfaces here: enp2s0, lo)\n";
    for args in [
        &["--root", r, "check", "--nic", "eth9"][..],
        &["--root", r, "run", "--nic", "eth9", "-i", "10"],
        &[
            "--root",
            r,
            "fix",
            "--core",
            "3",
            "--nic",
            "eth9",
            "--dry-run",
        ],
    ] {
        let (code, out, err) = rmp(args);
        assert_eq!((code, err.as_str()), (Some(2), want), "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    // reflect works on the live machine only: the same words, this machine's interfaces (other tests add and
    // remove veth pairs meanwhile, so only the ones that stay are compared).
    let (code, _, err) = rmp(&["reflect", "--nic", "eth9x"]);
    assert_eq!(code, Some(2));
    let listed = err
        .strip_prefix("rmp-eval: --nic eth9x: no such network interface (interfaces here: ")
        .and_then(|r| r.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("{err}"));
    let names: Vec<&str> = listed.split(", ").collect();
    assert!(names.contains(&"lo"), "{err}");
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted: {err}");
}

#[test]
fn bare_rmp_eval_prints_the_four_verbs_and_measures_nothing() {
    let (code, out, err) = rmp(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    for verb in ["check", "run", "fix", "rollback"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("  {verb} "))
                    && l.contains(&format!("rmp-eval {verb}"))),
            "{verb} missing:\n{out}"
        );
    }
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    assert!(!out.contains("Cyclic") && !out.contains("Checks"), "{out}");
    // --help opens with the workflow, before the original's options.
    let (_, help, _) = rmp(&["--help"]);
    let workflow = help.find("rmp-eval check --core 3").expect(&help);
    let legacy = help.find("Options of the original rmp-eval").expect(&help);
    assert!(workflow < legacy, "{help}");
}

#[test]
fn without_sched_fifo_permission_run_says_so_before_printing_checks() {
    if !common::require_root("without_sched_fifo_permission_run_says_so_before_printing_checks") {
        return;
    }
    // As nobody (no CAP_SYS_NICE, RLIMIT_RTPRIO 0), with the configuration checks on.
    let o = common::as_nobody()
        .args(["run", "-i", "100"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "rmp-eval: no permission for SCHED_FIFO priority 42: run as root (or with CAP_SYS_NICE)\n"
    );
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
}

#[test]
fn a_nic_run_under_root_is_refused_before_it_prints_or_makes_anything() {
    let r = common::fix::Root::untuned();
    let start = r.tree();
    let o = r.rmp("run", &["--nic", "enp0s2", "--duration", "1"]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert_eq!(
        err,
        "rmp-eval: --nic measures the live machine: drop --root\n"
    );
    assert!(out.is_empty(), "{out}");
    assert_eq!(common::fix::diff(&start, &r.tree()), Vec::<String>::new());
}

//! What the generated man pages add to clap's: EXAMPLES for each verb, the WORKFLOW every page shows (check →
//! run → fix → reboot → run → compare → rollback), and SEE ALSO. The examples are parsed by the real CLI in the
//! tests below, so a page cannot show a command the program would refuse.

use crate::registry::doc::roff;

/// (verb, [(command line, what it does)]). The main page shows the first example of each verb.
pub(crate) const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "check",
        &[
            (
                "rmp-eval check --core 3 --nic enp2s0",
                "what falls short for RT core 3 and the EtherCAT NIC, and why",
            ),
            (
                "rmp-eval check --json",
                "the same as JSON, for scripts (exit 1 failed, 4 only warnings, 5 reboot pending)",
            ),
            (
                "rmp-eval check --pid 1234",
                "also audit the running controller: its thread's policy, priority and CPUs",
            ),
            (
                "rmp-eval --root snap/ check --core 3",
                "check a snapshot taken on another machine",
            ),
        ],
    ),
    (
        "run",
        &[
            (
                "rmp-eval run --core 3 --duration 10m",
                "measure cyclic latency on CPU 3 for ten minutes",
            ),
            (
                "rmp-eval run --core 3 --duration 1h --load cpu,io",
                "the same under load (stress-ng), as production sees it",
            ),
            (
                "rmp-eval run --nic enp2s0 --duration 10m",
                "EtherCAT round trips to the SubDevice on enp2s0",
            ),
            (
                "rmp-eval run --duration 24h --output day.json",
                "a commissioning run, its result kept in day.json",
            ),
            (
                "rmp-eval run --hwlat --core 3 --duration 10m",
                "the kernel's hardware latency detector: gaps the firmware (SMIs) makes",
            ),
        ],
    ),
    (
        "fix",
        &[
            (
                "rmp-eval fix --core 3 --nic enp2s0 --dry-run",
                "show the plan: each step's diff, risks, and what needs a reboot",
            ),
            (
                "rmp-eval fix --core 3 --nic enp2s0",
                "pick the steps on the terminal, confirm, apply, measure before and after",
            ),
            (
                "rmp-eval fix --core 3 --only sysctl,irq_affinity --yes",
                "apply two steps without asking",
            ),
        ],
    ),
    (
        "rollback",
        &[
            (
                "rmp-eval rollback --dry-run",
                "what would be put back, and where someone changed a file since",
            ),
            (
                "rmp-eval rollback --yes",
                "undo every fix run, newest first, files byte for byte",
            ),
        ],
    ),
    (
        "compare",
        &[
            (
                "rmp-eval compare",
                "fix's before against the after measured by itself after the reboot",
            ),
            (
                "rmp-eval compare before.json last",
                "two saved results; it warns when their lengths or loads differ",
            ),
        ],
    ),
    (
        "report",
        &[(
            "rmp-eval report before after -o tuning.html",
            "both runs overlaid in one HTML page",
        )],
    ),
    (
        "reflect",
        &[(
            "rmp-eval reflect --nic veth1",
            "answer EtherCAT frames on veth1 as a SubDevice would, until Ctrl+C",
        )],
    ),
    (
        "snapshot",
        &[(
            "rmp-eval snapshot pc7.tar.gz",
            "copy the files the checks read, for `rmp-eval --root` elsewhere",
        )],
    ),
    (
        "monitor",
        &[(
            "systemctl enable --now rmp-eval-monitor.timer",
            "run the monitor periodically (settings: /etc/default/rmp-eval)",
        )],
    ),
];

/// The commissioning story, the same on every page.
pub(crate) const WORKFLOW: &[(&str, &str)] = &[
    (
        "rmp-eval check --core 3 --nic enp2s0",
        "1. what falls short",
    ),
    (
        "rmp-eval run --core 3 --duration 10m",
        "2. measure, with the real load or --load",
    ),
    (
        "rmp-eval fix --core 3 --nic enp2s0",
        "3. repair: the plan, its risks, a journal",
    ),
    ("reboot", "4. when fix says the command line changed"),
    (
        "rmp-eval run --core 3 --duration 10m",
        "5. measure again, as long as before",
    ),
    ("rmp-eval compare", "6. before against after"),
    (
        "rmp-eval rollback",
        "7. if it made things worse: everything back",
    ),
];

fn items(list: &[(&str, &str)]) -> String {
    list.iter()
        .map(|(cmd, what)| format!(".TP\n\\fB{}\\fR\n{}\n", roff(cmd), roff(what)))
        .collect()
}

/// EXAMPLES (of `verb`, or the first of each verb on the main page), WORKFLOW and SEE ALSO, as roff.
pub(crate) fn tail(verb: Option<&str>) -> String {
    let mut t = String::from(".SH EXAMPLES\n");
    match verb {
        Some(v) => {
            let own = EXAMPLES
                .iter()
                .find(|(n, _)| *n == v)
                .map_or(&[][..], |e| e.1);
            t.push_str(&items(own));
        }
        None => {
            let first: Vec<(&str, &str)> = EXAMPLES.iter().map(|(_, l)| l[0]).collect();
            t.push_str(&items(&first));
        }
    }
    t.push_str(".SH WORKFLOW\n");
    t.push_str(&items(WORKFLOW));
    t.push_str(&format!(
        ".PP\n{}\n",
        roff(
            "A change to the kernel command line takes effect at the next boot; check shows it as pending until \
             then. Every file fix writes is journaled first under /var/lib/rmp-eval/journal. The user guide: \
             /usr/share/doc/rmp-eval/guide.md.gz, a page per task in /usr/share/doc/rmp-eval/tasks/ (zless)."
        )
    ));
    if let Some(v) = verb {
        t.push_str(".SH \"SEE ALSO\"\n");
        let others: Vec<String> = EXAMPLES
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| *n != v)
            .map(|n| format!("rmp-eval-{n}(8)"))
            .collect();
        t.push_str(&roff(&format!(
            "rmp-eval(8), {}, rmp-eval-checks(7)",
            others.join(", ")
        )));
        t.push('\n');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    /// Every example and workflow line that starts with rmp-eval parses with the real CLI, and each verb's
    /// examples use that verb: a renamed option breaks this test, not the page.
    #[test]
    fn every_example_is_a_command_the_program_accepts() {
        let all = EXAMPLES
            .iter()
            .flat_map(|(_, l)| l.iter())
            .chain(WORKFLOW.iter());
        let mut n = 0;
        for (cmd, _) in all.filter(|(c, _)| c.starts_with("rmp-eval ")) {
            let words: Vec<&str> = cmd.split_whitespace().collect();
            if let Err(e) = Cli::try_parse_from(&words) {
                panic!("{cmd}: {e}");
            }
            n += 1;
        }
        assert!(n >= 20, "{n}");
        for (verb, list) in EXAMPLES.iter().filter(|(v, _)| *v != "monitor") {
            for (cmd, _) in *list {
                assert!(cmd.split_whitespace().any(|w| w == *verb), "{verb}: {cmd}");
            }
        }
    }

    #[test]
    fn a_verb_page_has_its_examples_and_the_workflow() {
        let t = tail(Some("fix"));
        assert!(t.contains(".SH EXAMPLES\n.TP\n\\fBrmp\\-eval fix \\-\\-core 3 \\-\\-nic enp2s0 \\-\\-dry\\-run\\fR\n"), "{t}");
        assert!(!t.contains("rmp\\-eval rollback \\-\\-yes"), "{t}");
        assert!(t.contains(".SH WORKFLOW\n"), "{t}");
        assert!(
            t.contains("rmp\\-eval\\-rollback(8)") && !t.contains("rmp\\-eval\\-fix(8)"),
            "{t}"
        );
    }
}

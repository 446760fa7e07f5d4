//! `rmp-eval generate DIR` (hidden): writes the man pages and the shell completions from the clap definition, so
//! that they can never disagree with the program. The package build runs it (for a cross build, with the build
//! machine's own binary: the output does not depend on the architecture).

mod man_extra;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GenerateArgs};
use crate::error::{Error, Outcome, Result};
use crate::registry::doc::roff;

/// Section 8: a root tool (system administration).
const SECTION: &str = "8";
const NAME: &str = "rmp-eval";

pub(crate) fn execute(w: &mut dyn Write, args: &GenerateArgs) -> Result<Outcome> {
    let written = generate(&args.dir, source_date())?;
    for path in written {
        // Plain stdout is enough: the package build logs it; no colours, no terminal.
        crate::outln!(w, "{}", path.display());
    }
    Ok(Outcome::Good)
}

/// Writes rmp-eval.8 (and one page per visible command, which the main page refers to as rmp-eval-CMD(8)),
/// rmp-eval-checks.7 and checks.md (the registry's docs), rmp-eval.bash, _rmp-eval and rmp-eval.fish into `dir`;
/// returns the files written.
pub(crate) fn generate(dir: &Path, date: Option<String>) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).map_err(|e| Error::sys(format!("create {}", dir.display()), e))?;
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut written = Vec::new();
    man_pages(&cmd, dir, date.as_deref(), &mut written)?;
    for (name, text) in [
        (
            "rmp-eval-checks.7",
            crate::registry::doc::man_page(date.as_deref()),
        ),
        ("checks.md", crate::registry::doc::markdown()),
    ] {
        let path = dir.join(name);
        fs::write(&path, text).map_err(|e| Error::sys(format!("write {}", path.display()), e))?;
        written.push(path);
    }
    let mut visible = without_hidden(&cmd);
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let path = clap_complete::generate_to(shell, &mut visible, NAME, dir).map_err(|e| {
            Error::sys(
                format!("write the {shell} completion into {}", dir.display()),
                e,
            )
        })?;
        if shell == Shell::Bash {
            fix_bash_names(&path)?;
        }
        written.push(path);
    }
    Ok(written)
}

/// The command as users see it: the hidden commands (apply-saved, generate: for the package) are not completed.
fn without_hidden(cmd: &clap::Command) -> clap::Command {
    // The built command's own --help and --version are copied with the other arguments.
    let mut c = clap::Command::new(NAME)
        .about(cmd.get_about().cloned().unwrap_or_default())
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_flag(true)
        .disable_version_flag(true);
    for a in cmd.get_arguments() {
        c = c.arg(a.clone());
    }
    for s in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        c = c.subcommand(s.clone());
    }
    c.disable_help_subcommand(true)
}

/// clap_complete's bash script names the state of a subcommand "rmp__eval__subcmd__check" where it is set and
/// "rmp__subcmd__eval__subcmd__check" where it is matched (the '-' of a hyphenated program name is escaped twice),
/// so nothing after the subcommand was ever completed. One spelling for both.
fn fix_bash_names(path: &Path) -> Result<()> {
    let text =
        fs::read_to_string(path).map_err(|e| Error::sys(format!("read {}", path.display()), e))?;
    let fixed = text.replace("rmp__subcmd__eval", "rmp__eval");
    fs::write(path, fixed).map_err(|e| Error::sys(format!("write {}", path.display()), e))
}

fn man_pages(
    cmd: &clap::Command,
    dir: &Path,
    date: Option<&str>,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, dir, date, written)?;
    }
    let is_main = cmd.get_name() == NAME;
    // The main page gets a proper EXIT STATUS section (below) instead of clap_mangen's "EXTRA" heading.
    let page_cmd = if is_main {
        cmd.clone().after_help(None::<&str>)
    } else {
        cmd.clone()
    };
    let mut man = clap_mangen::Man::new(page_cmd)
        .section(SECTION)
        .manual("System Administration")
        .source(format!("{NAME} {}", env!("CARGO_PKG_VERSION")));
    if let Some(d) = date {
        man = man.date(d);
    }
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)
        .map_err(|e| Error::sys("render the man page", e))?;
    // Each page: EXAMPLES and the WORKFLOW (generate/man_extra.rs); the main page then its own tail.
    let verb = (!is_main).then(|| cmd.get_name());
    page.extend_from_slice(man_extra::tail(verb).as_bytes());
    if is_main {
        page.extend_from_slice(main_page_tail().as_bytes());
    }
    fs::write(&path, page).map_err(|e| Error::sys(format!("write {}", path.display()), e))?;
    written.push(path);
    Ok(())
}

/// EXIT STATUS (from the same text as `--help`), FILES (what the package installs and fix keeps) and SEE ALSO.
fn main_page_tail() -> String {
    let mut t = String::from(".SH \"EXIT STATUS\"\n");
    for (code, text) in crate::error::EXIT_STATUS {
        t.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", roff(text)));
    }
    t.push_str(".SH FILES\n");
    for (path, what) in FILES {
        t.push_str(&format!(".TP\n\\fI{}\\fR\n{}\n", roff(path), roff(what)));
    }
    t.push_str(".SH \"SEE ALSO\"\n");
    t.push_str(&roff(
        "cyclictest(8), update-grub(8), systemd.unit(5), udev(7)",
    ));
    t.push('\n');
    t
}

const FILES: &[(&str, &str)] = &[
    (
        "/var/lib/rmp-eval/journal/",
        "fix's journal: the old value of everything it changed, read by rollback",
    ),
    (
        "/var/lib/rmp-eval/runtime.json",
        "runtime tunings saved by fix, re-applied at boot by rmp-eval.service",
    ),
    (
        "/var/lib/rmp-eval/cmdline",
        "kernel parameters managed by fix, appended by the GRUB drop-in",
    ),
    (
        "/var/lib/rmp-eval/results/",
        "every run's result as JSON, named <UTC time>-<label>.json",
    ),
    (
        "/etc/default/grub.d/99-rmp-eval.cfg",
        "GRUB drop-in: appends the contents of /var/lib/rmp-eval/cmdline",
    ),
];

/// The man page date: from SOURCE_DATE_EPOCH (set by dpkg-buildpackage from the changelog) so that two builds of
/// the same version produce the same bytes; none otherwise.
fn source_date() -> Option<String> {
    let secs: i64 = std::env::var("SOURCE_DATE_EPOCH")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(crate::wallclock::date(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The main page: its date, the check page referred to, the exit codes, one example per verb.
    fn main_page_refers_to_the_verbs(dir: &Path) {
        let page = fs::read_to_string(dir.join("rmp-eval.8")).unwrap();
        assert!(
            page.contains(".TH rmp-eval 8 2025-12-02 "),
            "{}",
            &page[..page.len().min(300)]
        );
        assert!(
            page.contains("rmp\\-eval\\-check(8)"),
            "main page does not refer to the check page"
        );
        assert!(
            page.contains(".SH \"EXIT STATUS\"\n.TP\n\\fB0\\fR\nall good"),
            "exit code 0 missing from the page"
        );
        assert!(
            page.contains("\\fB2\\fR\ncould not do the job"),
            "exit code 2 missing from the page"
        );
        assert!(
            !page.contains("EXTRA"),
            "clap_mangen's EXTRA heading is still there"
        );
        // Every verb page has its own examples and the workflow; the main page one example per verb.
        assert!(page.contains(".SH EXAMPLES\n") && page.contains(".SH WORKFLOW\n"));
        assert!(
            page.contains("\\fBrmp\\-eval snapshot pc7.tar.gz\\fR"),
            "main page: one example per verb"
        );
    }

    /// Every verb page has its own examples and the workflow.
    fn every_verb_page_has_examples_and_the_workflow(dir: &Path) {
        for verb in [
            "check", "run", "fix", "rollback", "compare", "snapshot", "reflect", "report",
        ] {
            let p = fs::read_to_string(dir.join(format!("rmp-eval-{verb}.8"))).unwrap();
            let ex = p
                .split(".SH EXAMPLES\n")
                .nth(1)
                .unwrap_or_else(|| panic!("{verb}: no EXAMPLES"));
            assert!(
                ex.starts_with(&format!(".TP\n\\fBrmp\\-eval {verb}")),
                "{verb}: {ex}"
            );
            assert!(
                p.contains(".SH WORKFLOW\n.TP\n\\fBrmp\\-eval check"),
                "{verb}"
            );
            assert!(p.contains("rmp\\-eval\\-checks(7)"), "{verb}");
        }
    }

    #[test]
    fn writes_every_page_and_completion_from_the_cli() {
        let dir = tempfile::tempdir().unwrap();
        let written = generate(dir.path(), Some("2025-12-02".into())).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for want in [
            "rmp-eval.8",
            "rmp-eval-check.8",
            "rmp-eval-fix.8",
            "rmp-eval.bash",
            "_rmp-eval",
            "rmp-eval.fish",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{want} missing from {names:?}"
            );
        }
        // Hidden commands are for the package, not for users.
        assert!(
            !names
                .iter()
                .any(|n| n.contains("generate") || n.contains("apply-saved")),
            "{names:?}"
        );

        main_page_refers_to_the_verbs(dir.path());
        every_verb_page_has_examples_and_the_workflow(dir.path());
        let bash = fs::read_to_string(dir.path().join("rmp-eval.bash")).unwrap();
        assert!(
            bash.contains("--period-us") && bash.contains("rollback"),
            "bash completion lacks run/rollback"
        );
        let fish = fs::read_to_string(dir.path().join("rmp-eval.fish")).unwrap();
        assert!(
            fish.contains("complete -c rmp-eval"),
            "fish completion is not for rmp-eval"
        );
    }

    #[test]
    fn an_unwritable_directory_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain-file");
        fs::write(&file, "x").unwrap();
        assert!(generate(&file.join("sub"), None).is_err());
    }
}

//! The command-line contract (docs/guide.md). The original tool's options are accepted with their meanings; its
//! multi-letter short options (`-sp`, `-rc`, …) are not clap short flags and are mapped by `normalize_args`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod legacy;
mod run;
mod values;
mod verbs;

pub(crate) use legacy::LegacyArgs;
pub(crate) use run::RunArgs;
pub(crate) use verbs::{
    ApplySavedArgs, CheckArgs, CompareArgs, FixArgs, GenerateArgs, MonitorArgs, QualifyArgs,
    ReflectArgs, ReportArgs, RollbackArgs, SnapshotArgs,
};

/// The exit statuses as `--help` ends with them (crate::error::EXIT_STATUS).
pub(crate) fn exit_codes() -> String {
    let mut t = String::from("Exit status:");
    for (code, meaning) in crate::error::EXIT_STATUS {
        t.push_str(&format!("\n  {code}  {meaning}"));
    }
    t
}

/// What bare `rmp-eval` prints: the four verbs, one example each (80 columns).
pub const SHORT_USAGE: &str = "\
rmp-eval: can this PC run an EtherCAT motion controller in real time?

Usage: rmp-eval <COMMAND> [OPTIONS]

  check     rmp-eval check --core 3 --nic enp2s0   what falls short, and why
  run       rmp-eval run --duration 10m            measure the latency
  fix       rmp-eval fix --core 3 --nic enp2s0     repair: diffs, journal
  rollback  rmp-eval rollback                      undo what fix did

Also: compare, reflect, snapshot. Options: rmp-eval COMMAND --help.
The workflow: rmp-eval --help, man rmp-eval. The original tool's options
(-i, -n, -s, ...) still work when given.
";

const LONG_ABOUT: &str = "\
Tells whether this PC can run an EtherCAT motion controller in real time, shows why not, and makes it so.

The workflow (as root):
  rmp-eval check --core 3 --nic enp2s0     what falls short, and which fix step repairs it
  rmp-eval run --duration 10m              measure; --nic enp2s0 measures EtherCAT round trips
  rmp-eval fix --core 3 --nic enp2s0       diffs, confirm, journal, before/after measurement
  reboot                                   when fix changed the kernel command line
  rmp-eval run --duration 10m && rmp-eval compare before last
  rmp-eval rollback                        undo everything fix applied, byte for byte

Without a command but with the original rmp-eval's options (-i, -n, -s, -sp, ...), behaves as the original: \
configuration checks, then the cyclic test (no --nic) or the sender/receiver test.";

#[derive(Debug, Parser)]
#[command(
    name = "rmp-eval",
    version,
    about = "Evaluate, measure and tune a Linux PC for real-time EtherCAT motion control",
    long_about = LONG_ABOUT,
    after_help = exit_codes(),
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Take every /sys, /proc, /etc, /boot, /dev, /var and /run path under DIR (a fixture tree or a snapshot)
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Never colour the output (NO_COLOR in the environment does the same)
    #[arg(long, global = true)]
    pub no_color: bool,

    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub(crate) legacy: LegacyArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the configuration: kernel, RT core, NIC
    Check(CheckArgs),
    /// Measure cyclic wakeup latency, or EtherCAT round trips with --nic
    Run(RunArgs),
    /// Propose and apply the remedies for failing checks (diffs, journal, before/after measurement)
    Fix(FixArgs),
    /// Undo everything fix applied, newest first
    Rollback(RollbackArgs),
    /// Tune and measure unattended across reboots (trial boots first): will this PC hold this cycle time?
    Qualify(QualifyArgs),
    /// Compare two saved results (file paths, or "last", "before", "after")
    Compare(CompareArgs),
    /// Plots of one or more saved results in one self-contained HTML page (overlaid when several)
    Report(ReportArgs),
    /// Act as a software EtherCAT SubDevice on IF (echoes frames, increments the working counter)
    Reflect(ReflectArgs),
    /// Copy exactly the files the checks read into OUT (a directory, or OUT.tar.gz) for `check --root`
    Snapshot(SnapshotArgs),
    /// The "after" measurement fix armed for the next boot (run by rmp-eval-after-boot.service)
    #[command(hide = true)]
    AfterBoot,
    /// One pass of the fleet monitor (rmp-eval-monitor.timer): check, drift of what fix saved, a short run, metrics
    Monitor(MonitorArgs),
    /// Re-apply the runtime tunings saved by fix (run at boot by the systemd unit, and by the udev rule)
    #[command(hide = true)]
    ApplySaved(ApplySavedArgs),
    /// Write the man page and shell completions into DIR (used by the package build)
    #[command(hide = true)]
    Generate(GenerateArgs),
}

/// clap's error message, whole but compact: its first line with the details clap indents under it (what is
/// missing, "a similar subcommand exists: 'check'") on one line, then (`with_usage`: for missing arguments, where
/// it shows what to give) its usage line; without the blank lines and the "For more information" line.
pub fn parse_error(rendered: &str, with_usage: bool) -> String {
    let mut lines = rendered
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information"));
    let first = lines.next().unwrap_or("invalid arguments");
    let mut msg = format!(
        "rmp-eval: {}",
        first.strip_prefix("error: ").unwrap_or(first)
    );
    let mut usage = None;
    let mut details = Vec::new();
    for l in lines {
        if l.starts_with("Usage:") {
            usage = Some(l.to_string());
        } else {
            details.push(l.trim().trim_start_matches("tip: ").to_string());
        }
    }
    if !details.is_empty() {
        if !msg.ends_with(':') {
            msg.push(';');
        }
        msg.push(' ');
        msg.push_str(&details.join(", "));
    }
    msg.push('\n');
    if let Some(u) = usage.filter(|_| with_usage) {
        msg.push_str(&u);
        msg.push('\n');
    }
    msg
}

/// Maps the original tool's multi-letter short options to their long names, before clap sees them.
pub fn normalize_args<I: IntoIterator<Item = OsString>>(args: I) -> Vec<OsString> {
    const MAP: &[(&str, &str)] = &[
        ("-sp", "--send-priority"),
        ("-rp", "--receive-priority"),
        ("-sc", "--send-cpu"),
        ("-rc", "--receive-cpu"),
        ("-nc", "--no-config"),
        ("-oc", "--only-config"),
    ];
    args.into_iter()
        .map(|a| {
            let Some(s) = a.to_str() else { return a };
            for (short, long) in MAP {
                if s == *short {
                    return OsString::from(*long);
                }
                if let Some(v) = s.strip_prefix(short).and_then(|r| r.strip_prefix('=')) {
                    return OsString::from(format!("{long}={v}"));
                }
            }
            a
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(normalize_args(args.iter().map(OsString::from)))
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn fix_only_help_names_every_step_in_apply_order() {
        let mut cmd = Cli::command();
        let fix = cmd.find_subcommand_mut("fix").expect("fix");
        let only = fix
            .get_arguments()
            .find(|a| a.get_id() == "only")
            .expect("--only");
        let help = only
            .get_help()
            .expect("help")
            .to_string()
            .replace('\n', " ");
        let list = help.split(": ").nth(1).expect(&help);
        let named: Vec<&str> = list
            .split(" (")
            .next()
            .unwrap()
            .split(", ")
            .map(str::trim)
            .collect();
        let all: Vec<&str> = crate::remedy::StepId::ALL
            .iter()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(named, all, "{help}");
    }

    #[test]
    fn original_short_options_map() {
        let c = parse(&["rmp-eval", "-sp", "50", "-rc", "1", "-nc", "-i", "100"]).unwrap();
        assert_eq!(c.legacy.send_priority, 50);
        assert_eq!(c.legacy.receive_cpu, Some(1));
        assert!(c.legacy.no_config);
        assert_eq!(c.legacy.iterations, Some(100));
    }

    #[test]
    fn global_options_go_before_the_command() {
        let c = parse(&[
            "rmp-eval",
            "--root",
            "/tmp/x",
            "--no-color",
            "check",
            "--core",
            "1",
        ])
        .unwrap();
        assert_eq!(c.root.as_deref(), Some(std::path::Path::new("/tmp/x")));
        assert!(c.no_color);
        assert!(matches!(c.command, Some(Command::Check(ref a)) if a.core == Some(1)));
    }

    #[test]
    fn original_options_before_a_command_are_noticed() {
        assert!(parse(&["rmp-eval", "check"]).unwrap().legacy.is_unset());
        assert!(
            parse(&["rmp-eval", "--root", "/x", "check"])
                .unwrap()
                .legacy
                .is_unset()
        );
        assert!(
            !parse(&["rmp-eval", "--nic", "eth0", "check"])
                .unwrap()
                .legacy
                .is_unset()
        );
        assert!(
            !parse(&["rmp-eval", "-sp", "50", "run"])
                .unwrap()
                .legacy
                .is_unset()
        );
    }

    #[test]
    fn bad_values_are_rejected() {
        for bad in [
            &["rmp-eval", "-i", "abc"][..],
            &["rmp-eval", "-i", "1.5"],
            &["rmp-eval", "-i", "-5"],
            &["rmp-eval", "-i", "0"],
            &["rmp-eval", "-s", "0"],
            &["rmp-eval", "-sp", "100"],
            &["rmp-eval", "check", "--core", "-1"],
            &["rmp-eval", "check", "--core", "x"],
            &["rmp-eval", "run", "--duration", "0"],
            &["rmp-eval", "run", "--duration", "nan"],
            &["rmp-eval", "run", "--duration", "inf"],
            &["rmp-eval", "run", "--duration", "1e3"],
            &["rmp-eval", "run", "--duration", "-5s"],
            &["rmp-eval", "run", "--duration", "5x"],
            &["rmp-eval", "run", "--duration", "m"],
            &["rmp-eval", "run", "--duration", "1.2.3s"],
            &["rmp-eval", "run", "--duration", "366d"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}

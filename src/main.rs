use std::process::ExitCode;

use clap::Parser;
use rmp_eval::cli::{Cli, normalize_args};
use rmp_eval::host::Host;
use rmp_eval::output::Output;

/// An error as the one line printed: names, paths and input it quotes (a tarball's member names, a file's
/// bytes) have their control characters escaped by the one escaper, so they cannot drive the terminal.
fn line(e: &dyn std::fmt::Display) -> String {
    rmp_eval::parse::text::sanitize(&e.to_string(), 2000)
}

fn main() -> ExitCode {
    // Bare `rmp-eval`: what it can do, not a measurement that runs until Ctrl+C.
    if std::env::args_os().len() <= 1 {
        print!("{}", rmp_eval::cli::SHORT_USAGE);
        return ExitCode::SUCCESS;
    }
    let cli = match Cli::try_parse_from(normalize_args(std::env::args_os())) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let usage = matches!(e.kind(), MissingRequiredArgument | MissingSubcommand);
            eprint!(
                "{}",
                rmp_eval::cli::parse_error(&e.render().to_string(), usage)
            );
            return ExitCode::from(2);
        }
    };
    let host = match cli.root.as_deref().map(Host::open_root) {
        None => Host::live(),
        Some(Ok(h)) => h,
        Some(Err(e)) => {
            eprintln!("rmp-eval: --root: {}", line(&e));
            return ExitCode::from(2);
        }
    };
    let out = Output::detect(cli.no_color);
    match rmp_eval::commands::dispatch(&host, out, cli) {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(e) => {
            eprintln!("rmp-eval: {}", line(&e));
            ExitCode::from(2)
        }
    }
}

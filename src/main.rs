use std::process::ExitCode;

use clap::Parser;
use rmp_eval::cli::{Cli, normalize_args};
use rmp_eval::host::Host;
use rmp_eval::output::Output;

fn main() -> ExitCode {
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
            // One line: clap's first line without its "error: " prefix.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!("rmp-eval: {}", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    let host = match cli.root.as_deref().map(Host::open_root) {
        None => Host::live(),
        Some(Ok(h)) => h,
        Some(Err(e)) => {
            eprintln!("rmp-eval: --root: {e}");
            return ExitCode::from(2);
        }
    };
    let out = Output::detect(cli.no_color);
    match rmp_eval::commands::dispatch(&host, out, cli) {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(e) => {
            eprintln!("rmp-eval: {e}");
            ExitCode::from(2)
        }
    }
}

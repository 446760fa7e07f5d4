//! `check`: verdicts on fixture roots and on this machine, its report, its command line, `--pid`/`--process`.

mod cgroup_isolation;
mod cli;
mod controller_process;
mod docs;
mod fail_closed;
mod firmware;
mod fixture_roots;
mod report_lines;
mod this_machine;
mod verdicts;

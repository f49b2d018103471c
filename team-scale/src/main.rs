//! `team-scale`: create or adopt a team, add and remove workers, shut down, reconcile, status.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The supervisor parses only its own arguments**: `team-scale supervise` is the first
//!   process of every worker pane, and an `up 64` starts 64 at once on two cores; it skips the
//!   whole command tree, logging setup and the tmux client it never uses.

mod cli;
mod cmd;
mod ctx;
mod priority;

use std::process::ExitCode;

use team_cli::{error, out};

fn main() -> ExitCode {
    // The first process of every worker pane (64 of them start at once on `up 64`) parses its
    // own arguments only, and sets up nothing it does not use (logging, the tmux client).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == team_core::supervisor::SUBCOMMAND)
    {
        let s: cli::SuperviseCli = team_cli::parse("team-scale");
        return team_cli::finish(cmd::supervise::run(s.args));
    }
    // A reader writing to a program yields the CPU before it even parses its command line.
    let args: Vec<std::ffi::OsString> = std::env::args_os().take(3).collect();
    priority::background_reader_early(&args, team_cli::env::is_off("TEAM_READERS_YIELD"));
    let cli: cli::Cli = team_cli::parse("team-scale");
    team_cli::init(&cli.global.common);
    team_cli::finish(cmd::run(cli))
}

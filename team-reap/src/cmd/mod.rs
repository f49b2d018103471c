//! One file per mode: `run` (scan, then kill; also the default), `scan`, `kill --from`.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **`team-reap` with no arguments at all** prints its usage and exits 64, like the other
//!   binaries; with options but no subcommand (`team-reap -q`, existing cron lines) it runs as
//!   `team-reap run`.

mod kill;
mod run;
mod scan;

use crate::cli::{Cli, Command};
use crate::ctx::Ctx;
use crate::error::CliResult;

/// Runs the chosen mode; returns the exit status.
pub fn run(cli: Cli) -> CliResult<i32> {
    if let Some(Command::Generate(a)) = &cli.cmd {
        return team_cli::generate::run::<Cli>(a, &crate::cli::MAN);
    }
    let ctx = Ctx::from_env(&cli.global)?;
    match cli.cmd {
        None | Some(Command::Run) => run::run(&ctx, &cli.global, run::Mode::Reap),
        Some(Command::Scan) => scan::run(&ctx, &cli.global),
        Some(Command::Kill(a)) => kill::run(&ctx, &cli.global, a),
        Some(Command::Generate(a)) => team_cli::generate::run::<Cli>(&a, &crate::cli::MAN),
    }
}

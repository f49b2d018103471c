//! One file per mode: `run` (the default: scan, then kill), `scan`, `kill --from`.

mod generate;
mod kill;
mod run;
mod scan;

use crate::cli::{Cli, Command};
use crate::ctx::Ctx;
use crate::error::CliResult;

/// Runs the chosen mode; returns the exit status.
pub fn run(cli: Cli) -> CliResult<i32> {
    let ctx = Ctx::from_env(&cli.global);
    match cli.cmd {
        None => run::run(&ctx, &cli.global, run::Mode::Reap),
        Some(Command::Scan) => scan::run(&ctx, &cli.global),
        Some(Command::Kill(a)) => kill::run(&ctx, &cli.global, a),
        Some(Command::Generate(a)) => Ok(generate::run(&a.what)?),
    }
}

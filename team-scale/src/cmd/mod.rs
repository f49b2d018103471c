//! One file per subcommand.

mod init;
mod policy;
mod reconcile;
mod status;
mod up;

use crate::cli::{Cli, Command};
use crate::ctx::Ctx;
use crate::error::CliResult;

/// Runs the chosen subcommand; returns the exit status.
pub fn run(cli: Cli) -> CliResult<i32> {
    let ctx = Ctx::from_env(&cli.global)?;
    match cli.cmd {
        Command::Init(a) => init::run(&ctx, a),
        Command::Status(a) => status::run(&ctx, a),
        Command::Up(a) => up::run(&ctx, a),
        Command::Policy(a) => policy::run(&ctx, a),
        Command::Reconcile(a) => reconcile::run(&ctx, a),
    }
}

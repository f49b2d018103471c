//! `team-scale`: create or adopt a team, add and remove workers, shut down, reconcile, status.

mod cli;
mod cmd;
mod ctx;

use std::process::ExitCode;

use team_cli::{error, out};

fn main() -> ExitCode {
    let cli: cli::Cli = team_cli::parse("team-scale");
    team_cli::init(&cli.global.common);
    team_cli::finish(cmd::run(cli))
}

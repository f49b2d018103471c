//! `team-reap`: a cron-safe reaper that kills only what is provably ours and provably abandoned.

mod cli;
mod cmd;
mod ctx;

use std::process::ExitCode;

use team_cli::{error, out};

fn main() -> ExitCode {
    let cli: cli::Cli = team_cli::parse("team-reap");
    team_cli::init(&cli.global.common);
    team_cli::finish(cmd::run(cli))
}

//! `team-audit`: the durable, tamper-evident log of destructive tmux actions; a pipeline
//! filter that records before it forwards; a hook for agent tool calls.

mod cli;
mod cmd;
mod logpath;
mod oracle;
mod shell;

use std::process::ExitCode;

use team_cli::{error, out};

fn main() -> ExitCode {
    let cli: cli::Cli = team_cli::parse("team-audit");
    team_cli::init(&cli.global.common);
    team_cli::finish(cmd::run(cli))
}

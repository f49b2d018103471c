//! `team-audit`: the durable, tamper-evident log of destructive tmux actions; a pipeline
//! filter that records before it forwards; a hook for agent tool calls.

mod cli;
mod cmd;
mod error;
mod logpath;
mod oracle;
mod out;
mod shell;

use std::process::ExitCode;

fn main() -> ExitCode {
    team_core::childenv::init(std::env::vars_os().map(|(k, _)| k));
    let code = match cli::parse() {
        Ok(cli) => {
            cli::init_tracing(cli.global.verbose);
            // A no-op unless built with the `failpoints` feature (tests only).
            team_core::failpoint::configure(std::env::var("TEAM_FAILPOINTS").ok().as_deref());
            cmd::run(cli).unwrap_or_else(error::report)
        }
        Err(code) => code,
    };
    ExitCode::from(u8::try_from(code).unwrap_or(70))
}

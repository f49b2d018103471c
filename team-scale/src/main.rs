//! `team-scale`: create or adopt a team, add and remove workers, shut down, reconcile, status.

mod cli;
mod cmd;
mod ctx;
mod error;
mod out;

use clap::Parser;

fn main() {
    team_core::childenv::init(std::env::vars_os().map(|(k, _)| k));
    let cli = error::parse_or_exit(cli::Cli::try_parse());
    error::init_tracing(cli.global.verbose);
    team_core::failpoint::configure(std::env::var("TEAM_FAILPOINTS").ok().as_deref());
    let code = match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => error::report(&e),
    };
    std::process::exit(code);
}

//! `team-reap`: a cron-safe reaper that kills only what is provably ours and provably abandoned.

mod cli;
mod cmd;
mod ctx;
mod error;
mod out;

use clap::Parser;

fn main() {
    team_core::childenv::init(std::env::vars_os().map(|(k, _)| k));
    let cli = cli::Cli::parse();
    error::init_tracing();
    team_core::failpoint::configure(std::env::var("TEAM_FAILPOINTS").ok().as_deref());
    let code = match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => error::report(&e),
    };
    std::process::exit(code);
}

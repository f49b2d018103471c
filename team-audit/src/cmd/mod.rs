//! One module per subcommand. Each `run` returns the exit code of a normal end, or an error
//! that `error::report` turns into a message and a code.

pub mod generate;
pub mod hook;
pub mod pass;
pub mod prune;
pub mod query;
pub mod record;
pub mod verify;

use crate::cli::{Cli, Command};
use crate::error::AppError;

pub fn run(cli: Cli) -> Result<i32, AppError> {
    let g = &cli.global;
    match cli.cmd {
        Command::Record(a) => record::run(g, a),
        Command::Generate(a) => Ok(generate::run(&a.what)?),
        Command::Pass(a) => pass::run(g, a),
        Command::Verify(a) => verify::run(g, a),
        Command::Query(a) => query::run(g, a),
        Command::Prune(a) => prune::run(g, a),
        Command::Hook(a) => {
            let oracle = crate::oracle::StateOracle {
                tmux_bin: which::which("tmux").unwrap_or_else(|_| "tmux".into()),
                tmux_tmpdir: std::env::var_os("TMUX_TMPDIR")
                    .filter(|s| !s.is_empty())
                    .map(Into::into)
                    .unwrap_or_else(|| "/tmp".into()),
                ambient: std::env::var("TMUX")
                    .ok()
                    .and_then(|t| t.split(',').next().map(Into::into))
                    .filter(|p: &std::path::PathBuf| p.is_absolute()),
                state_dir: std::env::var_os("TEAM_STATE_DIR").map(Into::into),
            };
            hook::run(g, a, &oracle)
        }
    }
}

//! One module per subcommand. Each `run` returns the exit code of a normal end, or an error
//! that `error::report` turns into a message and a code.

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
        Command::Generate(a) => team_cli::generate::run::<Cli>(&a, &crate::cli::MAN),
        Command::Pass(a) => pass::run(g, a),
        Command::Verify(a) => verify::run(g, a),
        Command::Query(a) => query::run(g, a),
        Command::Prune(a) => prune::run(g, a),
        Command::Hook(a) => {
            let oracle = crate::oracle::StateOracle {
                tmux_bin: team_cli::env::tmux_bin(),
                tmux_tmpdir: team_cli::env::tmux_tmpdir(),
                ambient: team_cli::env::ambient_socket(),
                state_dir: team_cli::env::state_dir(),
            };
            hook::run(g, a, &oracle)
        }
    }
}

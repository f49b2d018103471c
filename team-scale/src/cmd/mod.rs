//! One file per subcommand.

mod attach;
mod down;
mod empty_trash;
mod forget;
mod init;
mod interrupts;
mod list;
mod peek;
mod policy;
mod reconcile;
mod send;
mod shutdown;
mod status;
pub mod supervise;
mod task;
mod up;
mod watch;
mod worker_status;

use crate::cli::{Cli, Command};
use crate::ctx::Ctx;
use crate::error::CliResult;

/// Runs the chosen subcommand; returns the exit status.
pub fn run(cli: Cli) -> CliResult<i32> {
    if let Command::Generate(a) = &cli.cmd {
        return team_cli::generate::run::<Cli>(a, &crate::cli::MAN);
    }
    let cmd = match cli.cmd {
        Command::Supervise(a) => return supervise::run(a),
        Command::EmptyTrash(a) => return empty_trash::run(a),
        other => other,
    };
    crate::priority::background_reader(&cmd, team_cli::env::is_off("TEAM_READERS_YIELD"));
    let here = matches!(&cmd, Command::Init(a) if a.here);
    let ctx = Ctx::from_env(&cli.global, here, cmd.team(), cmd.scope())?;
    // Interruptible operations: roll back or finish the step in progress, then exit 130.
    let interruptible = match &cmd {
        Command::Up(a) => Some(a.team.clone()),
        Command::Down(a) => Some(a.team.clone()),
        Command::Shutdown(a) => Some(a.team.clone()),
        Command::Reconcile(a) => Some(a.team.clone()),
        _ => None,
    };
    if let Some(team) = interruptible {
        interrupts::install()?;
        let emptier = empty_trash::Emptier::start_early(&ctx, &cmd, &team);
        let res = dispatch(&ctx, cmd);
        let res = interrupts::finish(&ctx, &team, res);
        empty_trash::after(&ctx, &team, emptier);
        return res;
    }
    dispatch(&ctx, cmd)
}

fn dispatch(ctx: &Ctx, cmd: Command) -> CliResult<i32> {
    match cmd {
        Command::Init(a) => init::run(ctx, a),
        Command::Status(a) => status::run(ctx, a),
        Command::List => list::run(ctx),
        Command::Down(a) => down::run(ctx, a),
        Command::Shutdown(a) => shutdown::run(ctx, a),
        Command::Reconcile(a) => reconcile::run(ctx, a),
        Command::WorkerStatus(a) => worker_status::run(ctx, a),
        Command::Task(a) => task::run(ctx, a),
        Command::Up(a) => up::run(ctx, a),
        Command::Send(a) => send::send(ctx, a),
        Command::Peek(a) => peek::run(ctx, a),
        Command::Forget(a) => forget::run(ctx, a),
        Command::Attach(a) => attach::run(ctx, a),
        Command::Broadcast(a) => send::broadcast(ctx, a),
        Command::Policy(a) => policy::run(ctx, a),
        Command::Generate(a) => team_cli::generate::run::<Cli>(&a, &crate::cli::MAN),
        Command::Supervise(_) | Command::EmptyTrash(_) => unreachable!("handled above"),
    }
}

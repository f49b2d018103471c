//! Readers yield the CPU to writers.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **A reader whose output goes to a program runs at the lowest CPU priority** (`nice` 19):
//!   `status`, `list`, `task list`, `task show` and `peek`, when their standard output is not a
//!   terminal (an agent's tool call, a script, `watch`, a pipe) and `TEAM_READERS_YIELD` is not
//!   off. Readers already take no lock, so they never make a writer wait; but on a small machine
//!   twenty agents polling `status` back to back still take the CPUs from `up`/`down` (8x slower
//!   on two cores). At nice 19 a poller gets the CPU only when the control plane does not want
//!   it, and on an idle machine it is exactly as fast. A person at a terminal keeps the normal
//!   priority: a `status` typed by hand on a machine busy compiling stays instant.
//!   *Rejected:* `SCHED_IDLE` (about the same effect here, but a reader can then wait
//!   unboundedly behind any busy process, and setting it needs `unsafe` FFI); yielding in every
//!   case (a human's `status` would crawl behind a build); a lock-based reader throttle (it is
//!   CPU, not the lock, that writers lose).

use std::io::IsTerminal;

use crate::cli::{Command, TaskCmd};

/// The nice value a background reader takes (the lowest priority there is).
const BACKGROUND_NICE: i32 = 19;

/// Whether `cmd` only reads (the state, the task board, a pane's screen).
fn is_reader(cmd: &Command) -> bool {
    match cmd {
        Command::Status(_) | Command::List | Command::Peek(_) => true,
        Command::Task(t) => matches!(t.cmd, TaskCmd::List(_) | TaskCmd::Show(_)),
        _ => false,
    }
}

/// Lowers this process's CPU priority when `cmd` is a reader writing to a program (see the
/// module docs); `yield_off` is `TEAM_READERS_YIELD` switched off. A failure changes nothing
/// (the reader just keeps its priority).
pub fn background_reader(cmd: &Command, yield_off: bool) {
    if yields(cmd, yield_off, std::io::stdout().is_terminal()) {
        let _ = rustix::process::setpriority_process(None, BACKGROUND_NICE);
    }
}

/// Whether `cmd` yields the CPU: a reader, writing to a program, with yielding not off.
fn yields(cmd: &Command, yield_off: bool, stdout_is_terminal: bool) -> bool {
    !yield_off && !stdout_is_terminal && is_reader(cmd)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::yields;
    use crate::cli::Cli;

    fn cmd(args: &[&str]) -> crate::cli::Command {
        Cli::try_parse_from(std::iter::once("team-scale").chain(args.iter().copied()))
            .unwrap()
            .cmd
    }

    #[test]
    fn only_readers_writing_to_a_program_yield() {
        for r in [
            &["status", "t"][..],
            &["status", "t", "--watch"],
            &["list"],
            &["task", "list", "t"],
            &["task", "show", "t", "1"],
            &["peek", "t", "worker-1"],
        ] {
            assert!(yields(&cmd(r), false, false), "{r:?} yields to a program");
            assert!(
                !yields(&cmd(r), false, true),
                "{r:?} at a terminal keeps its priority"
            );
            assert!(!yields(&cmd(r), true, false), "{r:?} with yielding off");
        }
        for w in [
            &["up", "t", "1"][..],
            &["down", "t", "1"],
            &["task", "claim", "1", "t", "--worker", "worker-1"],
            &[
                "worker-status",
                "t",
                "--worker",
                "worker-1",
                "--state",
                "idle",
            ],
            &["send", "t", "worker-1", "hi"],
        ] {
            assert!(!yields(&cmd(w), false, false), "{w:?} changes the team");
        }
    }
}

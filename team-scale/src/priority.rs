//! Readers yield the CPU to writers.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **A reader whose output goes to a program runs at the lowest CPU priority**
//!   (`SCHED_IDLE`): `status`, `list`, `task list`, `task show` and `peek`, when their standard
//!   output is not a terminal (an agent's tool call, a script, `watch`, a pipe) and
//!   `TEAM_READERS_YIELD` is not off. It is set first thing in `main`, before the command line
//!   is parsed (or right after, when global options come before the subcommand). Readers already take no lock, so they never make a writer wait; but on a small
//!   machine twenty agents polling `status` back to back still take the CPUs from `up`/`down`
//!   (8x slower on two cores). In `SCHED_IDLE` a poller runs only when nothing else wants the
//!   CPU, and a writer that wakes (its fsync done, tmux's answer in) takes the CPU from it at
//!   once; on an idle machine the poller is exactly as fast. The price: on a machine saturated
//!   by other work such a reader gets a tiny share of the CPU and can take a second. A person
//!   at a terminal keeps the normal priority: a `status` typed by hand stays instant. A reader
//!   in `SCHED_IDLE` must not hold a lock a writer waits for, so every one of them reads the
//!   last committed state without a lock (`peek` included). One write remains: `status`
//!   recording that the team follows a re-created session (`view`), a rare step that takes
//!   the state lock for one commit; on a machine saturated by other work a yielding `status`
//!   can hold it for a second or so, which a writer waits out (`--wait`).
//!   *Rejected:* `nice 19` (no `unsafe`, but a waking writer still waits out the running
//!   poller's time slice at each of its twenty-odd waits: 2.2x instead of 1.5x under twenty
//!   `status` loops); yielding in every case (a human's `status` would crawl behind a build); a
//!   lock-based reader throttle (it is CPU, not the lock, that writers lose).

use std::io::IsTerminal;

use crate::cli::{Command, TaskCmd};

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
        lower();
    }
}

/// [`background_reader`] from the raw arguments, before the command line is parsed (about a
/// fifth of a `status`, measured from its `exec`): when the subcommand comes first, as it does
/// but for global options written before it (those readers yield once parsed).
pub fn background_reader_early(args: &[std::ffi::OsString], yield_off: bool) {
    if !yield_off && reader_words(args) && !std::io::stdout().is_terminal() {
        lower();
    }
}

/// Whether the words after the program name start with a reader's subcommand.
fn reader_words(args: &[std::ffi::OsString]) -> bool {
    let word = |i: usize| args.get(i).and_then(|a| a.to_str());
    match word(1) {
        Some("status" | "list" | "peek") => true,
        Some("task") => matches!(word(2), Some("list" | "show")),
        _ => false,
    }
}

/// Puts this process (its one thread, and what it starts) in `SCHED_IDLE`. A failure changes
/// nothing (the reader keeps its priority).
#[allow(unsafe_code)]
pub(crate) fn lower() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `sched_setscheduler` reads the `sched_param` it is given, a live local, and
    // changes nothing but this thread's scheduling policy (pid 0: the caller).
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
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

    /// The early look at the raw words agrees with the parsed command wherever it decides.
    #[test]
    fn the_early_look_never_takes_a_writer_for_a_reader() {
        let words = |a: &[&str]| -> Vec<std::ffi::OsString> {
            std::iter::once("team-scale")
                .chain(a.iter().copied())
                .map(Into::into)
                .collect()
        };
        for a in READERS {
            assert!(super::reader_words(&words(a)), "{a:?}");
        }
        for a in WRITERS {
            assert!(!super::reader_words(&words(a)), "{a:?}");
        }
        // Global options first: left to the parsed command.
        assert!(!super::reader_words(&words(&["--json", "status", "t"])));
        assert!(yields(&cmd(&["--json", "status", "t"]), false, false));
    }

    const READERS: &[&[&str]] = &[
        &["status", "t"],
        &["status", "t", "--watch"],
        &["list"],
        &["task", "list", "t"],
        &["task", "show", "t", "1"],
        &["peek", "t", "worker-1"],
    ];

    const WRITERS: &[&[&str]] = &[
        &["up", "t", "1"],
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
    ];

    #[test]
    fn only_readers_writing_to_a_program_yield() {
        for &r in READERS {
            assert!(yields(&cmd(r), false, false), "{r:?} yields to a program");
            assert!(
                !yields(&cmd(r), false, true),
                "{r:?} at a terminal keeps its priority"
            );
            assert!(!yields(&cmd(r), true, false), "{r:?} with yielding off");
        }
        for &w in WRITERS {
            assert!(!yields(&cmd(w), false, false), "{w:?} changes the team");
        }
    }
}

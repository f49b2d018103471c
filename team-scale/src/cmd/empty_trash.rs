//! `team-scale empty-trash` (hidden): deletes what teardowns moved to a team's trash.
//!
//! A teardown moves each removed worker's directory and startup script into
//! `teams/<team>/trash/` (a `rename`, made durable with the removal) instead of deleting them
//! in place: on a file system that discards freed blocks synchronously, each deleted file that
//! held data costs a round trip to the disk, and `down 63` spent a sixth of its time there. The
//! command that moved them starts this one when it ends ([`spawn_if_needed`]; one worker's
//! files it deletes itself, which is cheaper than starting a process); it runs detached,
//! in `SCHED_IDLE`, with no output, and deletes through `ops::resources::empty_trash` (relative
//! to directory fds, following no symlink). A trash left by a crash is emptied by the next
//! command that starts one.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **One removed worker's files are deleted by the command itself** (at most
//!   [`INLINE_MAX`] trash entries), after its answer and its locks: starting a process makes
//!   the command wait for the child's `exec`, which costs more than deleting a few files.
//!
//! - **A command that will fill the trash starts its emptier first, and the emptier waits**
//!   ([`Emptier`], issue 15): `down` of more than one worker and `shutdown` start
//!   `empty-trash --after-stdin-closes` from a second thread as they begin, with a pipe as its
//!   standard input, and close the pipe when they end; the emptier reads to end of file, then
//!   empties the trash. Starting it at the end made the command wait for the child's `exec`
//!   (2.6 ms at the median of 12 `down 8` runs, on a machine still busy with the panes just
//!   killed); started early, the `exec` runs on the other CPU while the command works, and
//!   only the starting thread waits for it. A command that dies closes the pipe too (the
//!   kernel closes its descriptors), so its trash is emptied all the same. *Rejected:* a
//!   `fork` without `exec` (`unsafe`, and a forked copy of a process that may hold threads
//!   and locks); starting the emptier from a thread only once the trash is filled (a hook
//!   through the teardown, for the same gain on a busier machine).

use std::os::unix::process::CommandExt;
use std::process::Stdio;

use team_core::paths::{StateRoot, TeamName};

use crate::cli::{Command, EmptyTrashArgs};
use crate::ctx::Ctx;
use crate::error::CliResult;

pub fn run(a: EmptyTrashArgs) -> CliResult<i32> {
    crate::priority::lower();
    let team = TeamName::new(&a.team)?;
    if !a.root.is_absolute() {
        return Err(team_core::Error::Usage("--root must be an absolute path".into()).into());
    }
    let ws = a.root.parent().unwrap_or(&a.root).to_path_buf();
    let root = StateRoot::resolve(&ws, Some(&a.root))?;
    if a.after_stdin_closes {
        // Whatever comes is ignored; end of file (or an error) is the signal.
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    }
    team_core::ops::resources::empty_trash(&root, &team)?;
    Ok(0)
}

/// An `empty-trash` started before the command that fills the trash, waiting for its
/// standard input to close (see the module docs).
pub struct Emptier {
    /// The write end of the emptier's standard input: dropping it lets the emptier go.
    gate: std::io::PipeWriter,
    /// The thread that starts it (and alone waits for its `exec`).
    starter: std::thread::JoinHandle<()>,
}

impl Emptier {
    /// Starts an emptier for `team` when `cmd` removes more workers than the command deletes
    /// the files of itself; `None` otherwise, or when it cannot be started (the command then
    /// starts one at its end, as [`after`] does without one).
    pub fn start_early(ctx: &Ctx, cmd: &Command, team: &str) -> Option<Emptier> {
        let many = match cmd {
            Command::Down(a) => a.workers.len() > 1 || a.count.is_some_and(|n| n > 1),
            Command::Shutdown(_) => true,
            _ => false,
        };
        if !many || TeamName::new(team).is_err() {
            return None;
        }
        let exe = std::env::current_exe().ok()?;
        let (reader, gate) = std::io::pipe().ok()?;
        let mut c = emptier_command(exe, ctx, team);
        c.arg("--after-stdin-closes").stdin(reader);
        let starter = std::thread::spawn(move || {
            if let Err(e) = c.spawn() {
                tracing::debug!(error = %e, "could not start empty-trash; the next command will");
            }
        });
        Some(Emptier { gate, starter })
    }

    /// Lets the emptier go (its standard input closes) once its start is complete.
    fn release(self) {
        drop(self.gate);
        let _ = self.starter.join();
    }
}

/// `team-scale empty-trash --root <root> <team>`, detached, with no output.
fn emptier_command(exe: std::path::PathBuf, ctx: &Ctx, team: &str) -> std::process::Command {
    let mut c = std::process::Command::new(exe);
    c.arg("empty-trash")
        .arg("--root")
        .arg(ctx.root.path())
        .arg(team)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    c
}

/// Trash entries that a command deletes itself, in place of starting `empty-trash`: one
/// removed worker's (its directory and its script). Starting a process costs the command the
/// child's whole `exec` (it waits for it: 2 ms and more here, a sixth of a `down 1`), deleting
/// one worker's few files about half a millisecond.
const INLINE_MAX: usize = 2;

/// Empties the trash of `team` after a command: in place when it holds one worker's files,
/// else through `early` (the emptier started with the command), else by starting
/// `team-scale empty-trash`, detached. A failure to look, to delete or to start it leaves the
/// trash for the next one.
pub fn after(ctx: &Ctx, team: &str, early: Option<Emptier>) {
    let Ok(name) = TeamName::new(team) else {
        return;
    };
    let spawn = match team_core::ops::resources::trash_len(&ctx.root, &name) {
        Ok(0) | Err(_) => false,
        Ok(n) if n <= INLINE_MAX => {
            if let Err(e) = team_core::ops::resources::empty_trash(&ctx.root, &name) {
                tracing::debug!(error = %e, "could not empty the trash; the next command will");
            }
            false
        }
        Ok(_) => early.is_none(),
    };
    // An early emptier goes in every case: with nothing left, it finds nothing and exits.
    if let Some(e) = early {
        e.release();
    }
    if !spawn {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    if let Err(e) = emptier_command(exe, ctx, team).spawn() {
        tracing::debug!(error = %e, "could not start empty-trash; the next command will");
    }
}

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

use std::os::unix::process::CommandExt;
use std::process::Stdio;

use team_core::paths::{StateRoot, TeamName};

use crate::cli::EmptyTrashArgs;
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
    team_core::ops::resources::empty_trash(&root, &team)?;
    Ok(0)
}

/// Trash entries that a command deletes itself, in place of starting `empty-trash`: one
/// removed worker's (its directory and its script). Starting a process costs the command the
/// child's whole `exec` (it waits for it: 2 ms and more here, a sixth of a `down 1`), deleting
/// one worker's few files about half a millisecond.
const INLINE_MAX: usize = 2;

/// Empties the trash of `team` after a command: in place when it holds one worker's files,
/// else by starting `team-scale empty-trash`, detached. A failure to look, to delete or to
/// start it leaves the trash for the next one.
pub fn spawn_if_needed(ctx: &Ctx, team: &str) {
    let Ok(name) = TeamName::new(team) else {
        return;
    };
    match team_core::ops::resources::trash_len(&ctx.root, &name) {
        Ok(0) | Err(_) => return,
        Ok(n) if n <= INLINE_MAX => {
            if let Err(e) = team_core::ops::resources::empty_trash(&ctx.root, &name) {
                tracing::debug!(error = %e, "could not empty the trash; the next command will");
            }
            return;
        }
        Ok(_) => {}
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let started = std::process::Command::new(exe)
        .arg("empty-trash")
        .arg("--root")
        .arg(ctx.root.path())
        .arg(team)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    if let Err(e) = started {
        tracing::debug!(error = %e, "could not start empty-trash; the next command will");
    }
}

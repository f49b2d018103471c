//! `team-scale empty-trash` (hidden): deletes what teardowns moved to a team's trash.
//!
//! A teardown moves each removed worker's directory and startup script into
//! `teams/<team>/trash/` (a `rename`, made durable with the removal) instead of deleting them
//! in place: on a file system that discards freed blocks synchronously, each deleted file that
//! held data costs a round trip to the disk, and `down 63` spent a sixth of its time there. The
//! command that moved them starts this one when it ends ([`spawn_if_needed`]); it runs detached,
//! in `SCHED_IDLE`, with no output, and deletes through `ops::resources::empty_trash` (relative
//! to directory fds, following no symlink). A trash left by a crash is emptied by the next
//! command that starts one.

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

/// Starts `team-scale empty-trash` for `team`, detached, when its trash holds anything. A
/// failure to look or to start it leaves the trash for the next one.
pub fn spawn_if_needed(ctx: &Ctx, team: &str) {
    let Ok(name) = TeamName::new(team) else {
        return;
    };
    if team_core::ops::resources::trash_is_empty(&ctx.root, &name).unwrap_or(true) {
        return;
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

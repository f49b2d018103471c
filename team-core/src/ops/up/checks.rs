//! Step 1 of `up`: the checks against the state (capacity, git, the new workers' paths) that
//! refuse a request before any effect.

use crate::error::{Error, Result};
use crate::fsutil;
use crate::model::{Lifecycle, Team, WorktreeMode};
use crate::ops::{git, pending};
use crate::paths::WorkerName;

/// Refuses, before any effect, what would make the new workers' files unsafe to write or to
/// roll back: a symlinked (or non-directory) `runtime/` or `workers/` directory, and anything
/// already where a new worker's directory or startup script goes (a rollback removes what its
/// records name, so it must name only what this operation makes), a plain file included.
pub(super) fn check_new_paths(
    root: &crate::paths::StateRoot,
    team: &Team,
    names: &[WorkerName],
) -> Result<()> {
    let team_dir = root.team_dir(&team.name);
    // Each directory is walked once (a symlinked one is refused here); absent, nothing is in it.
    let runtime = fsutil::state_dir(root.path(), &team_dir.join("runtime"), false)?;
    let workers = fsutil::state_dir(root.path(), &team_dir.join("workers"), false)?;
    let kind = |dir: &Option<fsutil::StateDir>, path: &std::path::Path| match dir {
        Some(d) => d.kind(path),
        None => Ok(None),
    };
    for name in names {
        let script = root.runtime_script(&team.name, name);
        // Anything at all, a plain file included: `up` creates the script in place and never
        // over an entry, and its rollback would remove what is at the path.
        if let Some(kind) = kind(&runtime, &script)? {
            return Err(Error::UnsafePath {
                path: script,
                why: format!(
                    "already exists (a {kind}) where new worker {name}'s startup script goes; it was not made for this worker: move it away"
                ),
            });
        }
        let dir = root.worker_dir(&team.name, name);
        if let Some(kind) = kind(&workers, &dir)? {
            return Err(Error::UnsafePath {
                path: dir,
                why: format!(
                    "already exists (a {kind}) where new worker {name}'s directory goes; it was not made for this worker: move it away"
                ),
            });
        }
    }
    Ok(())
}

/// Refuses `n` more workers when the team's members and reservations would pass `max_workers`.
pub(super) fn check_capacity(team: &Team, n: u64) -> Result<()> {
    let active = team.in_state(Lifecycle::Active).count() as u64;
    let pending = team.in_state(Lifecycle::Pending).count() as u64;
    let max = u64::from(team.settings.max_workers);
    if active + pending + n > max {
        return Err(Error::Refused(format!(
            "capacity: team {} has {active} members and {pending} pending; adding {n} would make {}, above max_workers {max}",
            team.name,
            active + pending + n
        )));
    }
    Ok(())
}

/// Checks git for worktree mode, and returns each new worker's branch (branch mode).
pub(super) fn check_git(team: &Team, names: &[WorkerName]) -> Result<Vec<Option<String>>> {
    let ws = &team.workspace;
    let prefix = match &team.settings.worktree {
        WorktreeMode::Off => return Ok(vec![None; names.len()]),
        WorktreeMode::Detached => None,
        WorktreeMode::Branch(p) => Some(p.clone()),
    };
    let head = git(ws, &["rev-parse", "--verify", "--quiet", "HEAD"])?;
    if !head.ok {
        return Err(Error::Refused(format!(
            "team {} uses git worktrees, but {} is not a git repository with a commit",
            team.name,
            ws.display()
        )));
    }
    let mut out = Vec::new();
    for n in names {
        match &prefix {
            None => out.push(None),
            Some(p) => {
                let b = format!("{p}/{n}");
                let ok = git(ws, &["check-ref-format", "--branch", &b])?;
                if !ok.ok {
                    return Err(Error::Usage(format!("{b:?} is not a valid branch name")));
                }
                if pending::branch_exists(ws, &b) {
                    return Err(Error::Refused(format!(
                        "branch {b} already exists in {}; up does not reuse branches it did not create (delete it, or use another prefix)",
                        ws.display()
                    )));
                }
                out.push(Some(b));
            }
        }
    }
    Ok(out)
}

//! Where the audit log is: `--log`, else `TEAM_AUDIT_LOG` (both read by clap), else
//! `<state-dir>/audit.jsonl` (`--state-dir` / `TEAM_STATE_DIR`), else
//! `<workspace>/.team/audit.jsonl`.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **`--audit-log` is the audit log flag everywhere**; team-audit's old `--log` and team-reap's
//!   `--log` are hidden aliases.

use std::path::{Path, PathBuf};

use team_core::paths::StateRoot;

use crate::cli::Global;
use crate::error::AppError;

/// The current directory, as an error the user can act on when it is gone.
pub fn cwd() -> Result<PathBuf, AppError> {
    std::env::current_dir()
        .map_err(|e| team_core::Error::io("read current directory", ".", e).into())
}

/// The workspace: `--workspace`, else `fallback` (the payload's cwd for `hook`), else the
/// nearest directory from the current one up (to a file-system boundary or `$HOME`) that holds
/// a `.team`, as `team-scale` finds it, else the current directory. Always absolute.
pub fn workspace(g: &Global, fallback: Option<&Path>) -> Result<PathBuf, AppError> {
    let ws = match (&g.workspace, fallback) {
        (Some(w), _) => w.clone(),
        (None, Some(f)) => f.to_path_buf(),
        (None, None) => {
            let cwd = cwd()?;
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .map(|h| h.canonicalize().unwrap_or(h));
            let real = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
            match g.state_dir {
                None => team_core::workspace::find(&real, home.as_deref()).unwrap_or(cwd),
                Some(_) => cwd,
            }
        }
    };
    Ok(if ws.is_absolute() {
        ws
    } else {
        cwd()?.join(ws)
    })
}

/// The log path. `for_writing` makes the state root (with its `.gitignore`) when the log lives
/// in it, so a first record does not leave an untracked `.team/` in `git status`.
/// The log at `path` (from [`resolve`] or the hook's lookup) with the global options: a log
/// the user did not name (`--log`) is a state root's own, written with no symlink on its way
/// (`AuditLog::within`).
pub fn log_at(g: &Global, path: PathBuf) -> team_core::audit::AuditLog {
    let log = team_core::audit::AuditLog::new(path.clone()).with_max_size(g.max_size());
    match (&g.log, path.parent()) {
        (None, Some(root)) => log.within(root),
        _ => log,
    }
}

pub fn resolve(
    g: &Global,
    fallback: Option<&Path>,
    for_writing: bool,
) -> Result<PathBuf, AppError> {
    if let Some(p) = &g.log {
        return Ok(p.clone());
    }
    let ws = workspace(g, fallback)?;
    let root = StateRoot::resolve(&ws, g.state_dir.as_deref())?;
    if for_writing {
        root.ensure()?;
    } else {
        // A reader (`verify`, `query`) of a state root's own log refuses a root reached
        // through a symlink, as its writers do: a `.team` pointing elsewhere must not make
        // another log verify as this workspace's (black-box round 11).
        team_core::fsutil::state_dir_exists(root.path(), root.path())?;
    }
    Ok(root.audit_log())
}

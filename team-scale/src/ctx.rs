//! What a command knows about its surroundings: read once here from the environment and the
//! global options, then passed to the library.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **A server started by the tools** reads `TEAM_TMUX_CONFIG` as its `-f` file when set (tests
//!   and the demo use `/dev/null`), else tmux's default config.
//!
//! - **An inherited state dir is its team's only**: every pane of a team (its leader's, each
//!   worker's) gets `TEAM_STATE_DIR` with `TEAM_NAME`, so that `worker-status`, `task claim` and
//!   the leader's commands find the team from wherever the pane's program runs (a worktree).
//!   It used to apply to every command run there: an agent that started a team of its own
//!   (`cd ../other && team-scale init sub`) put it into the outer team's state dir, where the
//!   new team's records named another workspace and read as copied state (its `shutdown`
//!   exited 65); and a command given `--workspace`, or run in another workspace holding a team
//!   of the same name, acted on the pane's team instead. Now, in this order: `--state-dir`
//!   always applies; with `--workspace` the inherited dir does not; without `TEAM_NAME` (a
//!   user's own export) it applies; a worker's reports about itself (`worker-status`, `task
//!   claim/done/fail`) use it for their team; `init` never does (a new team belongs to the
//!   workspace it is started in); a command for another team than `TEAM_NAME` does not; and a
//!   command for the pane's team does unless the workspace found from the current directory
//!   holds a team of that name in another state dir (for `list`, any team).

use std::path::PathBuf;
use std::time::Duration;

use team_core::paths::{StateRoot, TeamName};
use team_core::store::Store;
use team_core::tmux::Tmux;
use team_core::{Error, Result};

use crate::cli::Global;

/// The environment of one command.
#[derive(Debug)]
pub struct Ctx {
    pub workspace: PathBuf,
    pub root: StateRoot,
    pub wait: Duration,
    pub json: bool,
    pub tmux_bin: PathBuf,
    /// `-f` for servers the tools start (`TEAM_TMUX_CONFIG`); tmux's default when unset.
    pub tmux_config: Option<PathBuf>,
    /// `$TMUX` and `$TMUX_PANE` of the caller, when inside tmux.
    pub tmux_env: Option<(PathBuf, String)>,
    /// `$TMUX_TMPDIR`, else /tmp.
    pub tmux_tmpdir: PathBuf,
    pub shell: String,
    /// The audit log: `--audit-log`/`TEAM_AUDIT_LOG`, else `<state root>/audit.jsonl`.
    pub audit_log: PathBuf,
    /// `--audit-max-size` / `TEAM_AUDIT_MAX_SIZE`: where the audit log rotates.
    pub audit_max_size: u64,
    /// `TEAM_SCALING=0` (or `off`/`false`/`no`): the operator's kill switch for up/down.
    pub scaling_env_off: bool,
    /// The workspace was found in an ancestor of the current directory (no `--workspace`),
    /// which `init` refuses without `--here`.
    pub found_above: Option<PathBuf>,
}

/// Which of a pane's inherited variables a command takes (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `init`: a new team belongs to the workspace it is started in.
    Init,
    /// A worker's report about itself (`worker-status`, `task claim/done/fail`).
    Worker,
    /// Any other command.
    Other,
}

/// `TEAM_STATE_DIR` when it applies to a command for `team` (see the module docs);
/// `found`: the workspace found from the current directory, if any.
fn inherited_state_dir(
    team: Option<&str>,
    scope: Scope,
    found: Option<&std::path::Path>,
) -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("TEAM_STATE_DIR").filter(|d| !d.is_empty())?);
    let Some(of) = std::env::var_os("TEAM_NAME").filter(|n| !n.is_empty()) else {
        return Some(dir);
    };
    let ours = team.is_none_or(|t| of == t);
    match scope {
        Scope::Init => None,
        Scope::Worker => ours.then_some(dir),
        Scope::Other if !ours => None,
        Scope::Other => {
            // A nearer team of that name (for `list`, nearer teams), in another state dir, is
            // the one meant.
            let nearer = found.and_then(|ws| {
                let root = ws.join(".team");
                let same = match (root.canonicalize(), dir.canonicalize()) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => root == dir,
                };
                let teams = root.join("teams");
                let holds = match team {
                    Some(t) => teams.join(t).join("team.json").exists(),
                    None => teams.is_dir(),
                };
                (!same && holds).then_some(())
            });
            nearer.is_none().then_some(dir)
        }
    }
}

impl Ctx {
    /// `here`: the current directory is the workspace, whatever is above it (`init --here`);
    /// `team`: the team the command names, if any; `scope`: which inherited variables it takes.
    pub fn from_env(g: &Global, here: bool, team: Option<&str>, scope: Scope) -> Result<Ctx> {
        let mut found_above = None;
        // Like git: the nearest ancestor with a `.team`, up to a file-system boundary and
        // $HOME. An explicit state dir names the state, not the workspace.
        let (cwd, found) = match &g.workspace {
            Some(_) => (None, None),
            None => {
                let cwd = std::env::current_dir()
                    .map_err(|e| Error::io("read", "current directory", e))?;
                let cwd = cwd.canonicalize().unwrap_or(cwd);
                let home = std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(PathBuf::from)
                    .map(|h| h.canonicalize().unwrap_or(h));
                let found = team_core::workspace::find(&cwd, home.as_deref());
                (Some(cwd), found)
            }
        };
        let state_dir = match (&g.state_dir, &g.workspace) {
            (Some(d), _) => Some(d.clone()),
            (None, Some(_)) => None,
            (None, None) => inherited_state_dir(team, scope, found.as_deref()),
        };
        let ws = match (&g.workspace, cwd) {
            (Some(w), _) => w.clone(),
            (None, Some(cwd)) => match found {
                Some(found) if state_dir.is_none() && found != cwd => {
                    found_above = Some(found.clone());
                    if here { cwd } else { found }
                }
                _ => cwd,
            },
            (None, None) => unreachable!("the current directory is read without --workspace"),
        };
        // A `--workspace` that is no directory is bad input (64), not an I/O failure.
        let workspace = match ws.canonicalize() {
            Ok(w) if w.is_dir() => w,
            Ok(_) => {
                return Err(Error::Usage(format!(
                    "--workspace {}: not a directory",
                    ws.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && g.workspace.is_some() => {
                return Err(Error::Usage(format!(
                    "--workspace {}: no such directory",
                    ws.display()
                )));
            }
            Err(e) => return Err(Error::io("resolve workspace", &ws, e)),
        };
        let root = StateRoot::resolve(&workspace, state_dir.as_deref())?;
        let tmux_bin = team_cli::env::tmux_bin();
        let tmux_env = team_cli::env::ambient_pane();
        let audit_log = g.audit_log.clone().unwrap_or_else(|| root.audit_log());
        let scaling_env_off = team_cli::env::is_off("TEAM_SCALING");
        Ok(Ctx {
            found_above,
            audit_log,
            audit_max_size: g
                .audit_max_size
                .unwrap_or(team_core::audit::DEFAULT_MAX_SIZE),
            scaling_env_off,
            workspace,
            root,
            wait: g.wait,
            json: g.common.json,
            tmux_bin,
            tmux_config: std::env::var_os("TEAM_TMUX_CONFIG").map(PathBuf::from),
            tmux_env,
            tmux_tmpdir: team_cli::env::tmux_tmpdir(),
            shell: std::env::var("SHELL")
                .ok()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "/bin/sh".into()),
        })
    }

    pub fn store(&self, team: &TeamName) -> Store {
        Store::new(self.root.clone(), team.clone(), self.wait)
    }

    pub fn audit(&self) -> team_core::audit::AuditLog {
        team_core::audit::AuditLog::new(self.audit_log.clone())
            .with_max_size(self.audit_max_size)
            .within(self.root.path())
    }

    /// What an operation works with, for `caller` (`team-scale send`, ...).
    pub fn env<'a>(
        &self,
        store: &'a Store,
        audit: &'a team_core::audit::AuditLog,
        caller: &str,
    ) -> Result<team_core::ops::Env<'a>> {
        Ok(team_core::ops::Env {
            store,
            audit,
            tmux_bin: self.tmux_bin.clone(),
            tmux_config: self.tmux_config.clone(),
            caller: caller.into(),
            progress: &team_cli::out::progress,
            supervisor: std::env::current_exe()
                .map_err(|e| Error::io("find", "the team-scale binary", e))?,
        })
    }

    pub fn tmux(&self, endpoint: impl Into<PathBuf>) -> Tmux {
        Tmux::new(&self.tmux_bin, endpoint).with_config(self.tmux_config.clone())
    }
}

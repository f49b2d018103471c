//! Multi-step operations shared by the binaries: proven pane kills, scale-up, scale-down,
//! shutdown, reconcile, the teardown of `removing` workers, and of reservations that abandoned
//! operations left behind.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Progress during waits** (readiness, drain, grace) goes to stderr through a callback the
//!   binary gives the operation, and only when stderr is a terminal; team-reap passes none, so
//!   cron stays silent.

pub mod board;
pub mod deliver;
pub mod down;
pub mod forget;
pub mod kill;
pub mod message;
pub mod peek;
pub mod pending;
pub mod reconcile;
pub mod resources;
pub mod tasks;
pub mod teardown;
pub mod up;

use std::path::{Path, PathBuf};

use crate::audit::AuditLog;
use crate::error::{Error, Result};
use crate::model::Team;
use crate::store::Store;
use crate::tmux::Tmux;

/// What an operation works with; the binary builds it from its options and environment.
#[derive(Clone)]
pub struct Env<'a> {
    pub store: &'a Store,
    pub audit: &'a AuditLog,
    /// The tmux binary and the config file for servers it starts.
    pub tmux_bin: PathBuf,
    pub tmux_config: Option<PathBuf>,
    /// The audit `caller` (`team-scale up`, `team-scale reconcile`, ...).
    pub caller: String,
    /// Progress during waits (the binary shows it on a terminal only).
    pub progress: &'a dyn Fn(&str),
    /// The binary whose `supervise` subcommand runs as every new worker pane's first process
    /// (`team-scale` itself).
    pub supervisor: PathBuf,
}

impl Env<'_> {
    /// The team's tmux server.
    pub fn tmux(&self, team: &Team) -> Tmux {
        Tmux::new(&self.tmux_bin, &team.endpoint).with_config(self.tmux_config.clone())
    }
}

/// Output of one git call.
#[derive(Debug)]
pub(crate) struct GitOut {
    pub ok: bool,
    pub stderr: String,
}

/// Runs `git -C <workspace> <args>` (through [`crate::git`]).
pub(crate) fn git(workspace: &Path, args: &[&str]) -> Result<GitOut> {
    let out = crate::git::run(workspace, args, &[])?;
    Ok(GitOut {
        ok: out.status.success(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

/// Refuses `up` and `down` when scaling is switched off: for every team by the operator
/// (`TEAM_SCALING=0`, read by the binary) or for this team by its policy.
pub(crate) fn check_scaling(team: &Team, env_off: bool) -> Result<()> {
    if env_off {
        return Err(Error::Refused(
            "scaling is switched off for every team by TEAM_SCALING=0 in the environment; unset it (or set TEAM_SCALING=1) to scale".into(),
        ));
    }
    if !team.settings.scaling {
        return Err(Error::Refused(format!(
            "scaling is switched off for team {0}; turn it on with `team-scale policy {0} --scaling on`",
            team.name
        )));
    }
    Ok(())
}

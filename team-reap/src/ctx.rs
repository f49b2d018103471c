//! What the run knows about its surroundings, read once from the environment.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The reaper lock is `/tmp/tmux-<uid>/team-reap.lock`**, computed from the uid only, so runs
//!   from cron, systemd and a shell (different `TMUX_TMPDIR`, `XDG_RUNTIME_DIR`) exclude each
//!   other. The directory is tmux's own default socket directory; it is created 0700 if missing
//!   and refused unless it is a directory of ours with no group or other access (so nobody else
//!   can hold our lock or swap the file). A busy lock: one stderr line naming the holder, a
//!   `summary` with `lock_holder` under `--json`, exit 75. A hidden `--lock-file` lets tests run
//!   reapers side by side.

use std::path::{Path, PathBuf};

use team_core::paths::tmux_socket_dir;
use team_core::reap::Config;
use team_core::{Error, Result};

use crate::cli::Global;

/// The environment of one run.
#[derive(Debug)]
pub struct Ctx {
    pub cfg: Config,
    /// The per-user reaper lock.
    pub lock: PathBuf,
}

impl Ctx {
    /// Reads the environment. tmux missing from `PATH` is [`Error::TmuxUnavailable`]
    /// (exit 69): a reaper that cannot see any server must not look like one that found
    /// nothing.
    pub fn from_env(g: &Global) -> Result<Ctx> {
        let socket_dir = team_cli::env::socket_dir();
        let tmux_bin = team_cli::env::which_tmux().ok_or_else(|| Error::TmuxUnavailable {
            endpoint: socket_dir.clone(),
            msg: "tmux is not installed (not found on PATH)".into(),
        })?;
        Ok(Ctx {
            cfg: Config {
                tmux_bin,
                socket_dir,
                sockets: g.sockets.clone(),
                state_dir: g.state_dir.clone(),
                audit_log: g.audit_log.clone(),
                audit_max_size: g
                    .audit_max_size
                    .unwrap_or(team_core::audit::DEFAULT_MAX_SIZE),
                argv: std::env::args().collect(),
                supervisor_exes: supervisor_exes(),
            },
            lock: g.lock_file.clone().unwrap_or_else(default_lock_path),
        })
    }

    /// The per-user reaper lock.
    pub fn lock_path(&self) -> &Path {
        &self.lock
    }

    /// Where the dead sockets already warned about are remembered, beside the lock, so a
    /// stale socket file is reported once and cron stays silent after that.
    pub fn dead_sockets_path(&self) -> PathBuf {
        self.lock.with_file_name("team-reap.dead-sockets.json")
    }
}

/// The `team-scale` executables whose supervisors may have started a worker pane: the one
/// installed beside this binary and the one on `PATH` (those that exist, by absolute paths:
/// a relative `PATH` entry depends on where the reaper happens to run).
fn supervisor_exes() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.join("team-scale")));
    for p in beside.into_iter().chain(team_cli::env::which_team_scale()) {
        if p.is_absolute() && p.is_file() && !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

/// `/tmp/tmux-<uid>/team-reap.lock`: computed from the uid only, so runs with different
/// `TMUX_TMPDIR` or `XDG_RUNTIME_DIR` (cron, systemd, a login shell) share one lock. The
/// directory is tmux's own default socket directory; it is made private (0700, ours) if
/// missing and refused if it is not (`fsutil::create_private_dir`).
pub fn default_lock_path() -> PathBuf {
    tmux_socket_dir(Path::new("/tmp")).join("team-reap.lock")
}

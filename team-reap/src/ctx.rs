//! What the run knows about its surroundings, read once from the environment.

use std::path::PathBuf;

use team_core::paths::tmux_socket_dir;
use team_core::reap::Config;

use crate::cli::Global;

/// The environment of one run.
#[derive(Debug)]
pub struct Ctx {
    pub cfg: Config,
    /// `$XDG_RUNTIME_DIR`, when set.
    pub runtime_dir: Option<PathBuf>,
}

impl Ctx {
    pub fn from_env(g: &Global) -> Ctx {
        let tmpdir = std::env::var_os("TMUX_TMPDIR")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        Ctx {
            cfg: Config {
                tmux_bin: which::which("tmux").unwrap_or_else(|_| PathBuf::from("tmux")),
                socket_dir: tmux_socket_dir(&tmpdir),
                sockets: g.sockets.clone(),
                state_dir: g.state_dir.clone(),
                audit_log: g.audit_log.clone(),
                argv: std::env::args().collect(),
            },
            runtime_dir: std::env::var_os("XDG_RUNTIME_DIR")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
        }
    }

    /// The per-user reaper lock: in `$XDG_RUNTIME_DIR`, else the tmux socket directory.
    pub fn lock_path(&self) -> PathBuf {
        self.runtime_dir
            .clone()
            .unwrap_or_else(|| self.cfg.socket_dir.clone())
            .join("team-reap.lock")
    }

    /// Where the dead sockets already warned about are remembered, beside the lock, so a
    /// stale socket file is reported once and cron stays silent after that.
    pub fn dead_sockets_path(&self) -> PathBuf {
        self.lock_path()
            .with_file_name("team-reap.dead-sockets.json")
    }
}

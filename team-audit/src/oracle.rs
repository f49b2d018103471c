//! The boundary between the hook's `--guard` and the proof that a tmux target is a live team
//! member in the workspace.
//!
//! [`StateOracle`] is the real proof: the target must be `%N`, the pane of an `active` worker
//! of a live team in the workspace's state root, proven live from a fresh listing of the
//! addressed server (`team_core::view::is_proven_member`). [`Unwired`] proves nothing; the
//! unit tests use it to check that the guard denies whatever is not proven.

use std::path::{Path, PathBuf};

/// The tmux server a command addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Server {
    /// No -L/-S: `$TMUX`'s server, or the default socket.
    Default,
    /// `-L name`: a socket of that name in the tmux socket directory.
    Name(String),
    /// `-S path`: that socket.
    Socket(PathBuf),
}

impl Server {
    /// How the server is written into a record's `endpoint`.
    pub fn endpoint(&self) -> Option<String> {
        match self {
            Server::Default => None,
            Server::Name(n) => Some(format!("-L {n}")),
            Server::Socket(p) => Some(p.display().to_string()),
        }
    }
}

/// Answers whether a tmux target is proven to be a member of a live team in a workspace.
pub trait MembershipOracle {
    /// `Ok(true)` only with proof (incarnation and owner tag match the team's canonical state);
    /// `Ok(false)` when not proven; `Err` when the proof could not be attempted. The guard
    /// denies on anything but `Ok(true)`.
    fn is_proven_member(
        &self,
        workspace: &Path,
        server: &Server,
        target: &str,
    ) -> team_core::Result<bool>;

    /// At check time, whether `-S path` is the kind of endpoint a team records: a socket
    /// (not a symlink, no symlink on the way), owned by this user. `Err(why)` denies.
    fn check_socket(&self, path: &Path) -> Result<(), String> {
        check_socket(path)
    }

    /// The absolute, canonical path of the tmux binary this hook runs (found on its PATH):
    /// besides the word `tmux`, the only command word accepted as tmux.
    fn tmux_bin(&self) -> Option<PathBuf> {
        None
    }
}

/// See [`MembershipOracle::check_socket`].
pub fn check_socket(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let md = std::fs::symlink_metadata(path)
        .map_err(|e| format!("not the team's endpoint (cannot be read: {e})"))?;
    if md.file_type().is_symlink() {
        return Err("not the team's endpoint (a symlink)".into());
    }
    match std::fs::canonicalize(path) {
        Ok(c) if c == path => {}
        _ => return Err("not the team's endpoint (a symlink on the way)".into()),
    }
    if !md.file_type().is_socket() {
        return Err("not the team's endpoint (not a socket)".into());
    }
    // `/proc/self` belongs to this process's user.
    let me = std::fs::metadata("/proc/self").map(|m| m.uid());
    if me.map_or(true, |me| me != md.uid()) {
        return Err("not the team's endpoint (a socket of another user)".into());
    }
    Ok(())
}

/// An oracle that proves nothing (tests: the guard must deny whatever is not proven).
#[cfg(test)]
pub struct Unwired;

#[cfg(test)]
impl MembershipOracle for Unwired {
    fn is_proven_member(&self, _: &Path, _: &Server, _: &str) -> team_core::Result<bool> {
        Ok(false)
    }
    fn check_socket(&self, _: &Path) -> Result<(), String> {
        Ok(())
    }
}

/// The real oracle: team state in `<workspace>/.team` (or the `TEAM_STATE_DIR` the binary
/// read) and a fresh listing of the addressed server.
pub struct StateOracle {
    pub tmux_bin: PathBuf,
    /// `$TMUX_TMPDIR` or `/tmp`: where `-L name` and the default socket live.
    pub tmux_tmpdir: PathBuf,
    /// The socket of `$TMUX`, for commands without -L/-S run inside tmux.
    pub ambient: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
}

impl StateOracle {
    fn endpoint(&self, server: &Server) -> PathBuf {
        let dir = team_core::paths::tmux_socket_dir(&self.tmux_tmpdir);
        match server {
            Server::Socket(p) => p.clone(),
            Server::Name(n) => dir.join(n),
            Server::Default => self.ambient.clone().unwrap_or_else(|| dir.join("default")),
        }
    }
}

impl MembershipOracle for StateOracle {
    fn is_proven_member(
        &self,
        workspace: &Path,
        server: &Server,
        target: &str,
    ) -> team_core::Result<bool> {
        let root = team_core::paths::StateRoot::resolve(workspace, self.state_dir.as_deref())?;
        let tmux = team_core::tmux::Tmux::new(&self.tmux_bin, self.endpoint(server));
        team_core::view::is_proven_member(&root, &tmux, target, std::time::Duration::from_secs(2))
    }

    fn tmux_bin(&self) -> Option<PathBuf> {
        std::fs::canonicalize(&self.tmux_bin)
            .ok()
            .filter(|p| p.is_absolute() && self.tmux_bin.is_absolute())
    }
}

//! The boundary between the hook's `--guard` and the proof that a tmux target is a live team
//! member in the workspace.
//!
//! PENDING: the real proof lives in the tmux and state layers of `team-core` (being built in
//! parallel). Until it is wired here, [`Unwired`] proves nothing, so `--guard` denies every
//! kill. That is the fail-closed direction: a guard that cannot prove must not allow.

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
}

/// The oracle until the real one is wired: proves nothing, so the guard denies every kill.
pub struct Unwired;

impl MembershipOracle for Unwired {
    fn is_proven_member(&self, _: &Path, _: &Server, _: &str) -> team_core::Result<bool> {
        Ok(false)
    }
}

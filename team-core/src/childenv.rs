//! The environment of every process the tools start.
//!
//! Everything the tools start (tmux clients, and through them tmux servers and every pane;
//! git and its hooks) gets a scrubbed environment: every `TEAM_*` variable of the caller is
//! removed, and the child gets only the ones that belong to it, set explicitly (a new pane's
//! `-e`, a worker's startup script). A `TEAM_*` variable inherited from a worker's environment
//! would otherwise make a nested team's server, its leader, or a daemon look like that worker's.
//!
//! `team-core` never reads the environment itself: each binary hands over the names of its
//! variables once at start ([`init`]); the runners call [`scrub`].

use std::ffi::OsString;
use std::process::Command;
use std::sync::OnceLock;

static NAMES: OnceLock<Vec<OsString>> = OnceLock::new();

/// The prefix of the variables that are never passed on.
pub const PREFIX: &str = "TEAM_";

/// Records which of the caller's variables to remove from every child (the binary passes the
/// names of its environment; only `TEAM_*` ones are kept). The first call wins.
pub fn init(names: impl IntoIterator<Item = OsString>) {
    let v = names
        .into_iter()
        .filter(|n| n.to_string_lossy().starts_with(PREFIX))
        .collect();
    let _ = NAMES.set(v);
}

/// The names [`scrub`] removes.
pub fn scrubbed() -> &'static [OsString] {
    NAMES.get().map(Vec::as_slice).unwrap_or(&[])
}

/// Removes every recorded `TEAM_*` variable from `cmd`'s environment.
pub fn scrub(cmd: &mut Command) -> &mut Command {
    for n in scrubbed() {
        cmd.env_remove(n);
    }
    cmd
}

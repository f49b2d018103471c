//! What the binaries read from their environment that more than one of them needs. Read
//! here, passed to `team-core` as values (the library reads no environment).

use std::path::PathBuf;

/// The tmux binary: `tmux` on `PATH`, else plain `tmux` (whose failure to start is then
/// reported by the library as tmux being unavailable).
pub fn tmux_bin() -> PathBuf {
    which_tmux().unwrap_or_else(|| PathBuf::from("tmux"))
}

/// `tmux` on `PATH`, if there is one.
pub fn which_tmux() -> Option<PathBuf> {
    which::which("tmux").ok()
}

/// `team-scale` as `PATH` finds it.
pub fn which_team_scale() -> Option<PathBuf> {
    which::which("team-scale").ok()
}

/// Whether the variable `name` is set to `0`, `false`, `no` or `off` (in any case, spaces
/// around ignored): how every on-by-default behaviour of the tools is switched off.
pub fn is_off(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        )
    })
}

/// Whether tmux calls may speak tmux's protocol directly: unless `TEAM_TMUX_NATIVE` is off
/// ([`is_off`]).
pub fn tmux_native() -> bool {
    !is_off("TEAM_TMUX_NATIVE")
}

/// `$TMUX_TMPDIR` when set and not empty, else `/tmp` (as tmux itself does).
pub fn tmux_tmpdir() -> PathBuf {
    std::env::var_os("TMUX_TMPDIR")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// The user's tmux socket directory: `<tmux_tmpdir>/tmux-<uid>`.
pub fn socket_dir() -> PathBuf {
    team_core::paths::tmux_socket_dir(&tmux_tmpdir())
}

/// The socket of the tmux the caller runs in (`$TMUX`'s first field), when absolute.
pub fn ambient_socket() -> Option<PathBuf> {
    std::env::var("TMUX")
        .ok()
        .and_then(|t| t.split(',').next().map(PathBuf::from))
        .filter(|p| p.is_absolute())
}

/// `$TMUX`'s socket and `$TMUX_PANE`, when the caller is inside tmux.
pub fn ambient_pane() -> Option<(PathBuf, String)> {
    let pane = std::env::var("TMUX_PANE").ok().filter(|p| !p.is_empty())?;
    ambient_socket().map(|s| (s, pane))
}

/// `$TEAM_STATE_DIR`, when set.
pub fn state_dir() -> Option<PathBuf> {
    std::env::var_os("TEAM_STATE_DIR").map(PathBuf::from)
}

/// Configures fail points from `$TEAM_FAILPOINTS` (a no-op unless built with the
/// `failpoints` feature, for tests).
pub fn configure_failpoints() {
    team_core::failpoint::configure(std::env::var("TEAM_FAILPOINTS").ok().as_deref());
}

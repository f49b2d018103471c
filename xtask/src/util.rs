//! What the tasks share: building the binaries, running them hermetically, and cleaning up
//! the tmux servers a task started (always by socket, never the default server).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the three binaries and returns the directory they are in. `failpoints` makes the
/// build the test harness makes (`tests::BUILD_ARGS`: every feature, fail points included, in
/// the normal target directory), so the demo, chaos and the tests share one build and no
/// dependency is compiled twice.
pub fn build_bins(root: &Path, release: bool, failpoints: bool) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut args: Vec<String> = if failpoints {
        [
            "build",
            "--quiet",
            "--workspace",
            "--all-features",
            "--bin",
            "team-scale",
            "--bin",
            "team-reap",
            "--bin",
            "team-audit",
        ]
        .map(String::from)
        .to_vec()
    } else {
        [
            "build",
            "--quiet",
            "--bins",
            "-p",
            "team-scale",
            "-p",
            "team-reap",
            "-p",
            "team-audit",
        ]
        .map(String::from)
        .to_vec()
    };
    let target = root.join("target");
    if release {
        args.push("--release".into());
    }
    eprintln!("xtask: building the binaries");
    duct::cmd(&cargo, &args).dir(root).run()?;
    Ok(target.join(if release { "release" } else { "debug" }))
}

/// A command for one of our binaries with a hermetic environment: no ambient tmux, no
/// inherited team variables, servers it starts read no user config.
pub fn tool(bin: &Path, name: &str, tmux_tmpdir: Option<&Path>) -> Command {
    let mut c = Command::new(bin.join(name));
    c.env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("TEAM_STATE_DIR")
        .env_remove("TEAM_AUDIT_LOG")
        .env_remove("TEAM_FAILPOINTS")
        .env("TEAM_TMUX_CONFIG", "/dev/null")
        .env("SHELL", "/bin/sh");
    if let Some(tt) = tmux_tmpdir {
        c.env("TMUX_TMPDIR", tt);
    }
    c
}

/// A tmux command on an explicit socket, with `TMUX` cleared.
pub fn tmux(sock: &Path) -> Command {
    let mut c = Command::new("tmux");
    c.arg("-S")
        .arg(sock)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE");
    c
}

/// The real uid, from `id -u` (xtask stays free of libc bindings).
pub fn uid() -> String {
    String::from_utf8_lossy(
        &Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default(),
    )
    .trim()
    .to_string()
}

/// The sockets in `<tmux_tmpdir>/tmux-<uid>/`.
pub fn sockets(tmux_tmpdir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmux_tmpdir.join(format!("tmux-{}", uid())))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Kills every server whose socket is in `<tmux_tmpdir>/tmux-<uid>/` (servers a task started in
/// its own temp dir).
pub fn kill_servers(tmux_tmpdir: &Path) {
    for s in sockets(tmux_tmpdir) {
        let _ = tmux(&s).arg("kill-server").output();
    }
}

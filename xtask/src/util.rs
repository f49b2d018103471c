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

/// The start time (field 22 of `/proc/<pid>/stat`) of `pid` while it runs and is no zombie.
pub fn start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = s.get(s.rfind(')')? + 1..)?.split_whitespace().collect();
    if f.first() == Some(&"Z") {
        return None;
    }
    f.get(19)?.parse().ok()
}

/// Sends `sig` to the process `pid` only while it is the one that started at `start`: through
/// a pidfd, checked after it is opened. Pids are recycled (`pid_max` may be 32768), so a pid
/// read a moment ago may name someone else's process now.
pub fn signal_if_same(pid: u32, start: u64, sig: rustix::process::Signal) {
    use rustix::process::{Pid, PidfdFlags, pidfd_open, pidfd_send_signal};
    let Some(p) = Pid::from_raw(pid as i32) else {
        return;
    };
    let Ok(fd) = pidfd_open(p, PidfdFlags::empty()) else {
        return;
    };
    if start_time(pid) == Some(start) {
        let _ = pidfd_send_signal(&fd, sig);
    }
}

/// Ends, by pid, every process below a worker supervisor whose state root lies under `base`
/// (its `--root` argument), then the supervisors themselves once they have nothing left to
/// wait for. A worker can leave detached daemons (Codex's `app-server`) that the tools report
/// as shared and never kill; these are ours by ancestry (the supervisor is their subreaper),
/// and only these are ended.
pub fn end_residue_below(base: &Path) {
    use std::collections::HashMap;
    let procs = || -> HashMap<u32, u32> {
        let mut m = HashMap::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // The field after the parenthesised name: state, then the parent's pid.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse().ok());
            if let Some(ppid) = ppid {
                m.insert(pid, ppid);
            }
        }
        m
    };
    let ours = |pid: u32| -> bool {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim_end() != "team-supervise" {
            return false;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        args.windows(2).any(|w| {
            w[0] == b"--root" && Path::new(std::ffi::OsStr::from_bytes(w[1])).starts_with(base)
        })
    };
    use rustix::process::Signal;
    use std::os::unix::ffi::OsStrExt;
    for signal in [Signal::TERM, Signal::KILL] {
        let parents = procs();
        let supervisors: Vec<u32> = parents.keys().copied().filter(|p| ours(*p)).collect();
        let below = |mut pid: u32| {
            while let Some(&pp) = parents.get(&pid) {
                if supervisors.contains(&pp) {
                    return true;
                }
                if pp <= 1 {
                    return false;
                }
                pid = pp;
            }
            false
        };
        // Each victim's start time is taken right after the walk, and the signal goes only to
        // the process that still has it.
        let victims: Vec<(u32, u64)> = parents
            .keys()
            .copied()
            .filter(|p| below(*p))
            .filter_map(|p| Some((p, start_time(p)?)))
            .collect();
        for &(pid, start) in &victims {
            signal_if_same(pid, start, signal);
        }
        if victims.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

//! The worker supervisor's contract: how a worker pane's first process is started, how it is
//! recognised later, and the exit record it leaves.
//!
//! Every worker pane runs `team-scale supervise ... -- /bin/sh <runtime script>` as its first
//! process. The supervisor makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`), so every
//! descendant of the worker, `setsid` and double-forked ones included, stays below it until it
//! exits; it names itself [`COMM`], removes every inherited `TEAM_*` variable from its child's
//! environment (the runtime script then sets the worker's own), and writes [`MainExit`] to the
//! worker's `exit.json` when the worker's main process exits. This module holds what the
//! library needs of that contract (the argv it is started with and how to read it back from
//! `/proc/<pid>/cmdline`, and the exit record); the loop itself lives in the `team-scale`
//! binary, since the library starts no processes of its own.
//!
//! Ancestry, not environment, is what makes a process a worker's (see `process::tree`):
//! environment variables are inherited by everything a worker starts, other teams' tmux servers
//! and shared daemons included, so they only *confirm* (`TEAM_INCARNATION`).
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Processes are a worker's by ancestry.** Every worker pane's first process is `team-scale
//!   supervise` (`team-scale supervise --op .. --team .. --worker .. --owner .. --incarnation ..
//!   --root .. --ws .. -- /bin/sh <runtime script>`, run by tmux without a shell). It sets
//!   `PR_SET_CHILD_SUBREAPER`, so whatever the worker starts stays below it, `setsid` and
//!   double-forked daemons included; names itself `team-supervise`; starts the script with every
//!   inherited `TEAM_*` removed; forwards SIGHUP/SIGINT/SIGTERM to the worker's main process;
//!   writes `workers/<w>/exit.json` when that process ends; and exits only when it has no child
//!   left, so it survives its pane (it handles SIGHUP) for as long as residue lives. Teardown
//!   and the reaper find a worker's processes by walking `/proc/*/stat` below the supervisor
//!   (`proctree`), then prove each through a pidfd: same start time, our uid, not tmux, no
//!   other `TEAM_INCARNATION`, and still below the supervisor by a fresh walk up its parents. The
//!   supervisor itself is never signalled; it exits once its children are gone.
//!   *Rejected:* environment only (the old design): every `TEAM_*` is inherited by whatever a
//!   worker starts — a nested team's tmux server and leader, Codex's shared `app-server` — and
//!   `env -i` drops it, so it both over- and under-matches. cgroups through systemd scopes
//!   (`systemd-run --user --scope`): exact, but needs a user systemd manager and delegation,
//!   which containers, CI machines and many SSH sessions lack, and moving a tmux pane's process
//!   into a scope after tmux forked it races; a subreaper needs one `prctl` and works anywhere
//!   Linux does. Process groups and sessions: any `setsid` leaves them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::paths::{TeamName, WorkerName};

/// The process name (`/proc/<pid>/comm`, at most 15 bytes) a supervisor gives itself.
pub const COMM: &str = "team-supervise";

/// Which of a supervisor's children is the worker's main process, as the supervisor says it
/// in the name of one of its threads (`/proc/<pid>/task/<tid>/comm`): `main <pid>` from the
/// moment it has started it, [`MAIN_ENDED`] once it has reaped it. A thread's name can be set
/// only from within its own process, so no other process can change it. Every other direct
/// child of a supervisor is an orphan it adopted (see `proctree`); telling them apart by age
/// fails once the main process is gone, when the oldest orphan looks like it.
pub const MAIN_MARK: &str = "main ";

/// The name of the main-process thread once the supervisor has reaped the main process.
pub const MAIN_ENDED: &str = "main ended";

/// What a supervisor's main-process thread says ([`MAIN_MARK`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MainMark {
    /// The worker's main process has this pid (it may have exited since, not yet reaped).
    Running(u32),
    /// The supervisor has reaped its main process: every child it has is an adopted orphan.
    Ended,
}

impl MainMark {
    /// The thread name saying this (at most 15 bytes, as thread names are).
    pub fn thread_name(self) -> String {
        match self {
            MainMark::Running(pid) => format!("{MAIN_MARK}{pid}"),
            MainMark::Ended => MAIN_ENDED.to_string(),
        }
    }

    /// Reads a thread name; `None` for any other name.
    pub fn parse(comm: &str) -> Option<MainMark> {
        let comm = comm.trim_end_matches('\n');
        if comm == MAIN_ENDED {
            return Some(MainMark::Ended);
        }
        let pid = comm.strip_prefix(MAIN_MARK)?;
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        pid.parse().ok().filter(|p| *p > 0).map(MainMark::Running)
    }
}

/// The subcommand word that starts a supervisor.
/// The descriptor a supervisor gives `sh` the worker's startup script on (`/bin/sh
/// /dev/fd/9`): the script is opened by the supervisor with no symlink on its way, and its
/// first command closes the descriptor.
/// The environment variable `up` gives a worker's pane (`split-window -e`) with the SHA-256 of
/// the startup script it wrote; the supervisor runs the script only when the file it opens
/// has that digest (and never passes the variable on: every `TEAM_*` is removed).
pub const SCRIPT_DIGEST_VAR: &str = "TEAM_SCRIPT_SHA256";

/// The digest [`SCRIPT_DIGEST_VAR`] carries: lowercase hex SHA-256.
pub fn script_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

pub const SCRIPT_FD: i32 = 9;

pub const SUBCOMMAND: &str = "supervise";

/// Who a supervisor works for: everything needed to find the worker's state again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorArgs {
    /// The scale operation that started it: in its argv, so a pane shows whose it is in
    /// `#{pane_start_command}` from its first instant, before any tag is set.
    pub op: Option<Uuid>,
    pub team: TeamName,
    pub worker: WorkerName,
    pub owner: Uuid,
    pub incarnation: Uuid,
    /// The team's state root (absolute).
    pub state_root: PathBuf,
    /// The team's workspace (absolute).
    pub workspace: PathBuf,
}

impl SupervisorArgs {
    /// The arguments after the binary: `supervise [--op OP] --team T --worker W --owner O
    /// --incarnation I --root R --ws WS --`. The command to run follows the `--`.
    pub fn to_argv(&self) -> Vec<String> {
        let mut v: Vec<String> = vec![SUBCOMMAND.into()];
        if let Some(op) = self.op {
            v.extend(["--op".into(), op.to_string()]);
        }
        v.extend([
            "--team".into(),
            self.team.to_string(),
            "--worker".into(),
            self.worker.to_string(),
            "--owner".into(),
            self.owner.to_string(),
            "--incarnation".into(),
            self.incarnation.to_string(),
            "--root".into(),
            self.state_root.display().to_string(),
            "--ws".into(),
            self.workspace.display().to_string(),
            "--".into(),
        ]);
        v
    }

    /// Reads the arguments back from a NUL-separated `/proc/<pid>/cmdline`. `None` unless the
    /// argv is exactly the shape [`SupervisorArgs::to_argv`] writes (after the binary), with
    /// valid names, UUIDs and absolute paths, followed by exactly `/bin/sh` and the worker's
    /// startup script (what `up` has every supervisor run).
    pub fn from_cmdline(cmdline: &[u8]) -> Option<SupervisorArgs> {
        let words: Vec<&[u8]> = cmdline
            .strip_suffix(&[0])
            .unwrap_or(cmdline)
            .split(|&b| b == 0)
            .collect();
        let word = |i: usize| -> Option<&str> { std::str::from_utf8(words.get(i)?).ok() };
        if word(1)? != SUBCOMMAND {
            return None;
        }
        // `--op OP` first when present: every later word sits two places on.
        let op = match word(2)? {
            "--op" => Some(Uuid::parse_str(word(3)?).ok()?),
            _ => None,
        };
        let at = if op.is_some() { 2 } else { 0 };
        let s = |i: usize| word(i + at);
        if s(14)? != "--" {
            return None;
        }
        let flag = |i: usize, name: &str| -> Option<&str> { (s(i)? == name).then(|| s(i + 1))? };
        let abs = |v: &str| -> Option<PathBuf> {
            let p = PathBuf::from(v);
            p.is_absolute().then_some(p)
        };
        let args = SupervisorArgs {
            op,
            team: TeamName::new(flag(2, "--team")?).ok()?,
            worker: WorkerName::new(flag(4, "--worker")?).ok()?,
            owner: Uuid::parse_str(flag(6, "--owner")?).ok()?,
            incarnation: Uuid::parse_str(flag(8, "--incarnation")?).ok()?,
            state_root: abs(flag(10, "--root")?)?,
            workspace: abs(flag(12, "--ws")?)?,
        };
        // What it runs is what `up` gives every supervisor, and nothing else: `/bin/sh` and
        // the worker's startup script. The real `team-scale supervise` started by hand for
        // another command under a worker's identity is not that worker's supervisor.
        let script = crate::paths::StateRoot::resolve(&args.state_root, Some(&args.state_root))
            .ok()?
            .runtime_script(&args.team, &args.worker);
        (s(15)? == "/bin/sh" && Path::new(s(16)?) == script && words.len() == 17 + at)
            .then_some(args)
    }

    /// What differs between these arguments (a running supervisor's) and `want` (what a
    /// record or a pane's tags say it works for), each as "`what` `this` (wanted `that`)".
    /// The op is compared only when both name one.
    pub fn differences(&self, want: &SupervisorArgs) -> Vec<String> {
        let mut d = Vec::new();
        let mut cmp = |what: &str, this: String, that: String| {
            if this != that {
                d.push(format!("{what} {this} (wanted {that})"));
            }
        };
        if let (Some(a), Some(b)) = (self.op, want.op) {
            cmp("op", a.to_string(), b.to_string());
        }
        cmp("team", self.team.to_string(), want.team.to_string());
        cmp("worker", self.worker.to_string(), want.worker.to_string());
        cmp("owner", self.owner.to_string(), want.owner.to_string());
        cmp(
            "incarnation",
            self.incarnation.to_string(),
            want.incarnation.to_string(),
        );
        cmp(
            "state root",
            self.state_root.display().to_string(),
            want.state_root.display().to_string(),
        );
        cmp(
            "workspace",
            self.workspace.display().to_string(),
            want.workspace.display().to_string(),
        );
        d
    }

    /// Whether `start_command` (a pane's `#{pane_start_command}`, as tmux shows it) is exactly
    /// the command `up` starts this supervisor with, word for word: one of the `team-scale`
    /// executables in `exes` (by its absolute path, or the same file), these arguments (the op
    /// included), then `/bin/sh` and the worker's startup script. `Err` says why not. tmux
    /// quotes a word that holds a space or a shell character, and its quoting has changed
    /// between versions, so such a word (a workspace path with a space) cannot be matched:
    /// `Err` too.
    pub fn check_start_command(
        &self,
        start_command: &str,
        exes: &[PathBuf],
    ) -> std::result::Result<(), String> {
        if self.op.is_none() {
            return Err("no op to match".into());
        }
        let root = crate::paths::StateRoot::resolve(&self.state_root, Some(&self.state_root))
            .map_err(|e| e.to_string())?;
        let mut words = self.to_argv();
        words.push("/bin/sh".into());
        words.push(
            root.runtime_script(&self.team, &self.worker)
                .display()
                .to_string(),
        );
        if !words.iter().all(|w| unquoted_by_tmux(w)) {
            return Err(
                "its paths are ones tmux quotes, so its start command cannot be matched".into(),
            );
        }
        let exe = start_command
            .strip_suffix(&format!(" {}", words.join(" ")))
            .ok_or("tmux did not start it as that worker's supervisor")?;
        // An absolute path only, as `up` gives tmux: a relative one was resolved by the pane
        // (its directory, its `PATH`), not where this process looks.
        if !unquoted_by_tmux(exe)
            || !Path::new(exe).is_absolute()
            || !exes.iter().any(|e| is_same_exe(e, Path::new(exe)))
        {
            return Err(format!(
                "tmux started it with the supervisor's arguments, but by {exe:?}, not the team-scale these tools run ({})",
                exes.iter()
                    .map(|e| e.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(())
    }

    /// Where this supervisor writes its [`MainExit`].
    pub fn exit_file(&self) -> PathBuf {
        exit_file_in(&self.state_root, &self.team, &self.worker)
    }
}

/// Whether `exe` (a path a pane was started with) is the known `team-scale` executable
/// `known`: the same path, or the same file (device and inode) through another path.
fn is_same_exe(known: &Path, exe: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    known == exe
        || match (std::fs::metadata(known), std::fs::metadata(exe)) {
            (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
            _ => false,
        }
}

/// Whether tmux shows `word` in `#{pane_start_command}` as it is (no quotes, no escapes).
fn unquoted_by_tmux(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('~')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+@:,=".contains(c))
}

/// `<root>/teams/<team>/workers/<worker>/exit.json`.
fn exit_file_in(root: &Path, team: &TeamName, worker: &WorkerName) -> PathBuf {
    root.join("teams")
        .join(team.as_str())
        .join("workers")
        .join(worker.as_str())
        .join("exit.json")
}

/// How the worker's main process (the supervisor's direct child) ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MainExit {
    /// The worker incarnation it belonged to (a later spawn of the same name has another).
    pub incarnation: Uuid,
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    pub at: String,
}

impl MainExit {
    /// A short human description: `exit status 1`, `killed by signal 9`.
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "ended (status unknown)".into(),
        }
    }
}

/// Writes the exit record (atomically) for the worker a supervisor runs (`agent::exit` reads
/// it).
pub fn write_exit(args: &SupervisorArgs, exit: &MainExit) -> Result<()> {
    let path = args.exit_file();
    let bytes = serde_json::to_vec(exit).map_err(|e| Error::Internal(e.to_string()))?;
    // A runtime file, like the worker's directory it lands in: not fsynced (`fsutil::Sync`).
    crate::fsutil::state_write_with(
        &args.state_root,
        &path,
        &bytes,
        0o600,
        crate::fsutil::Sync::Never,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> SupervisorArgs {
        SupervisorArgs {
            op: Some(Uuid::new_v4()),
            team: TeamName::new("demo").unwrap(),
            worker: WorkerName::new("worker-2").unwrap(),
            owner: Uuid::new_v4(),
            incarnation: Uuid::new_v4(),
            state_root: PathBuf::from("/ws/.team"),
            workspace: PathBuf::from("/ws"),
        }
    }

    fn cmdline(words: &[String]) -> Vec<u8> {
        let mut b = Vec::new();
        for w in words {
            b.extend_from_slice(w.as_bytes());
            b.push(0);
        }
        b
    }

    #[test]
    fn argv_round_trips_through_cmdline() {
        let a = args();
        let mut words = vec!["/usr/bin/team-scale".to_string()];
        words.extend(a.to_argv());
        words.extend(tail());
        assert_eq!(
            SupervisorArgs::from_cmdline(&cmdline(&words)),
            Some(a.clone())
        );
        // A supervisor started before `--op` existed reads the same, without it.
        let old = SupervisorArgs { op: None, ..a };
        let mut words = vec!["/usr/bin/team-scale".to_string()];
        words.extend(old.to_argv());
        words.extend(tail());
        assert_eq!(SupervisorArgs::from_cmdline(&cmdline(&words)), Some(old));
    }

    /// What `up` has every supervisor run: `/bin/sh` and the worker's startup script.
    fn tail() -> [String; 2] {
        [
            "/bin/sh".into(),
            "/ws/.team/teams/demo/runtime/worker-2.sh".into(),
        ]
    }

    /// Attack (a sixth-round black-box finding): the real supervisor started by hand under a
    /// reservation's identity to run a command of yours (`sleep`), which a teardown then took
    /// for the worker's and stopped. Only `/bin/sh` and that worker's own script is one.
    #[test]
    fn a_supervisor_runs_only_the_workers_script() {
        let a = args();
        let mut head = vec!["/usr/bin/team-scale".to_string()];
        head.extend(a.to_argv());
        for tail in [
            vec!["/bin/sleep", "99999"],
            vec!["/bin/sh", "-c", "exec sleep 99999"],
            vec!["sh", "/ws/.team/teams/demo/runtime/worker-2.sh"],
            vec!["/bin/sh", "/ws/.team/teams/demo/runtime/worker-3.sh"],
            vec!["/bin/sh", "/ws/.team/teams/demo/runtime/worker-2.sh", "x"],
            vec!["/bin/sh"],
            vec![],
        ] {
            let mut w = head.clone();
            w.extend(tail.iter().map(|t| t.to_string()));
            assert_eq!(SupervisorArgs::from_cmdline(&cmdline(&w)), None, "{tail:?}");
        }
    }

    #[test]
    fn other_shapes_are_not_supervisors() {
        let a = args();
        let mut words = vec!["/usr/bin/team-scale".to_string()];
        words.extend(a.to_argv());
        words.extend(tail());
        // A relative root, a bad name, a missing separator, another subcommand.
        // (`--op OP` takes words 2 and 3.)
        for (i, bad) in [
            (13, "rel/.team"),
            (5, "Bad Name"),
            (16, "x"),
            (1, "status"),
            (3, "not-a-uuid"),
        ] {
            let mut w = words.clone();
            w[i] = bad.into();
            assert_eq!(SupervisorArgs::from_cmdline(&cmdline(&w)), None, "{bad}");
        }
        assert_eq!(SupervisorArgs::from_cmdline(b""), None);
        assert_eq!(SupervisorArgs::from_cmdline(b"\0\0\0"), None);
    }

    proptest::proptest! {
        #[test]
        fn cmdline_parser_never_panics(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = SupervisorArgs::from_cmdline(&b);
        }
    }
}

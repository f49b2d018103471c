//! Finding a pane's (or a process's) team state, with proof of absence.
//!
//! A team is found through the workspace and name a pane is tagged with. Its state root is
//! `<workspace>/.team` unless the reaper was given an explicit state dir (`--state-dir` /
//! `TEAM_STATE_DIR`, read by the binary). "Gone" needs proof: `team.json` (and `journal.json`)
//! must be reported *absent* by the file system (`ENOENT`); anything else (permission, a file
//! where a directory should be, a malformed file, a busy state lock) is unverifiable.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **A workspace that is gone proves nothing either.** A pane tagged with a workspace that no
//!   longer exists was as likely moved or renamed (its team alive at the new path) as deleted:
//!   the reaper calls it `unverifiable` and leaves it alone (a deleted project's panes are ended
//!   by hand). Only a workspace that exists, without the team's state in it, is proof of absence.
//!
//! - **A state dir given to the reaper proves nothing about other workspaces.** `--state-dir` or a
//!   `TEAM_STATE_DIR` inherited from a team's pane names one state root; a pane tagged with
//!   another workspace whose own `.team` holds its team is `unverifiable` there, never
//!   `team_state_gone`. Absence is looked up from the workspace down without following a
//!   symlink: a symlinked `.team/locks` or `teams/` is unverifiable, never absence.
//!
//! - **Reaper and `init`**: the reaper looks at a team's scale lock before it looks for the
//!   team's state (and, when it kills, holds the lock until done); `init` takes the lock before
//!   its session exists and writes `teams/<t>/init.json` (owner id, pid) before its first pane,
//!   removing it once `team.json` is stored. A left-over record makes the reaper say "an init was
//!   interrupted" and the next `init` warn.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::lock::{self, Holder, LockGuard};
use crate::model::Team;
use crate::paths::{StateRoot, TeamName};
use crate::store::Store;

/// What an interrupted `init` left in `teams/<t>/init.json`.
#[derive(Debug, Clone)]
pub struct InitRecord {
    /// The owner id it tagged its panes and session with.
    pub owner: String,
    /// The private server it made its session on (`None`: an adopting init, which makes no
    /// pane).
    pub endpoint: Option<PathBuf>,
    /// The init process, and its start time (clock ticks since boot, as in `/proc`).
    pub pid: Option<u32>,
    pub pid_start: Option<u64>,
    /// The leader pane it made, once that pane existed.
    pub leader: Option<crate::model::PaneIncarnation>,
}

impl InitRecord {
    /// Whether the init process that wrote the record is gone: no process has its pid with
    /// its start time (a reused pid is another process), or it is a zombie. Without a
    /// recorded start time, only an absent pid counts.
    pub fn init_gone(&self) -> bool {
        let Some(pid) = self.pid else {
            return true;
        };
        match crate::process::node_of(pid) {
            Ok(None) => true,
            Ok(Some(n)) => {
                matches!(n.state, b'Z' | b'X' | b'x')
                    || self.pid_start.is_some_and(|s| s != n.id.start_time)
            }
            Err(_) => false,
        }
    }
}

/// The record an interrupted `init` of `key`'s team left, if any (read without following a
/// symlink, bounded; `None` when absent, unreadable or malformed).
pub fn interrupted_init(key: &TeamKey) -> Option<InitRecord> {
    let root = key.state_root();
    let b = crate::fsutil::state_read(root.path(), &root.init_record(&key.name), 4096)
        .ok()
        .flatten()?;
    let v: serde_json::Value = serde_json::from_slice(&b).ok()?;
    Some(InitRecord {
        owner: v.get("owner_id")?.as_str()?.to_string(),
        endpoint: v
            .get("endpoint")
            .and_then(|e| e.as_str())
            .map(PathBuf::from),
        pid: v
            .get("pid")
            .and_then(|p| p.as_u64())
            .and_then(|p| u32::try_from(p).ok()),
        pid_start: v.get("pid_start").and_then(|p| p.as_u64()),
        leader: match v.get("leader") {
            None | Some(serde_json::Value::Null) => None,
            Some(l) => Some(serde_json::from_value(l.clone()).ok()?),
        },
    })
}

/// Which team state a pane or process points at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TeamKey {
    /// The state root directory.
    pub root: PathBuf,
    pub name: TeamName,
    /// The workspace, when known (from the pane's `@team_workspace` tag).
    pub workspace: Option<PathBuf>,
}

impl TeamKey {
    /// The key of a team tagged with `workspace` and `name`; `explicit` is the reaper's state
    /// dir override. Errors are "tags unreadable" reasons.
    pub fn from_tags(
        workspace: &str,
        name: &str,
        explicit: Option<&Path>,
    ) -> Result<TeamKey, String> {
        let name = TeamName::new(name).map_err(|e| format!("tags unreadable: @team_name: {e}"))?;
        let ws = Path::new(workspace);
        if !ws.is_absolute() {
            return Err(format!(
                "tags unreadable: @team_workspace {workspace:?} is not an absolute path"
            ));
        }
        let root = StateRoot::resolve(ws, explicit)
            .map_err(|e| format!("tags unreadable: @team_workspace: {e}"))?;
        Ok(TeamKey {
            root: root.path().to_path_buf(),
            name,
            workspace: Some(ws.to_path_buf()),
        })
    }

    /// The workspace's own state root (`<workspace>/.team`), when it is not [`TeamKey::root`]
    /// (the reaper was given another state dir).
    pub fn own_root(&self) -> Option<StateRoot> {
        let ws = self.workspace.as_deref()?;
        let own = StateRoot::resolve(ws, None).ok()?;
        (own.path() != self.root).then_some(own)
    }

    /// The state root.
    pub fn state_root(&self) -> StateRoot {
        // `root` came out of `StateRoot::resolve`, so it is absolute and normalized.
        StateRoot::resolve(&self.root, Some(&self.root)).expect("an absolute state root")
    }
}

/// What the reaper knows about a team.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// The team's state, read and validated.
    Present(Box<Team>),
    /// Proven absent: the file system said `team.json` does not exist.
    Gone(String),
    /// Its scale lock is held by someone else: skip the whole team this run.
    Busy(String),
    /// The state could not be read or trusted.
    Unverifiable(String),
}

/// Reads team states once per run, caching by key. With `lock_teams`, it takes each present
/// team's scale lock (zero wait) and holds it until dropped, so no membership change can run
/// between classification and the kills; a lock already held makes the team [`Lookup::Busy`].
#[derive(Debug)]
pub struct Oracle {
    lock_teams: bool,
    /// Locks only the teams whose state root lies under this directory (`--only-under`): a
    /// reaper confined to some teams never holds back a scale operation of another.
    lock_scope: Option<std::path::PathBuf>,
    state_wait: Duration,
    cache: HashMap<TeamKey, Lookup>,
    guards: HashMap<TeamKey, LockGuard>,
}

impl Oracle {
    /// A new oracle. `state_wait` bounds the wait for a team's state lock while reading.
    pub fn new(lock_teams: bool, state_wait: Duration) -> Oracle {
        Oracle {
            lock_teams,
            lock_scope: None,
            state_wait,
            cache: HashMap::new(),
            guards: HashMap::new(),
        }
    }

    /// Locks only the teams whose state root lies under `dir` (see [`Oracle::new`]); the others
    /// are read as a reader does (a held lock reads as busy).
    pub fn lock_only_under(mut self, dir: Option<&std::path::Path>) -> Oracle {
        self.lock_scope = dir.map(std::path::Path::to_path_buf);
        self
    }

    /// The team behind `key` (read on first use).
    pub fn lookup(&mut self, key: &TeamKey) -> Lookup {
        if let Some(l) = self.cache.get(key) {
            return l.clone();
        }
        let l = self.read(key);
        self.cache.insert(key.clone(), l.clone());
        l
    }

    /// Releases the scale lock this oracle holds for `key` (so that code taking it itself,
    /// like `reconcile`, can run). Returns whether it held one.
    pub fn release(&mut self, key: &TeamKey) -> bool {
        self.guards.remove(key).is_some()
    }

    /// Every lookup made so far.
    pub fn known(&self) -> impl Iterator<Item = (&TeamKey, &Lookup)> {
        self.cache.iter()
    }

    fn read(&mut self, key: &TeamKey) -> Lookup {
        let root = key.state_root();
        // 1. The scale lock first. `init` holds it from before its first pane exists until the
        //    team's state is stored, and every membership change holds it too: a team whose
        //    state is missing *while the lock is held* may be being made right now. (The
        //    listing this lookup serves was taken before, so a pane made after this check is
        //    not in it.) With `lock_teams` the lock is kept until the kills are done.
        let scale = root.scale_lock(&key.name);
        match absent(root.path(), &scale) {
            // No lock file: no command of the tools ever ran for this team here.
            Ok(true) => {}
            Ok(false) => {
                let in_scope = self
                    .lock_scope
                    .as_deref()
                    .is_none_or(|d| key.root.starts_with(d));
                if self.lock_teams && in_scope {
                    match lock::acquire_in(root.path(), &scale, Duration::ZERO, &Holder::me("reap"))
                    {
                        Ok(g) => {
                            self.guards.insert(key.clone(), g);
                        }
                        Err(crate::Error::Busy { holder, .. }) => {
                            return Lookup::Busy(format!("scale lock held by {holder}"));
                        }
                        Err(e) => return Lookup::Unverifiable(e.to_string()),
                    }
                } else {
                    match Store::new(root.clone(), key.name.clone(), Duration::ZERO).scale_holder()
                    {
                        Ok(Some(h)) => return Lookup::Busy(format!("scale lock held by {h}")),
                        Ok(None) => {}
                        Err(e) => return Lookup::Unverifiable(e.to_string()),
                    }
                }
            }
            Err(e) => return Lookup::Unverifiable(e),
        }
        // 2. Only then, proof of absence.
        let team_json = root.team_json(&key.name);
        match absent(root.path(), &team_json) {
            Ok(true) => match absent(root.path(), &root.journal(&key.name)) {
                Ok(true) => {
                    // A state dir given to the reaper (`--state-dir`, or a `TEAM_STATE_DIR`
                    // inherited from a team's pane) is not where every team lives: absence
                    // there proves nothing for a team whose own workspace holds its state.
                    if let Some(own) = key.own_root()
                        && !matches!(absent(own.path(), &own.team_json(&key.name)), Ok(true))
                    {
                        return Lookup::Unverifiable(format!(
                            "{} does not exist, but the team's own workspace has state at {}: run the reaper without --state-dir / TEAM_STATE_DIR",
                            team_json.display(),
                            own.path().display()
                        ));
                    }
                    let interrupted =
                        matches!(absent(root.path(), &root.init_record(&key.name)), Ok(false));
                    return Lookup::Gone(if interrupted {
                        format!(
                            "{} does not exist: an init of team {} was interrupted",
                            team_json.display(),
                            key.name
                        )
                    } else {
                        format!("{} does not exist", team_json.display())
                    });
                }
                Ok(false) => {
                    return Lookup::Unverifiable(format!(
                        "{} is missing but a journal is left; run a team-scale command first",
                        team_json.display()
                    ));
                }
                Err(e) => return Lookup::Unverifiable(e),
            },
            Ok(false) => {}
            Err(e) => return Lookup::Unverifiable(e),
        }
        match Store::new(root, key.name.clone(), self.state_wait).load() {
            Ok(t) => Lookup::Present(Box::new(t)),
            Err(e) => Lookup::Unverifiable(format!("team state unreadable: {e}")),
        }
    }
}

/// `Ok(true)` only when the file system says `p` (a file under the state root `root`) does not
/// exist, looked up from the workspace down without following a symlink (a symlinked `.team`,
/// `locks/` or `teams/` proves nothing and is an error). A workspace that is gone is absence.
fn absent(root: &Path, p: &Path) -> Result<bool, String> {
    // A workspace that is not there was moved or renamed as often as deleted: its team may
    // live on at the new path, so that is never proof of absence.
    if let Some(ws) = root.parent()
        && matches!(std::fs::symlink_metadata(ws), Err(e) if e.kind() == ErrorKind::NotFound)
    {
        return Err(format!(
            "the team's workspace {} is gone (moved, renamed or deleted): its panes are left alone; if it was deleted, end them by hand",
            ws.display()
        ));
    }
    match crate::fsutil::state_open(root, p, crate::fsutil::Access::Read) {
        Ok(Some(_)) => Ok(false),
        Ok(None) => Ok(true),
        Err(e) => Err(format!("cannot inspect {}: {e}", p.display())),
    }
}

/// The audit log for effects on a team: the team's state root's log when its state exists;
/// when it is gone, `explicit` (`--audit-log` / `TEAM_AUDIT_LOG`), else the state root's log
/// if the workspace still exists. `Err` means: refuse the effect (fail closed).
pub fn audit_log_for(
    key: &TeamKey,
    lookup: &Lookup,
    explicit: Option<&Path>,
) -> Result<PathBuf, String> {
    let root = key.state_root();
    match lookup {
        Lookup::Present(_) => Ok(root.audit_log()),
        Lookup::Gone(_) => {
            if let Some(p) = explicit {
                return Ok(p.to_path_buf());
            }
            let ws_exists = key.workspace.as_deref().is_some_and(Path::is_dir);
            if ws_exists {
                Ok(root.audit_log())
            } else {
                Err("no audit log: the team's workspace is gone; pass --audit-log (or TEAM_AUDIT_LOG)".into())
            }
        }
        Lookup::Busy(_) | Lookup::Unverifiable(_) => {
            Err("no audit log for a team that is busy or unverifiable".into())
        }
    }
}

/// `TEAM_STATE_DIR` in a process's environment, when readable and set.
pub fn env_state_dir(pid: u32) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let env = crate::process::read_procfs(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"TEAM_STATE_DIR="))
        .filter(|v| !v.is_empty())
        .map(|v| PathBuf::from(std::ffi::OsStr::from_bytes(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gone_needs_enoent() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let key = TeamKey::from_tags(ws.to_str().unwrap(), "t", None).unwrap();
        let mut o = Oracle::new(false, Duration::from_secs(1));
        assert!(matches!(o.lookup(&key), Lookup::Gone(_)));
        // A file where the state root's directory should be: not "gone".
        std::fs::write(ws.join(".team"), b"x").unwrap();
        let mut o = Oracle::new(false, Duration::from_secs(1));
        assert!(
            matches!(o.lookup(&key), Lookup::Unverifiable(_)),
            "{:?}",
            o.lookup(&key)
        );
        // A whole missing workspace may have been moved: unverifiable, never gone.
        let key = TeamKey::from_tags(d.path().join("nope").to_str().unwrap(), "t", None).unwrap();
        assert!(matches!(
            Oracle::new(false, Duration::ZERO).lookup(&key),
            Lookup::Unverifiable(_)
        ));
    }

    #[test]
    fn bad_tags_are_unreadable() {
        assert!(TeamKey::from_tags("relative", "t", None).is_err());
        assert!(TeamKey::from_tags("/x", "Bad Name", None).is_err());
        assert!(TeamKey::from_tags("/x/../y", "t", None).is_err());
    }

    #[test]
    fn audit_log_fails_closed_without_a_workspace() {
        let d = tempfile::tempdir().unwrap();
        let key = TeamKey::from_tags(d.path().join("gone").to_str().unwrap(), "t", None).unwrap();
        let g = Lookup::Gone("x".into());
        assert!(audit_log_for(&key, &g, None).is_err());
        assert_eq!(
            audit_log_for(&key, &g, Some(Path::new("/a/log"))).unwrap(),
            PathBuf::from("/a/log")
        );
        let key = TeamKey::from_tags(d.path().to_str().unwrap(), "t", None).unwrap();
        assert_eq!(
            audit_log_for(&key, &g, None).unwrap(),
            d.path().join(".team/audit.jsonl")
        );
    }
}

#[cfg(test)]
mod init_record_tests {
    use super::InitRecord;

    fn rec(pid: Option<u32>, pid_start: Option<u64>) -> InitRecord {
        InitRecord {
            owner: "o".into(),
            endpoint: None,
            pid,
            pid_start,
            leader: None,
        }
    }

    /// An init counts as gone when its pid is free, or taken by another process (another
    /// start time): a reused pid never keeps its session from the reaper.
    #[test]
    fn an_init_is_gone_by_its_pid_and_start_time() {
        let me = std::process::id();
        let start = crate::process::start_time(me).unwrap().unwrap();
        assert!(!rec(Some(me), Some(start)).init_gone(), "alive, same start");
        assert!(rec(Some(me), Some(start + 1)).init_gone(), "a reused pid");
        assert!(
            !rec(Some(me), None).init_gone(),
            "no start recorded: the pid decides"
        );
        // pid_max is at most 4194304: this pid never runs.
        assert!(rec(Some(4_194_305), Some(1)).init_gone());
    }
}

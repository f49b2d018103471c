//! The serde types of the state files: `team.json`, tasks, worker status, events.
//!
//! These types are an API boundary (they are on disk and read by other versions), so every
//! change to them goes with a `schema_version` decision. Unknown versions are refused, never
//! guessed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::paths::{RoleName, TeamName, WorkerName};

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u64 = 1;

/// The canonical record of one team.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Team {
    pub schema_version: u64,
    pub name: TeamName,
    /// Names this instance of the team; a team re-created under the same name gets a new one.
    pub owner_id: Uuid,
    /// Increases by one on every committed change.
    pub generation: u64,
    pub created_at: String,
    /// The canonical workspace path.
    pub workspace: PathBuf,
    pub state: TeamState,
    /// The absolute path of the tmux server socket.
    pub endpoint: PathBuf,
    /// Whether the tools started the server (`init --private`).
    pub private_server: bool,
    pub session: SessionRecord,
    pub leader: Leader,
    /// Panes no command ever kills or types into (a HUD, a dashboard).
    #[serde(default)]
    pub protected: Vec<PaneIncarnation>,
    pub settings: Settings,
    /// Monotonic: never lowered, not even by a rollback.
    pub next_worker_index: u64,
    /// Monotonic: never lowered.
    pub next_task_id: u64,
    #[serde(default)]
    pub workers: Vec<Worker>,
}

/// Whether the team is running or was shut down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeamState {
    Active,
    Stopped,
}

/// The tmux session a team lives in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRecord {
    /// `$N`.
    pub id: String,
    pub name: String,
    /// Whether the tools created it (only then may `shutdown` kill it).
    pub created_by_tools: bool,
}

/// The leader pane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Leader {
    pub pane: PaneIncarnation,
    /// Whether the tools created it; an adopted leader is never killed.
    pub created_by_tools: bool,
}

/// What identifies one pane for its whole life. A `%N` alone proves nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaneIncarnation {
    pub server_pid: u32,
    pub server_start: u64,
    /// `%N`.
    pub pane_id: String,
    pub pane_pid: u32,
    /// `$N`.
    pub session_id: String,
    /// `@N`.
    pub window_id: String,
    /// Start time of `pane_pid` (`/proc/<pid>/stat` field 22), when it could be read.
    #[serde(default)]
    pub process_start: Option<u64>,
}

/// How workers get a git worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode", content = "prefix")]
pub enum WorktreeMode {
    Off,
    Detached,
    /// `branch:<prefix>`: each worker on `<prefix>/worker-<n>`.
    Branch(String),
}

/// The team's settings, fixed at `init` (some changeable by `policy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub max_workers: u32,
    /// The command each worker `exec`s (run by `sh -c`).
    pub worker_cmd: String,
    pub worktree: WorktreeMode,
    /// Text that, once seen in the pane, means the worker is ready.
    #[serde(default)]
    pub ready_pattern: Option<String>,
    /// Text typed into a new worker's pane once it is ready; `{inbox}` and `{worker}` are
    /// replaced. `None` means the default line naming the inbox.
    #[serde(default)]
    pub trigger: Option<String>,
    /// Whether `up` and `down` are allowed.
    pub scaling: bool,
    /// The agent profile of the workers (`codex`, `claude`, `gemini`, `aider`, `shell`,
    /// `custom`, or one of the user's in `agents.toml`). `None` (teams made before profiles):
    /// detected from `worker_cmd` at each `up`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What teardown and the reaper do with a worker's *detached* residue (processes below its
    /// supervisor that left the pane's session) that is provably only the worker's. Shared
    /// ones (listening) are never signalled, whatever this says.
    #[serde(default)]
    pub residue: ResiduePolicy,
    /// What happens to the tasks `down` returns to `pending`: offered to idle workers
    /// (`auto`) or left for the leader (`manual`, the default; not written then, so older
    /// builds still read the file).
    #[serde(default, skip_serializing_if = "ReassignPolicy::is_manual")]
    pub reassign: ReassignPolicy,
}

/// What happens to tasks returned by `down`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReassignPolicy {
    /// Left pending for the leader to assign.
    #[default]
    Manual,
    /// Offered to the remaining idle workers.
    Auto,
}

impl ReassignPolicy {
    pub fn is_manual(&self) -> bool {
        *self == ReassignPolicy::Manual
    }
    pub fn word(self) -> &'static str {
        match self {
            ReassignPolicy::Manual => "manual",
            ReassignPolicy::Auto => "auto",
        }
    }
}

/// What happens to a worker's detached residue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResiduePolicy {
    /// Terminate it with the worker (proven, audited).
    #[default]
    Kill,
    /// Leave it running and report it.
    Report,
}

impl ResiduePolicy {
    pub fn word(self) -> &'static str {
        match self {
            ResiduePolicy::Kill => "kill",
            ResiduePolicy::Report => "report",
        }
    }
}

/// A worker's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// Reserved by a scale-up; its pane, once split, is recorded too.
    Pending,
    /// A member, its pane incarnation proven at creation.
    Active,
    /// Committed for removal; cleanup is under way or blocked (reasons recorded).
    Removing,
}

/// One worker record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Worker {
    pub name: WorkerName,
    pub index: u64,
    #[serde(default)]
    pub role: Option<RoleName>,
    pub lifecycle: Lifecycle,
    /// Per-spawn identity: the pane tag `@team_incarnation` and `TEAM_INCARNATION`.
    pub incarnation: Uuid,
    /// The operation that created it.
    pub op_id: Uuid,
    #[serde(default)]
    pub pane: Option<PaneIncarnation>,
    pub resources: Resources,
    /// Why cleanup is blocked, for `removing` workers.
    #[serde(default)]
    pub removal_reasons: Vec<String>,
    pub created_at: String,
}

/// What a worker owns on disk.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    #[serde(default)]
    pub worker_dir: Option<PathBuf>,
    #[serde(default)]
    pub script: Option<PathBuf>,
    #[serde(default)]
    pub worktree: Option<WorktreeRecord>,
}

/// A worktree the tools made for a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeRecord {
    pub path: PathBuf,
    #[serde(default)]
    pub branch: Option<String>,
    /// Whether the tools created the branch (only then may they delete it).
    pub branch_created: bool,
}

/// One task (`tasks/<id>.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub schema_version: u64,
    pub id: u64,
    pub subject: String,
    pub description: String,
    pub status: TaskStatus,
    #[serde(default)]
    pub owner: Option<WorkerName>,
    #[serde(default)]
    pub role: Option<RoleName>,
    #[serde(default)]
    pub blocked_by: Vec<u64>,
    #[serde(default)]
    pub claim: Option<Claim>,
    /// Bumped on every change.
    pub version: u64,
    pub created_at: String,
}

/// A task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

/// A worker's claim on a task, bound to its incarnation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub worker: WorkerName,
    pub incarnation: Uuid,
    pub at: String,
}

/// What a worker reports about itself (`workers/<worker>/status.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkState {
    Idle,
    Busy,
    Done,
    Draining,
}

/// `workers/<worker>/status.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerStatus {
    pub schema_version: u64,
    pub worker: WorkerName,
    pub incarnation: Uuid,
    pub state: WorkState,
    #[serde(default)]
    pub note: Option<String>,
    pub updated_at: String,
    /// The state before `draining`, restored if a scale-down fails before its commit.
    #[serde(default)]
    pub before_drain: Option<WorkState>,
}

/// One line of `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub ts: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub team: TeamName,
    pub generation: u64,
    #[serde(default)]
    pub details: BTreeMap<String, serde_json::Value>,
}

impl Team {
    /// Whether the tools may take this team's leader pane down (`Err` says why not): they made
    /// it (`created_by_tools`), and they only ever make a leader in a session of their own on
    /// the private server `init` starts for the workspace, so the recorded endpoint must be
    /// that server's socket. `workspace` is the one the state was read from (the recorded
    /// one when the state root serves several). A record that names a leader anywhere else
    /// (forged, or copied from another team) names a pane of someone else's: the record's
    /// other fields, tags and session options are claims anyone can copy.
    pub fn leader_is_the_tools(&self, workspace: &std::path::Path) -> Result<(), String> {
        if !self.leader.created_by_tools {
            return Err("an adopted leader pane is never killed".into());
        }
        if !crate::paths::is_private_endpoint_of(&self.endpoint, workspace) {
            return Err(format!(
                "the record names a leader on {}, which is not the private tmux server of {} (the only place the tools make a leader); not killed",
                self.endpoint.display(),
                workspace.display()
            ));
        }
        Ok(())
    }

    /// Parses `team.json` bytes, refusing unknown schema versions before anything else.
    pub fn parse(path: &std::path::Path, bytes: &[u8]) -> Result<Team> {
        let team: Team = parse_versioned(path, bytes)?;
        team.validate(path)?;
        Ok(team)
    }

    /// Serializes for disk (pretty, trailing newline).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("team serializes");
        v.push(b'\n');
        v
    }

    /// Internal consistency checks that serde cannot express. A state file that fails them is
    /// refused whole.
    pub fn validate(&self, path: &std::path::Path) -> Result<()> {
        let bad = |msg: String| {
            Err(Error::MalformedState {
                path: path.to_path_buf(),
                msg,
            })
        };
        if !self.endpoint.is_absolute() {
            return bad(format!(
                "endpoint {} is not absolute",
                self.endpoint.display()
            ));
        }
        let mut names = std::collections::HashSet::new();
        let mut panes = std::collections::HashMap::new();
        let mut protected_ids: Vec<&str> = vec![self.leader.pane.pane_id.as_str()];
        protected_ids.extend(self.protected.iter().map(|p| p.pane_id.as_str()));
        for p in std::iter::once(&self.leader.pane).chain(self.protected.iter()) {
            p.validate_shape().or_else(&bad)?;
        }
        for w in &self.workers {
            if !names.insert(w.name.as_str()) {
                return bad(format!("worker {} appears twice", w.name));
            }
            if w.name != WorkerName::for_index(w.index) {
                return bad(format!("worker {} has index {}", w.name, w.index));
            }
            if w.index >= self.next_worker_index {
                return bad(format!(
                    "worker {} has index {} but next_worker_index is {}",
                    w.name, w.index, self.next_worker_index
                ));
            }
            if let Some(p) = &w.pane {
                p.validate_shape()
                    .or_else(|m| bad(format!("worker {}: {m}", w.name)))?;
                if protected_ids.contains(&p.pane_id.as_str()) {
                    return bad(format!(
                        "worker {} names pane {}, which is the leader's or a protected pane",
                        w.name, p.pane_id
                    ));
                }
                if let Some(other) = panes.insert(p.pane_id.as_str(), w.name.as_str()) {
                    return bad(format!(
                        "workers {other} and {} both name pane {}",
                        w.name, p.pane_id
                    ));
                }
            }
            if w.lifecycle == Lifecycle::Active && w.pane.is_none() {
                return bad(format!("active worker {} has no pane", w.name));
            }
        }
        Ok(())
    }

    /// The worker named `name`.
    pub fn worker(&self, name: &WorkerName) -> Option<&Worker> {
        self.workers.iter().find(|w| &w.name == name)
    }

    /// The worker named `name`, mutably.
    pub fn worker_mut(&mut self, name: &WorkerName) -> Option<&mut Worker> {
        self.workers.iter_mut().find(|w| &w.name == name)
    }

    /// Workers in a lifecycle state.
    pub fn in_state(&self, s: Lifecycle) -> impl Iterator<Item = &Worker> {
        self.workers.iter().filter(move |w| w.lifecycle == s)
    }

    /// Whether a pane id is the leader's or a protected pane's.
    pub fn is_protected_pane(&self, pane_id: &str) -> bool {
        self.leader.pane.pane_id == pane_id || self.protected.iter().any(|p| p.pane_id == pane_id)
    }
}

impl PaneIncarnation {
    /// Checks the shapes of the ids (`%N`, `$N`, `@N`), so a hostile state file cannot smuggle
    /// anything into a tmux command.
    pub fn validate_shape(&self) -> std::result::Result<(), String> {
        for (what, v, sigil) in [
            ("pane_id", &self.pane_id, '%'),
            ("session_id", &self.session_id, '$'),
            ("window_id", &self.window_id, '@'),
        ] {
            if !is_tmux_id(v, sigil) {
                return Err(format!("{what} {v:?} is not of the form {sigil}N"));
            }
        }
        if self.pane_pid == 0 || self.server_pid == 0 {
            return Err("a pid of 0".into());
        }
        Ok(())
    }
}

/// Whether `s` is a tmux id: the sigil then one or more ASCII digits.
pub fn is_tmux_id(s: &str, sigil: char) -> bool {
    let mut c = s.chars();
    c.next() == Some(sigil) && {
        let rest = c.as_str();
        !rest.is_empty() && rest.len() <= 10 && rest.bytes().all(|b| b.is_ascii_digit())
    }
}

/// Refuses a JSON document whose `schema_version` is missing or not ours.
pub fn check_schema(path: &std::path::Path, v: &serde_json::Value) -> Result<()> {
    match v.get("schema_version").and_then(|s| s.as_u64()) {
        Some(SCHEMA_VERSION) => Ok(()),
        Some(found) => Err(Error::UnknownSchema {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        }),
        None => Err(Error::MalformedState {
            path: path.to_path_buf(),
            msg: "missing or non-numeric schema_version".into(),
        }),
    }
}

/// Parses a versioned state file: unknown schema versions are refused before anything else.
fn parse_versioned<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    bytes: &[u8],
) -> Result<T> {
    let malformed = |e: serde_json::Error| Error::MalformedState {
        path: path.to_path_buf(),
        msg: e.to_string(),
    };
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(malformed)?;
    check_schema(path, &v)?;
    serde_json::from_value(v).map_err(malformed)
}

/// Parses a task file.
pub fn parse_task(path: &std::path::Path, bytes: &[u8]) -> Result<Task> {
    parse_versioned(path, bytes)
}

/// Parses a worker status file.
pub fn parse_status(path: &std::path::Path, bytes: &[u8]) -> Result<WorkerStatus> {
    parse_versioned(path, bytes)
}

/// Pretty JSON with a trailing newline, for any state file.
pub fn to_file_bytes<T: Serialize>(v: &T) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).expect("state serializes");
    b.push(b'\n');
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tmux_ids() {
        assert!(is_tmux_id("%0", '%'));
        assert!(is_tmux_id("$12", '$'));
        assert!(!is_tmux_id("%", '%'));
        assert!(!is_tmux_id("%1;kill-server", '%'));
        assert!(!is_tmux_id("@1", '%'));
        assert!(!is_tmux_id("%-1", '%'));
    }

    #[test]
    fn unknown_schema_refused() {
        let p = std::path::Path::new("team.json");
        let err = Team::parse(p, br#"{"schema_version": 99}"#).unwrap_err();
        assert!(
            matches!(err, Error::UnknownSchema { found: 99, .. }),
            "{err}"
        );
        let err = Team::parse(p, b"{").unwrap_err();
        assert!(matches!(err, Error::MalformedState { .. }));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let p = std::path::Path::new("x.json");
            let _ = Team::parse(p, &bytes);
            let _ = parse_task(p, &bytes);
            let _ = parse_status(p, &bytes);
        }

        #[test]
        fn json_shaped_garbage_never_panics(s in r#"\{"schema_version":1(,"[a-z_]{1,12}":("[^"]{0,8}"|[0-9]{1,4}|null|\[\]|\{\}))*\}"#) {
            let p = std::path::Path::new("x.json");
            let _ = Team::parse(p, s.as_bytes());
            let _ = parse_task(p, s.as_bytes());
        }
    }
}

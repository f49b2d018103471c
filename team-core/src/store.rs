//! The team store: reads and commits a team's state under its locks.
//!
//! Every read-modify-write goes through [`Store::transact`], which takes the state lock,
//! replays a leftover journal, reads `team.json`, lets the caller change it (and stage other
//! files), and commits: a single-file change by atomic replace, a multi-file change through
//! the redo journal. The state lock is released before `transact` returns, so callers never
//! hold it across tmux, git or a wait.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Temp files of killed writers** (`.<name>.tmp-<pid>-<uuid>`, from `fsutil::atomic_write`)
//!   are swept by `reconcile` under the state lock, which every writer in the team directory and
//!   `tasks/` holds, so none of them belongs to a live writer. Readers ignore them (only
//!   `<id>.json` is a task). Found by `cargo xtask chaos`.
//!
//! - **Re-`init` never lowers `next_task_id`**: `Store::create` over a stopped team starts at the
//!   maximum of the old counter and every `<id>.json` left in `tasks/`, plus one, so an old task
//!   file is never overwritten.
//!
//! - **State copied or moved from another workspace is refused** (exit 65, `Error::StateMoved`,
//!   naming both workspaces). A state root belongs to a workspace when it *is* `<workspace>/.team`
//!   (`StateRoot::workspace`, however the root was named); `Store` refuses a `team.json` whose
//!   `workspace` is another one, on every read (`load`, `transact`, `create` over an old team,
//!   `snapshot`), so every command that would act (`up`, `down`, `shutdown`, `reconcile`,
//!   `policy`, `task`, `worker-status`, `init` re-creating) and `status` refuse before any effect;
//!   `list` shows the team as unreadable. `status` refuses rather than warns: it can rebind the
//!   session (a write), and a copy's panes are the original's. A root named explicitly elsewhere
//!   (`--state-dir` / `TEAM_STATE_DIR` not equal to `<workspace>/.team`) may serve several
//!   workspaces, so the check does not apply there. The reaper (`reap/classify.rs`) calls a pane
//!   whose `@team_workspace` is not the workspace its found state records `unverifiable`, before
//!   any owner comparison, so a foreign `.team` cannot make live panes look like orphans.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::fsutil::{self, Access};
use crate::journal::{self, Entry, Journal};
use crate::lock::{self, Holder, LockGuard};
use crate::model::{self, Event, Task, Team, WorkerStatus};
use crate::paths::{StateRoot, TeamName, WorkerName};

/// Files staged by a transaction besides `team.json`, relative to the team directory.
#[derive(Debug, Default)]
pub struct Changes {
    files: BTreeMap<String, Option<Vec<u8>>>,
}

impl Changes {
    /// Writes a task file.
    pub fn put_task(&mut self, t: &Task) {
        self.files.insert(
            format!("tasks/{}.json", t.id),
            Some(model::to_file_bytes(t)),
        );
    }
    /// Writes a worker's status file.
    pub fn put_status(&mut self, s: &WorkerStatus) {
        self.files.insert(
            format!("workers/{}/status.json", s.worker),
            Some(model::to_file_bytes(s)),
        );
    }
    /// Writes a worker's inbox (`workers/<worker>/inbox.md`).
    pub fn put_inbox(&mut self, w: &WorkerName, text: &str) {
        self.files.insert(
            format!("workers/{w}/inbox.md"),
            Some(text.as_bytes().to_vec()),
        );
    }
    /// Deletes a worker's status file.
    pub fn delete_status(&mut self, w: &WorkerName) {
        self.files.insert(format!("workers/{w}/status.json"), None);
    }
    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Access to one team's state in one state root.
#[derive(Debug, Clone)]
pub struct Store {
    root: StateRoot,
    team: TeamName,
    wait: Duration,
}

impl Store {
    /// A store for `team` under `root`; lock waits are bounded by `wait`.
    pub fn new(root: StateRoot, team: TeamName, wait: Duration) -> Store {
        Store { root, team, wait }
    }
    /// The state root.
    pub fn root(&self) -> &StateRoot {
        &self.root
    }
    /// The team name.
    pub fn team(&self) -> &TeamName {
        &self.team
    }
    /// The team directory.
    pub fn team_dir(&self) -> PathBuf {
        self.root.team_dir(&self.team)
    }
    /// Whether `team.json` exists. Anything there that cannot be opened safely (a symlink, a
    /// FIFO, a symlinked directory above it) counts as existing, so the [`Store::load`] that
    /// follows reports it.
    pub fn exists(&self) -> bool {
        !matches!(
            fsutil::state_open(self.rp(), &self.root.team_json(&self.team), Access::Read),
            Ok(None)
        )
    }

    fn rp(&self) -> &Path {
        self.root.path()
    }

    /// Refuses (before `init` has any effect) a team directory that `init` would take up
    /// without having made it: with no `team.json` there, it may hold only what an `init`
    /// lays out and leaves when interrupted (`init.json`, the temp files of its writes, and
    /// `workers/`, `runtime/` and `trash/` as empty directories). A teardown deletes what is in
    /// the trash and in a removed worker's directory, so a `trash/` of the user's (a state dir
    /// pointed at one) would be emptied by the first one. A team with a `team.json` is the
    /// tools' own (re-`init` of a stopped team). Reads only, following no symlink.
    pub fn check_adoptable(&self) -> Result<()> {
        if self.exists() {
            return Ok(());
        }
        let dir = self.team_dir();
        let Some(entries) = fsutil::state_list(self.rp(), &dir)? else {
            return Ok(());
        };
        let not_ours = |path: PathBuf, why: &str| {
            Err(Error::NotMadeByInit {
                path,
                why: why.to_string(),
            })
        };
        for e in entries {
            let path = dir.join(&e.name);
            let name = e.name.to_str().unwrap_or("");
            let tmp = [".init.json.tmp-", ".team.json.tmp-"]
                .iter()
                .any(|p| name.starts_with(p));
            if e.is_file && (name == "init.json" || tmp) {
                continue;
            }
            if !["workers", "runtime", "trash"].contains(&name) {
                return not_ours(path, "no team.json, and init lays out nothing of that name");
            }
            if fsutil::state_kind(self.rp(), &path)? != Some("directory") {
                return not_ours(path, "not a directory");
            }
            if fsutil::state_list(self.rp(), &path)?.is_some_and(|v| !v.is_empty()) {
                return not_ours(path, "no team.json, and it is not empty");
            }
        }
        Ok(())
    }

    /// Whether the team directory exists (a symlinked component is an error, not absence).
    fn team_dir_exists(&self) -> Result<bool> {
        fsutil::state_dir_exists(self.rp(), &self.team_dir())
    }

    /// Takes the team's scale lock for a whole membership-changing operation.
    pub fn lock_scale(&self, op: &str) -> Result<LockGuard> {
        self.root.ensure()?;
        lock::acquire_in(
            self.rp(),
            &self.root.scale_lock(&self.team),
            self.wait,
            &Holder::me(op),
        )
    }

    /// Whether another process holds the scale lock now, and who.
    pub fn scale_holder(&self) -> Result<Option<Holder>> {
        lock::live_holder(self.rp(), &self.root.scale_lock(&self.team))
    }

    fn lock_state(&self, op: &str) -> Result<LockGuard> {
        self.root.ensure()?;
        lock::acquire_in(
            self.rp(),
            &self.root.state_lock(&self.team),
            self.wait,
            &Holder::me(op),
        )
    }

    fn read_team_unlocked(&self) -> Result<Option<Team>> {
        let path = self.root.team_json(&self.team);
        match fsutil::state_read(self.rp(), &path, fsutil::limits::TEAM_JSON)? {
            None => Ok(None),
            Some(b) => {
                let t = Team::parse(&path, &b)?;
                if t.name != self.team {
                    return Err(Error::MalformedState {
                        path,
                        msg: format!(
                            "names team {:?}, not {:?}",
                            t.name.as_str(),
                            self.team.as_str()
                        ),
                    });
                }
                // State copied or moved from another workspace (`cp -a ws ws-copy`) names
                // that workspace's panes, with their real owner id: acting on it from here
                // would kill the original team. Refused before anything reads it as ours.
                if let Some(ws) = self.root.workspace()
                    && t.workspace != ws
                {
                    return Err(Error::StateMoved {
                        path,
                        recorded: t.workspace,
                        here: ws.to_path_buf(),
                    });
                }
                Ok(Some(t))
            }
        }
    }

    /// Replays a leftover journal (caller holds the state lock).
    fn replay_unlocked(&self) -> Result<bool> {
        let dir = self.team_dir();
        if fsutil::state_open(self.rp(), &journal::journal_path(&dir), Access::Read)?.is_none() {
            return Ok(false);
        }
        // The generation on disk decides whether the journal fits.
        let path = self.root.team_json(&self.team);
        let generation = match fsutil::state_read(self.rp(), &path, fsutil::limits::TEAM_JSON)? {
            Some(b) => serde_json::from_slice::<serde_json::Value>(&b)
                .ok()
                .and_then(|v| v.get("generation").and_then(|g| g.as_u64())),
            None => None,
        };
        journal::replay(self.rp(), &dir, generation)
    }

    /// Reads the team's state (replaying a leftover journal first).
    pub fn load(&self) -> Result<Team> {
        if !self.team_dir_exists()? {
            return Err(self.no_such_team());
        }
        let _g = self.lock_state("read")?;
        self.replay_unlocked()?;
        let team = self
            .read_team_unlocked()?
            .ok_or_else(|| self.no_such_team())?;
        // `events.jsonl` is appended to after effects; a hostile one (a symlink to a user's
        // file, a FIFO) is refused here, before any command that loads the team acts.
        fsutil::state_open(self.rp(), &self.root.events(&self.team), Access::Read)?;
        Ok(team)
    }

    /// Reads the team's state without any lock, for readers (`status`, `list`): `team.json`
    /// is only ever replaced whole (rename), so what is read is one committed generation. A
    /// journal on disk means a multi-file change is being applied (or was cut short): it is
    /// reported as an operation in flight, never waited for and never replayed here; the next
    /// writer replays it. Readers never delay writers and are never refused as busy.
    pub fn snapshot(&self) -> Result<Snapshot> {
        if !self.team_dir_exists()? {
            return Err(self.no_such_team());
        }
        let in_flight = fsutil::state_open(
            self.rp(),
            &journal::journal_path(&self.team_dir()),
            Access::Read,
        )?
        .is_some();
        let team = self
            .read_team_unlocked()?
            .ok_or_else(|| self.no_such_team())?;
        // The same refusal of a hostile state dir as `load` (a symlinked lock or events file),
        // though a reader takes no lock and appends nothing: the user learns of it at once.
        fsutil::state_open(self.rp(), &self.root.state_lock(&self.team), Access::Read)?;
        fsutil::state_open(self.rp(), &self.root.events(&self.team), Access::Read)?;
        Ok(Snapshot { team, in_flight })
    }

    fn no_such_team(&self) -> Error {
        Error::NoSuchTeam {
            team: self.team.to_string(),
            state_root: self.root.path().to_path_buf(),
        }
    }

    /// Creates the team's first `team.json`. Refuses when one exists and the team is not
    /// stopped (`Refused`), unless `replace_stopped` allows replacing a stopped team.
    pub fn create(&self, team: &Team) -> Result<()> {
        self.root.ensure()?;
        let _g = self.lock_state("init")?;
        fsutil::state_create_dir(self.rp(), &self.team_dir())?;
        // The directories every worker's files go in, made (durably) with the team: the first
        // `up` then makes none of its own before its split.
        for d in ["workers", "runtime"] {
            fsutil::state_create_dir(self.rp(), &self.team_dir().join(d))?;
        }
        self.replay_unlocked()?;
        let old = self.read_team_unlocked()?;
        if let Some(old) = &old
            && old.state != model::TeamState::Stopped
        {
            return Err(Error::Refused(format!(
                "team {:?} already exists in {} (owner {})",
                self.team.as_str(),
                self.root.path().display(),
                old.owner_id
            )));
        }
        // Task ids are never reused: a re-created team's first id is above every id the old
        // team used (its counter, and every task file it left).
        let mut team = team.clone();
        let max_file = fsutil::state_list(self.rp(), &self.root.tasks_dir(&self.team))?
            .unwrap_or_default()
            .iter()
            .filter_map(|e| e.name.to_str()?.strip_suffix(".json")?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        team.next_task_id = team
            .next_task_id
            .max(old.as_ref().map_or(0, |o| o.next_task_id))
            .max(max_file + 1);
        team.validate(&self.root.team_json(&self.team))?;
        fsutil::state_write(
            self.rp(),
            &self.root.team_json(&self.team),
            &team.to_bytes(),
        )
    }

    /// One read-modify-write of the team's state under the state lock. `f` may change the team
    /// and stage other files. If anything changed, the generation goes up by one and the change
    /// commits atomically. Returns the committed team and `f`'s result. If `f` fails, nothing
    /// is written.
    pub fn transact<R>(
        &self,
        op: &str,
        f: impl FnOnce(&mut Team, &mut Changes) -> Result<R>,
    ) -> Result<(Team, R)> {
        if !self.team_dir_exists()? {
            return Err(self.no_such_team());
        }
        let _g = self.lock_state(op)?;
        self.replay_unlocked()?;
        let before = self
            .read_team_unlocked()?
            .ok_or_else(|| self.no_such_team())?;
        let mut team = before.clone();
        let mut changes = Changes::default();
        let r = f(&mut team, &mut changes)?;
        // Invariants the callback must not break.
        if team.owner_id != before.owner_id || team.name != before.name {
            return Err(Error::Internal(
                "a transaction changed the team's identity".into(),
            ));
        }
        team.next_worker_index = team.next_worker_index.max(before.next_worker_index);
        team.next_task_id = team.next_task_id.max(before.next_task_id);
        team.generation = before.generation;
        let team_json = self.root.team_json(&self.team);
        if team == before {
            // Only side files changed (a status report): write each atomically.
            for (rel, content) in &changes.files {
                self.write_side_file(rel, content.as_deref())?;
            }
            return Ok((team, r));
        }
        team.generation = before.generation + 1;
        team.validate(&team_json)?;
        if changes.is_empty() {
            fsutil::state_write(self.rp(), &team_json, &team.to_bytes())?;
        } else {
            let mut entries = vec![Entry {
                path: "team.json".into(),
                content: Some(String::from_utf8(team.to_bytes()).expect("json is utf-8")),
            }];
            for (rel, content) in changes.files {
                entries.push(Entry {
                    path: rel,
                    content: content.map(|c| String::from_utf8(c).expect("json is utf-8")),
                });
            }
            let j = Journal::new(before.generation, entries);
            let dir = self.team_dir();
            journal::commit(self.rp(), &dir, &j)?;
            journal::apply(self.rp(), &dir, &j, None)?;
        }
        Ok((team, r))
    }

    fn write_side_file(&self, rel: &str, content: Option<&[u8]>) -> Result<()> {
        let dir = self.team_dir();
        let target = dir.join(rel);
        match content {
            Some(c) => {
                if let Some(p) = target.parent() {
                    fsutil::state_create_dir(self.rp(), p)?;
                }
                fsutil::state_write(self.rp(), &target, c)
            }
            None => fsutil::state_remove(self.rp(), &target),
        }
    }

    /// Removes the temp files that writers killed mid-write left in the team directory and in
    /// `tasks/` (`.<name>.tmp-<pid>-<uuid>`, see `fsutil::state_write`). Every writer there
    /// holds the state lock, so under it no such file belongs to a live writer. Returns how many
    /// were removed.
    pub fn sweep_temp_files(&self) -> Result<usize> {
        let _g = self.lock_state("sweep")?;
        let mut n = 0;
        for dir in [self.team_dir(), self.root.tasks_dir(&self.team)] {
            let Some(entries) = fsutil::state_list(self.rp(), &dir)? else {
                continue;
            };
            for e in entries {
                let name = e.name.to_string_lossy();
                if name.starts_with('.') && name.contains(".tmp-") && e.is_file {
                    fsutil::state_remove(self.rp(), &dir.join(&e.name))?;
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    /// Reads every task file, sorted by id. A malformed task file fails the read.
    pub fn tasks(&self) -> Result<Vec<Task>> {
        let dir = self.root.tasks_dir(&self.team);
        let mut out = Vec::new();
        let Some(entries) = fsutil::state_list(self.rp(), &dir)? else {
            return Ok(out);
        };
        for e in entries {
            let p = dir.join(&e.name);
            if !e.name.to_string_lossy().starts_with('.')
                && p.extension().is_some_and(|x| x == "json")
            {
                let b = self.read_task_file(&p)?.ok_or_else(|| Error::NotFound {
                    what: "task",
                    path: p.clone(),
                })?;
                out.push(model::parse_task(&p, &b)?);
            }
        }
        out.sort_by_key(|t| t.id);
        Ok(out)
    }

    /// Reads one task file (bounded, never through a symlink), `None` when absent.
    pub fn read_task_file(&self, p: &Path) -> Result<Option<Vec<u8>>> {
        fsutil::state_read(self.rp(), p, fsutil::limits::TASK)
    }

    /// Reads a worker's status file, if any.
    pub fn status(&self, w: &WorkerName) -> Result<Option<WorkerStatus>> {
        let p = self.root.worker_dir(&self.team, w).join("status.json");
        match fsutil::state_read(self.rp(), &p, fsutil::limits::STATUS)? {
            None => Ok(None),
            Some(b) => model::parse_status(&p, &b).map(Some),
        }
    }

    /// The team's `workers/` directory held open (`None` when it does not exist), for reading
    /// many workers' files with [`Store::status_in`] and the like.
    pub fn workers_dir(&self) -> Result<Option<fsutil::StateDir>> {
        fsutil::state_dir(
            self.rp(),
            &self.root.team_dir(&self.team).join("workers"),
            false,
        )
    }

    /// The report of `w` itself: [`Store::status_in`] (through `workers` when given, else
    /// from the state root), kept only when it names `w` and `w`'s incarnation. A report that
    /// names another worker or incarnation (a copied or planted file) is no report of `w`'s:
    /// it neither makes `w` idle nor busy.
    pub fn status_for(
        &self,
        workers: Option<&fsutil::StateDir>,
        w: &crate::model::Worker,
    ) -> Result<Option<WorkerStatus>> {
        let s = match workers {
            Some(_) => self.status_in(workers, &w.name)?,
            None => self.status(&w.name)?,
        };
        Ok(s.filter(|s| s.worker == w.name && s.incarnation == w.incarnation))
    }

    /// [`Store::status`], read through `workers` ([`Store::workers_dir`]).
    pub fn status_in(
        &self,
        workers: Option<&fsutil::StateDir>,
        w: &WorkerName,
    ) -> Result<Option<WorkerStatus>> {
        let Some(dir) = workers else {
            return Ok(None);
        };
        let p = self.root.worker_dir(&self.team, w).join("status.json");
        match dir.read_below(&p, fsutil::limits::STATUS)? {
            None => Ok(None),
            Some(b) => model::parse_status(&p, &b).map(Some),
        }
    }

    /// Appends one event line to `events.jsonl` (one write, `O_APPEND`).
    pub fn append_event(&self, team: &Team, kind: &str, details: serde_json::Value) -> Result<()> {
        let ev = Event {
            ts: fsutil::now_rfc3339(),
            kind: kind.to_string(),
            team: self.team.clone(),
            generation: team.generation,
            details: match details {
                serde_json::Value::Object(m) => m.into_iter().collect(),
                serde_json::Value::Null => Default::default(),
                other => [("value".to_string(), other)].into_iter().collect(),
            },
        };
        let mut line = serde_json::to_vec(&ev).map_err(|e| Error::Internal(e.to_string()))?;
        line.push(b'\n');
        fsutil::state_append(self.rp(), &self.root.events(&self.team), &line)
    }

    /// Reads `events.jsonl` (malformed lines are skipped: events are informational).
    pub fn events(&self) -> Result<Vec<Event>> {
        let p = self.root.events(&self.team);
        let Some(b) = fsutil::state_read(self.rp(), &p, fsutil::limits::EVENTS)? else {
            return Ok(Vec::new());
        };
        Ok(b.split(|c| *c == b'\n')
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect())
    }
}

/// One committed generation of a team, read without a lock ([`Store::snapshot`]).
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub team: Team,
    /// A journal is on disk: a change is being applied, or was cut short and waits for the
    /// next writer to replay it.
    pub in_flight: bool,
}

/// Lists the teams in a state root (directory names that are valid team names).
pub fn list_teams(root: &StateRoot) -> Result<Vec<TeamName>> {
    let dir = root.teams_dir();
    let Some(entries) = fsutil::state_list(root.path(), &dir)? else {
        return Ok(Vec::new());
    };
    let mut out: Vec<TeamName> = entries
        .into_iter()
        .filter_map(|e| TeamName::new(&e.name.to_string_lossy()).ok())
        .collect();
    out.sort();
    Ok(out)
}

/// Whether a path exists (a helper for callers that report resources).
pub fn path_exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_removes_only_dead_writers_temp_files() {
        let d = tempfile::tempdir().unwrap();
        let root = StateRoot::resolve(d.path(), None).unwrap();
        let team = TeamName::new("t").unwrap();
        let store = Store::new(root.clone(), team.clone(), Duration::from_secs(1));
        let tasks = root.tasks_dir(&team);
        std::fs::create_dir_all(&tasks).unwrap();
        std::fs::write(tasks.join("1.json"), "{}").unwrap();
        std::fs::write(tasks.join(".1.json.tmp-99-abc"), "{}").unwrap();
        std::fs::write(root.team_dir(&team).join(".team.json.tmp-99-abc"), "{}").unwrap();
        std::fs::write(root.team_dir(&team).join("team.json"), "{}").unwrap();
        assert_eq!(store.sweep_temp_files().unwrap(), 2);
        assert!(tasks.join("1.json").exists());
        assert!(root.team_dir(&team).join("team.json").exists());
        assert_eq!(store.sweep_temp_files().unwrap(), 0);
    }
}

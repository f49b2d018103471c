//! The team store: reads and commits a team's state under its locks.
//!
//! Every read-modify-write goes through [`Store::transact`], which takes the state lock,
//! replays a leftover journal, reads `team.json`, lets the caller change it (and stage other
//! files), and commits: a single-file change by atomic replace, a multi-file change through
//! the redo journal. The state lock is released before `transact` returns, so callers never
//! hold it across tmux, git or a wait.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::fsutil;
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
    /// Whether `team.json` exists.
    pub fn exists(&self) -> bool {
        self.root.team_json(&self.team).exists()
    }

    /// Takes the team's scale lock for a whole membership-changing operation.
    pub fn lock_scale(&self, op: &str) -> Result<LockGuard> {
        self.root.ensure()?;
        lock::acquire(
            &self.root.scale_lock(&self.team),
            self.wait,
            &Holder::me(op),
        )
    }

    /// Whether another process holds the scale lock now, and who.
    pub fn scale_holder(&self) -> Result<Option<Holder>> {
        let p = self.root.scale_lock(&self.team);
        if lock::is_held(&p)? {
            Ok(Some(lock::read_holder(&p).unwrap_or(Holder {
                pid: 0,
                op: "unknown".into(),
                since: String::new(),
            })))
        } else {
            Ok(None)
        }
    }

    fn lock_state(&self, op: &str) -> Result<LockGuard> {
        self.root.ensure()?;
        lock::acquire(
            &self.root.state_lock(&self.team),
            self.wait,
            &Holder::me(op),
        )
    }

    fn read_team_unlocked(&self) -> Result<Option<Team>> {
        let path = self.root.team_json(&self.team);
        match fsutil::read_optional(&path)? {
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
                Ok(Some(t))
            }
        }
    }

    /// Replays a leftover journal (caller holds the state lock).
    fn replay_unlocked(&self) -> Result<bool> {
        let dir = self.team_dir();
        if !journal::journal_path(&dir).exists() {
            return Ok(false);
        }
        // The generation on disk decides whether the journal fits.
        let path = self.root.team_json(&self.team);
        let generation = match fsutil::read_optional(&path)? {
            Some(b) => serde_json::from_slice::<serde_json::Value>(&b)
                .ok()
                .and_then(|v| v.get("generation").and_then(|g| g.as_u64())),
            None => None,
        };
        journal::replay(&dir, generation)
    }

    /// Reads the team's state (replaying a leftover journal first).
    pub fn load(&self) -> Result<Team> {
        if !self.root.path().exists() || !self.team_dir().exists() {
            return Err(self.no_such_team());
        }
        let _g = self.lock_state("read")?;
        self.replay_unlocked()?;
        self.read_team_unlocked()?
            .ok_or_else(|| self.no_such_team())
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
        fsutil::create_private_dir(&self.team_dir())?;
        self.replay_unlocked()?;
        if let Some(old) = self.read_team_unlocked()?
            && old.state != model::TeamState::Stopped
        {
            return Err(Error::Refused(format!(
                "team {:?} already exists in {} (owner {})",
                self.team.as_str(),
                self.root.path().display(),
                old.owner_id
            )));
        }
        team.validate(&self.root.team_json(&self.team))?;
        fsutil::atomic_write(&self.root.team_json(&self.team), &team.to_bytes())
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
        if !self.team_dir().exists() {
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
            fsutil::atomic_write(&team_json, &team.to_bytes())?;
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
            journal::commit(&dir, &j)?;
            journal::apply(&dir, &j, None)?;
        }
        Ok((team, r))
    }

    fn write_side_file(&self, rel: &str, content: Option<&[u8]>) -> Result<()> {
        let dir = self.team_dir();
        let target = dir.join(rel);
        crate::paths::no_symlinks_below(&dir, &target)?;
        match content {
            Some(c) => {
                if let Some(p) = target.parent() {
                    fsutil::create_private_dir(p)?;
                }
                fsutil::atomic_write(&target, c)
            }
            None => fsutil::remove_durable(&target),
        }
    }

    /// Removes the temp files that writers killed mid-write left in the team directory and in
    /// `tasks/` (`.<name>.tmp-<pid>-<uuid>`, see `fsutil::atomic_write`). Every writer there
    /// holds the state lock, so under it no such file belongs to a live writer. Returns how many
    /// were removed.
    pub fn sweep_temp_files(&self) -> Result<usize> {
        let _g = self.lock_state("sweep")?;
        let mut n = 0;
        for dir in [self.team_dir(), self.root.tasks_dir(&self.team)] {
            let rd = match std::fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("read directory", &dir, e)),
            };
            for e in rd.flatten() {
                let name = e.file_name();
                let name = name.to_string_lossy();
                if name.starts_with('.') && name.contains(".tmp-") && e.path().is_file() {
                    fsutil::remove_durable(&e.path())?;
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
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(Error::io("read directory", &dir, e)),
        };
        for e in rd {
            let e = e.map_err(|e| Error::io("read directory", &dir, e))?;
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                let b = std::fs::read(&p).map_err(|e| Error::io("read", &p, e))?;
                out.push(model::parse_task(&p, &b)?);
            }
        }
        out.sort_by_key(|t| t.id);
        Ok(out)
    }

    /// Reads a worker's status file, if any.
    pub fn status(&self, w: &WorkerName) -> Result<Option<WorkerStatus>> {
        let p = self.root.worker_dir(&self.team, w).join("status.json");
        match fsutil::read_optional(&p)? {
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
        let p = self.root.events(&self.team);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .map_err(|e| Error::io("open", &p, e))?;
        f.write_all(&line)
            .map_err(|e| Error::io("append to", &p, e))
    }

    /// Reads `events.jsonl` (malformed lines are skipped: events are informational).
    pub fn events(&self) -> Result<Vec<Event>> {
        let p = self.root.events(&self.team);
        let Some(b) = fsutil::read_optional(&p)? else {
            return Ok(Vec::new());
        };
        Ok(b.split(|c| *c == b'\n')
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect())
    }
}

/// Lists the teams in a state root (directory names that are valid team names).
pub fn list_teams(root: &StateRoot) -> Result<Vec<TeamName>> {
    let dir = root.teams_dir();
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read directory", &dir, e)),
    };
    let mut out: Vec<TeamName> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| TeamName::new(&e.file_name().to_string_lossy()).ok())
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

//! The audit log: a durable, hash-chained, append-only JSON-lines file (docs/design.md section 8).
//!
//! Every destructive effect is preceded by a durable intent record; [`guarded`] makes that
//! fail closed. See [`canonical`] for the exact bytes that are hashed.
//!
//! # Writers
//!
//! A writer opens the log with `O_APPEND`, takes an exclusive `flock` on it (held only for one
//! append, so waiting for it is short and unbounded waits are acceptable), reads the chain head
//! from the end of the file (a bounded window, see [`head`]), builds all its lines in memory,
//! writes them with one `write_all`, and `fdatasync`s before returning (a batch from
//! [`AuditLog::append_batch`] shares one lock and one `fdatasync`). The one exception is
//! [`AuditLog::append_outcomes`]: the outcome batches of the tools' own teardowns, kills and
//! reaper runs are written and not waited on, since the design asks an intent to be durable
//! before its effect and an outcome only to be recorded after it; the next synced record makes
//! them durable. `down` and `shutdown` hold their kills' outcomes back and write them in the
//! batch of the operation's own outcome (`ops::down`, "The kills' outcomes go with the
//! operation's").
//!
//! # Torn tails and segment records
//!
//! A writer that crashes mid-write leaves a torn last line. The next writer finds it (the file
//! does not end in `\n`, or its last lines do not parse), terminates it with `\n`, and writes a
//! `segment` record before its own: stage `segment`, action `audit.segment`, `seq` = the last
//! good record's `seq + 1`, `prev` = the last good record's `hash` (so the chain runs on across
//! the damage and records before it still cannot be removed unnoticed), and one target
//! `{"damage_offset": O, "damage_bytes": N}` naming exactly the damaged bytes (not counting the
//! terminating `\n`).
//!
//! [`verify`] treats damage that is immediately followed by a segment record naming exactly it
//! as *acknowledged*: a warning, and the walk continues. Damage that no segment record names
//! (a torn tail nobody has appended after yet, garbage inserted by hand, a segment naming other
//! bytes) is a `torn_line` problem and `verify` fails. A user who just had a crash therefore
//! sees `verify` fail until the next append acknowledges the damage, which is when the log has
//! provably moved on.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Audit records** are one JSON line in a fixed field order; `hash = SHA-256(prev ||
//!   canonical bytes)`, where the canonical bytes are the record without `hash`, compact, with
//!   keys of nested objects sorted (`audit::canonical` specifies it exactly). Writers hold an
//!   exclusive flock for one append, read the chain head from the end of the file, make one
//!   `write_all`, and `fdatasync` every stage. A torn tail is terminated by the next writer and
//!   named by a `segment` record whose `prev` is the last good hash (the chain runs on across the
//!   damage); `verify` reports acknowledged damage as a warning and unacknowledged damage as a
//!   failure.
//!
//! - **Anchors, not keys**: the chain has no secret, so whoever can write the log can cut
//!   records from its end (or tear the last one and let the next writer acknowledge the tear)
//!   or recompute the whole chain, and `verify` alone passes it. A key would live where the
//!   same writer reads it. Instead `verify` prints its last `seq` and head hash, and `verify
//!   --expect SEQ:HASH` (`ProblemKind::Anchor`) fails unless the log still holds that record
//!   with that hash, read back from the end; keeping the anchor where the log's writers cannot
//!   reach it (another user, another machine) is the user's part, and the README says so.

pub mod canonical;
mod fast;
mod head;
mod lines;
mod prune;
mod query;
pub mod segments;
mod verify;

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::fsutil::Access;

pub use canonical::ZERO_HASH;
pub use head::Damage;
pub use lines::MAX_LINE;
pub use prune::{PruneReport, RemovedSegment, Retention, prune};
pub use query::{Filter, QueryStats, ReadOutcome, query, read_records};
pub use verify::{Problem, ProblemKind, VerifyReport, verify, verify_bytes};

/// The record format version this build writes and understands.
pub const VERSION: u32 = 1;

/// The action of a segment record that acknowledges a torn tail.
pub const SEGMENT_ACTION: &str = "audit.segment";
/// The action of the first record of a segment file that continues an earlier one.
pub const SEGMENT_START_ACTION: &str = "audit.segment_start";
/// The action of the last record of a segment file.
pub const SEGMENT_END_ACTION: &str = "audit.segment_end";
/// The action of a checkpoint: the heads of segments removed by `prune`.
pub const CHECKPOINT_ACTION: &str = "audit.checkpoint";
/// The size past which writers rotate the active file into a segment, unless told otherwise.
pub const DEFAULT_MAX_SIZE: u64 = 256 << 20;

/// The stage of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Before the effect: written durably, or the effect does not happen.
    Intent,
    /// After the effect, which succeeded.
    Complete,
    /// After the effect, which failed (or whose result is unknown).
    Failed,
    /// Written by the log itself to acknowledge a damaged (torn) region; never by callers.
    Segment,
}

impl Stage {
    /// The stage's name as written in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Intent => "intent",
            Stage::Complete => "complete",
            Stage::Failed => "failed",
            Stage::Segment => "segment",
        }
    }
}

impl std::str::FromStr for Stage {
    type Err = Error;
    fn from_str(s: &str) -> Result<Stage> {
        match s {
            "intent" => Ok(Stage::Intent),
            "complete" => Ok(Stage::Complete),
            "failed" => Ok(Stage::Failed),
            "segment" => Ok(Stage::Segment),
            _ => Err(Error::Usage(format!(
                "unknown stage {s:?} (intent, complete, failed, segment)"
            ))),
        }
    }
}

/// What a caller says about an action; the log adds `v`, `seq`, `ts`, `audit_id`, `stage`,
/// `caller_pid`, `prev` and `hash`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub caller: String,
    /// What is done: a tmux verb for tmux actions (`kill-pane`), `signal` for process
    /// signals, `operation` for the record that frames a whole operation.
    pub action: String,
    /// The operation it is part of (`scale_down`, `shutdown`, `reconcile`, `rollback`,
    /// `reap`), when there is one.
    pub op: Option<String>,
    pub argv: Vec<String>,
    pub endpoint: Option<String>,
    /// Strings, or objects such as a pane incarnation
    /// `{pane_id, pane_pid, session_id, window_id, server_pid, server_start, owner}`.
    pub targets: Vec<Value>,
    pub workspace: Option<String>,
    pub team: Option<String>,
    pub generation: Option<u64>,
    pub owner_evidence: Option<Value>,
    pub reason: Option<String>,
    pub outcome: Option<String>,
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub v: u32,
    pub seq: u64,
    pub ts: String,
    pub audit_id: Uuid,
    pub stage: Stage,
    pub caller: String,
    pub caller_pid: u32,
    pub action: String,
    /// Added to format 1 compatibly: absent (not `null`) when `None`, and then not part of the
    /// canonical bytes, so records written before it hash as they always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    pub argv: Vec<String>,
    pub endpoint: Option<String>,
    pub targets: Vec<Value>,
    pub workspace: Option<String>,
    pub team: Option<String>,
    pub generation: Option<u64>,
    pub owner_evidence: Option<Value>,
    pub reason: Option<String>,
    pub outcome: Option<String>,
    pub prev: String,
    pub hash: String,
}

impl Record {
    /// For a segment record, the damage it acknowledges: `(offset, bytes)`.
    pub fn segment_damage(&self) -> Option<(u64, u64)> {
        if self.stage != Stage::Segment {
            return None;
        }
        let [t] = self.targets.as_slice() else {
            return None;
        };
        Some((
            t.get("damage_offset")?.as_u64()?,
            t.get("damage_bytes")?.as_u64()?,
        ))
    }

    fn log_target(&self, action: &str) -> Option<&Value> {
        if self.stage != Stage::Segment || self.action != action {
            return None;
        }
        match self.targets.as_slice() {
            [t] => Some(t),
            _ => None,
        }
    }

    /// For a `segment_start` record: `(previous segment number, its last seq, its last hash)`.
    pub fn segment_start(&self) -> Option<(u64, u64, &str)> {
        let t = self.log_target(SEGMENT_START_ACTION)?;
        Some((
            t.get("previous_segment")?.as_u64()?,
            t.get("last_seq")?.as_u64()?,
            t.get("last_hash")?.as_str()?,
        ))
    }

    /// For a `segment_end` record: the number of the segment it closes.
    pub fn segment_end(&self) -> Option<u64> {
        self.log_target(SEGMENT_END_ACTION)?
            .get("segment")?
            .as_u64()
    }

    /// For a checkpoint record: `(last_seq, last_hash)` of every removed segment it names.
    pub fn checkpoint_covers(&self) -> Vec<(u64, &str)> {
        if self.stage != Stage::Segment || self.action != CHECKPOINT_ACTION {
            return Vec::new();
        }
        self.targets
            .iter()
            .filter_map(|t| Some((t.get("last_seq")?.as_u64()?, t.get("last_hash")?.as_str()?)))
            .collect()
    }

    fn build(seq: u64, stage: Stage, audit_id: Uuid, e: &Entry, prev: String) -> Record {
        let mut r = Record {
            v: VERSION,
            seq,
            ts: crate::fsutil::now_rfc3339(),
            audit_id,
            stage,
            caller: e.caller.clone(),
            caller_pid: std::process::id(),
            action: e.action.clone(),
            op: e.op.clone(),
            argv: e.argv.clone(),
            endpoint: e.endpoint.clone(),
            targets: e.targets.clone(),
            workspace: e.workspace.clone(),
            team: e.team.clone(),
            generation: e.generation,
            owner_evidence: e.owner_evidence.clone(),
            reason: e.reason.clone(),
            outcome: e.outcome.clone(),
            prev,
            hash: String::new(),
        };
        r.hash = canonical::compute_hash(&r);
        r
    }
}

/// A handle on one audit log file. Cheap; opens the file on every append.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    max_size: u64,
    /// The state root the log lives directly in (the default log, `<root>/audit.jsonl`).
    root: Option<PathBuf>,
}

impl AuditLog {
    /// A log at `path` (created, with its parent directory as 0700, on first append),
    /// rotating at [`DEFAULT_MAX_SIZE`].
    pub fn new(path: PathBuf) -> Self {
        AuditLog {
            path,
            max_size: DEFAULT_MAX_SIZE,
            root: None,
        }
    }

    /// When the log is directly in the state root `root` (the default log), it is written
    /// like every state file: reached from the workspace with no symlink at any component
    /// (`fsutil::state_open`), so swapping `.team` for a symlink while a writer runs cannot
    /// send records elsewhere. A log anywhere else (`--log`) is the user's choice of place:
    /// only its own name is never followed.
    pub fn within(mut self, root: &Path) -> Self {
        if self.path.parent() == Some(root) {
            self.root = Some(root.to_path_buf());
        }
        self
    }

    /// Rotates the active file into a segment when an append would take it past `bytes`
    /// (`0`: never). A single batch larger than that still goes into one file.
    pub fn with_max_size(mut self, bytes: u64) -> Self {
        self.max_size = bytes;
        self
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory the log is in: the parent of a bare file name (`r.jsonl`) is `.`.
    fn dir(&self) -> &Path {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    }

    fn audit_err(&self, what: &str, e: impl std::fmt::Display) -> Error {
        Error::Audit {
            path: self.path.clone(),
            msg: format!("{what}: {e}"),
        }
    }

    /// Appends one record and returns it once it is durable (`fdatasync`ed). A `complete` or
    /// `failed` record needs the `audit_id` of its intent; an intent without one gets a fresh id.
    pub fn append(&self, stage: Stage, audit_id: Option<Uuid>, entry: &Entry) -> Result<Record> {
        let mut v = self.append_batch(&[(stage, audit_id, entry.clone())])?;
        v.pop()
            .ok_or_else(|| Error::Internal("append_batch returned no record".into()))
    }

    /// Appends several records under one lock with one write and one `fdatasync` (group
    /// commit), rotating the active file first when they would take it past the maximum size
    /// (see [`segments`]). All of them are durable when this returns `Ok`; on `Err` none is reported
    /// written (a partial write is cut back off, or left as a torn tail the next writer marks).
    pub fn append_batch(&self, items: &[(Stage, Option<Uuid>, Entry)]) -> Result<Vec<Record>> {
        for (stage, id, _) in items {
            match (stage, id) {
                (Stage::Segment, _) => {
                    return Err(Error::Usage(
                        "segment records are written by the log itself".into(),
                    ));
                }
                (Stage::Complete | Stage::Failed, None) => {
                    return Err(Error::Usage(format!(
                        "a {} record needs the audit_id of its intent",
                        stage.as_str()
                    )));
                }
                _ => {}
            }
        }
        if items.is_empty() {
            return Ok(Vec::new());
        }
        self.write_records(items, true)
    }

    /// Appends the outcomes of an operation's own effects (`complete` or `failed` records, each
    /// naming its intent) under one lock with one write, and returns without waiting for the
    /// disk: the design asks an intent to be durable before its effect, and an outcome only to
    /// be recorded after it. They become durable with the next record anyone syncs (an
    /// `fdatasync` covers every byte written to the file before it), and a machine crash before
    /// that loses only them, as a crash between an effect and its outcome always could: their
    /// intents then read as "result unknown". Only the operations' writers use this; `team-audit
    /// record` of any stage exits 0 only once its record is durable.
    pub fn append_outcomes(&self, items: &[(Stage, Option<Uuid>, Entry)]) -> Result<Vec<Record>> {
        if let Some((stage, _, _)) = items.iter().find(|(stage, id, _)| {
            !matches!(stage, Stage::Complete | Stage::Failed) || id.is_none()
        }) {
            return Err(Error::Internal(format!(
                "append_outcomes takes outcomes naming their intent, not a {} record",
                stage.as_str()
            )));
        }
        if items.is_empty() {
            return Ok(Vec::new());
        }
        self.write_records(items, false)
    }

    /// Appends records the log writes itself (checkpoints), under the same lock and chain.
    pub(crate) fn append_own(&self, entry: &Entry) -> Result<Record> {
        let mut v = self.write_records(&[(Stage::Segment, None, entry.clone())], true)?;
        v.pop()
            .ok_or_else(|| Error::Internal("append returned no record".into()))
    }

    /// Writes `items` after the chain head; `sync`: `fdatasync` before returning (a rotation's
    /// closing write is always synced, since its rename follows).
    fn write_records(
        &self,
        items: &[(Stage, Option<Uuid>, Entry)],
        sync: bool,
    ) -> Result<Vec<Record>> {
        crate::failpoint::hit("audit.append").map_err(|e| self.audit_err("append", e))?;
        // A rotation by another writer between our open and our lock makes us start over;
        // each round either appends or rotates, so this ends.
        for _ in 0..64 {
            let (file, created) = self.open()?;
            file.lock().map_err(|e| self.audit_err("lock", e))?;
            if !self.still_named(&file)? {
                continue;
            }
            let size = file
                .metadata()
                .map_err(|e| self.audit_err("stat", e))?
                .len();
            let head = head::read_head(&file, size).map_err(|e| self.audit_err("read head", e))?;
            if let Some(n) = head.last.as_ref().and_then(Record::segment_end) {
                // A rotation was interrupted after its segment_end: finish it.
                self.rename_to_segment(n)?;
                continue;
            }
            let mut buf = Vec::new();
            let mut seq = head.seq;
            let mut prev = head.hash.clone();
            let caller = items[0].2.caller.clone();
            if size == 0
                && let Some(last) = self.segments()?.pop()
            {
                // A new active file continues the newest segment.
                let o = match &self.root {
                    Some(root) => crate::fsutil::state_open(root, &last.path, Access::Read)?,
                    None => crate::fsutil::open(&last.path, Access::Read)?,
                }
                .ok_or_else(|| {
                    self.audit_err("open", format!("{} vanished", last.path.display()))
                })?;
                let len = o
                    .file
                    .metadata()
                    .map_err(|e| self.audit_err("stat", e))?
                    .len();
                let h =
                    head::read_head(&o.file, len).map_err(|e| self.audit_err("read head", e))?;
                seq = h.seq + 1;
                let start = Entry {
                    caller: caller.clone(),
                    action: SEGMENT_START_ACTION.into(),
                    targets: vec![serde_json::json!({
                        "previous_segment": last.number,
                        "last_seq": h.seq,
                        "last_hash": h.hash,
                    })],
                    reason: Some(format!(
                        "continues segment {:06} after seq {}",
                        last.number, h.seq
                    )),
                    ..Entry::default()
                };
                let r = Record::build(seq, Stage::Segment, Uuid::new_v4(), &start, h.hash);
                buf.extend_from_slice(&canonical::render_line(&r));
                prev = r.hash;
            }
            if let Some(d) = head.damage {
                if !d.terminated {
                    buf.push(b'\n');
                }
                seq += 1;
                let seg = Entry {
                    caller: caller.clone(),
                    action: SEGMENT_ACTION.into(),
                    targets: vec![serde_json::json!({
                        "damage_offset": d.offset,
                        "damage_bytes": d.bytes,
                    })],
                    reason: Some(format!(
                        "torn tail: {} bytes at offset {} after seq {} are not a whole record; \
                         a new segment starts here",
                        d.bytes, d.offset, head.seq
                    )),
                    ..Entry::default()
                };
                let r = Record::build(seq, Stage::Segment, Uuid::new_v4(), &seg, prev);
                buf.extend_from_slice(&canonical::render_line(&r));
                prev = r.hash;
            }
            let mark = (buf.len(), seq, prev.clone());
            let mut out = Vec::with_capacity(items.len());
            for (stage, id, entry) in items {
                seq += 1;
                let r = Record::build(seq, *stage, id.unwrap_or_else(Uuid::new_v4), entry, prev);
                let line = canonical::render_line(&r);
                if line.len() > MAX_LINE + 1 {
                    return Err(Error::Usage(format!(
                        "a record of {} bytes is longer than the log's limit of {MAX_LINE} bytes",
                        line.len()
                    )));
                }
                buf.extend_from_slice(&line);
                prev = r.hash.clone();
                out.push(r);
            }
            if self.max_size > 0 && size > 0 && size + buf.len() as u64 > self.max_size {
                // Close this file: keep the prefix (a damage acknowledgement), add the
                // segment_end, make it durable, rename it, and start over on a new file.
                let (keep, seq, prev) = mark;
                buf.truncate(keep);
                // Never onto a segment that is there (an active file that failed to continue
                // the newest one, a broken chain `verify` reports): the log goes on.
                let newest = self.segments()?.last().map_or(0, |s| s.number);
                let number = self.active_number(&file)?.max(newest + 1);
                let end = Entry {
                    caller,
                    action: SEGMENT_END_ACTION.into(),
                    targets: vec![serde_json::json!({ "segment": number })],
                    reason: Some(format!(
                        "the active file reached {size} bytes (maximum {}); it becomes segment {number:06}",
                        self.max_size
                    )),
                    ..Entry::default()
                };
                let r = Record::build(seq + 1, Stage::Segment, Uuid::new_v4(), &end, prev);
                buf.extend_from_slice(&canonical::render_line(&r));
                self.write_durably(&file, size, &buf, created, true)?;
                crate::failpoint::hit("audit.rotate").map_err(|e| self.audit_err("rotate", e))?;
                self.rename_to_segment(number)?;
                continue;
            }
            self.write_durably(&file, size, &buf, created, sync)?;
            return Ok(out);
        }
        Err(self.audit_err(
            "append",
            "the log kept being rotated under this writer (64 rounds)",
        ))
    }

    /// One `write_all` and, with `sync`, `fdatasync` (and the directory's fsync for a new file,
    /// always).
    fn write_durably(
        &self,
        file: &File,
        size: u64,
        buf: &[u8],
        created: bool,
        sync: bool,
    ) -> Result<()> {
        if let Err(e) = (&*file).write_all(buf) {
            // Cut a partial write back off while we still hold the lock; if even that fails,
            // the next writer finds a torn tail and marks it.
            let _ = file.set_len(size);
            return Err(self.audit_err("write", e));
        }
        crate::failpoint::hit("audit.before_sync").map_err(|e| self.audit_err("append", e))?;
        if sync {
            file.sync_data()
                .map_err(|e| self.audit_err("fdatasync", e))?;
        }
        if created {
            match &self.root {
                Some(root) => crate::fsutil::state_sync_dir(root, root),
                None => crate::fsutil::sync_dir(self.dir()),
            }
            .map_err(|e| self.audit_err("fsync directory", e))?;
        }
        Ok(())
    }

    /// Whether the locked `file` is still the one at the log's path (not renamed into a
    /// segment by a writer that held the lock before us).
    fn still_named(&self, file: &File) -> Result<bool> {
        let ours = file.metadata().map_err(|e| self.audit_err("stat", e))?;
        if let Some(root) = &self.root {
            let kind = crate::fsutil::state_dir(root, root, false)?
                .map(|d| d.identity(&self.path))
                .transpose()?
                .flatten();
            return Ok(kind == Some((ours.dev(), ours.ino())));
        }
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) => Ok(m.dev() == ours.dev() && m.ino() == ours.ino()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.audit_err("stat", e)),
        }
    }

    /// The segments next to the log, read the way the log itself is ([`AuditLog::within`]).
    fn segments(&self) -> Result<Vec<segments::Segment>> {
        match &self.root {
            Some(root) => segments::list_in(root, &self.path),
            None => segments::list(&self.path),
        }
    }

    /// The segment number the active file gets when it is closed: one more than the segment
    /// its first record continues, or 1.
    fn active_number(&self, file: &File) -> Result<u64> {
        let mut lines = lines::Lines::new(lines::At::new(file, 0), 0);
        let first = lines
            .next_line()
            .map_err(|e| self.audit_err("read", e))?
            .and_then(|l| canonical::parse_line(l.body).ok());
        Ok(first
            .as_ref()
            .and_then(Record::segment_start)
            .map_or(1, |(k, _, _)| k + 1))
    }

    /// Renames the active file to segment `n` (never over an existing file) durably.
    fn rename_to_segment(&self, n: u64) -> Result<()> {
        let to = segments::segment_path(&self.path, n);
        if let Some(root) = &self.root {
            let name = to.file_name().unwrap_or_default();
            let moved = crate::fsutil::state_dir(root, root, false).and_then(|d| {
                let d = d.ok_or_else(|| Error::Internal("the state root is gone".into()))?;
                // Absent is an error here, as for a rename by path: we hold its lock.
                if !d.move_into(&self.path, &d, name)? {
                    return Err(Error::Internal(format!("{} is gone", self.path.display())));
                }
                d.sync()
            });
            return moved.map_err(|e| self.audit_err("rotate", e));
        }
        crate::fsutil::rename_noreplace(&self.path, &to).map_err(|e| self.audit_err("rotate", e))
    }

    /// Opens the log for appending, creating it (and its parent, 0700) if missing. Returns
    /// whether it was created, so the caller can make the directory entry durable. The log is
    /// never opened through a symlink and must be a regular file with one link
    /// (`fsutil::open`): a symlinked log is [`Error::UnsafePath`], not an audit failure.
    fn open(&self) -> Result<(File, bool)> {
        if let Some(root) = &self.root {
            return match crate::fsutil::state_open(root, &self.path, Access::AppendCreate(0o600)) {
                Ok(Some(o)) => Ok((o.file, o.created)),
                Ok(None) => Err(self.audit_err("create", "not created")),
                Err(e @ Error::UnsafePath { .. }) => Err(e),
                Err(e) => Err(self.audit_err("open", e)),
            };
        }
        if let Some(dir) = self.path.parent()
            && !dir.as_os_str().is_empty()
            && std::fs::symlink_metadata(dir).is_err()
        {
            crate::fsutil::create_private_dir(dir).map_err(|e| self.audit_err("create", e))?;
        }
        match crate::fsutil::open(&self.path, Access::AppendCreate(0o600)) {
            Ok(Some(o)) => Ok((o.file, o.created)),
            Ok(None) => Err(self.audit_err("create", "not created")),
            Err(e @ Error::UnsafePath { .. }) => Err(e),
            Err(e) => Err(self.audit_err("open", e)),
        }
    }

    /// Appends a durable intent and returns its `audit_id`.
    pub fn intent(&self, entry: &Entry) -> Result<Uuid> {
        Ok(self.append(Stage::Intent, None, entry)?.audit_id)
    }

    /// Appends the outcome of intent `id`: `complete` if `ok`, else `failed`. When
    /// `entry.outcome` is empty it is set to `ok` or `failed`.
    pub fn outcome(&self, id: Uuid, ok: bool, entry: &Entry) -> Result<()> {
        let stage = if ok { Stage::Complete } else { Stage::Failed };
        let mut e = entry.clone();
        if e.outcome.is_none() {
            e.outcome = Some(if ok { "ok" } else { "failed" }.into());
        }
        self.append(stage, Some(id), &e).map(|_| ())
    }
}

/// Fail-closed wrapper: a durable intent, then `effect`, then its outcome.
///
/// If the intent cannot be made durable, `effect` never runs and [`Error::Audit`] is returned.
/// If the outcome cannot be written after the effect ran, the effect's own result is returned
/// anyway (the effect did happen; the log then shows an intent without outcome, which reads as
/// "result unknown") and a warning is logged through `tracing`.
pub fn guarded<T>(log: &AuditLog, entry: &Entry, effect: impl FnOnce() -> Result<T>) -> Result<T> {
    let id = log.intent(entry).map_err(|e| match e {
        Error::Audit { .. } | Error::UnsafePath { .. } => e,
        other => Error::Audit {
            path: log.path().to_path_buf(),
            msg: other.to_string(),
        },
    })?;
    let result = effect();
    let mut done = entry.clone();
    done.outcome = Some(match &result {
        Ok(_) => "ok".to_string(),
        Err(e) => e.to_string(),
    });
    if let Err(e) = log.outcome(id, result.is_ok(), &done) {
        tracing::warn!(audit_id = %id, error = %e, "could not record the outcome of an audited effect");
    }
    result
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tests_scale;

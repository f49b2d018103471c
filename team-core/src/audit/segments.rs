//! Segment files: a log `audit.jsonl` rotates into `audit.jsonl.000001`, `audit.jsonl.000002`,
//! ... (oldest first), and the chain runs on across them.
//!
//! A writer that finds the active file would grow past its maximum size (under the file's
//! exclusive lock) appends a closing record (stage `segment`, action `audit.segment_end`,
//! target `{"segment": k}`), makes it durable, renames the file to segment `k` (never over an
//! existing file) and fsyncs the directory. The next writer to find the active file empty
//! starts it with an opening record (action `audit.segment_start`, target
//! `{"previous_segment": k, "last_seq": S, "last_hash": H}`, `prev` = H, `seq` = S + 1), so
//! each new segment starts from the previous head, recorded in both. `k` is one more than
//! the segment the active file's own `segment_start` names (1 for the very first file), so
//! numbering follows the chain and never reuses a pruned number.
//!
//! A writer that finds the active file already ending with a `segment_end` (a rotation was
//! interrupted before the rename) completes the rename first.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The audit log at scale** (issue 15). Rotation: `--max-size` on every writer, default
//!   256 MiB, env `TEAM_AUDIT_MAX_SIZE` (read by team-audit only; team-scale and team-reap use
//!   the default); a batch larger than the maximum still goes into one file. The writer rotates
//!   under the active file's flock: `segment_end` (target `{"segment": k}`) durable, then
//!   `renameat2(RENAME_NOREPLACE)` to `<log>.<k:06>` and an fsync of the directory; the next
//!   writer to find the active file empty writes `segment_start` (`{"previous_segment": k,
//!   "last_seq", "last_hash"}`, `prev` = that hash). So the active name is briefly absent, and
//!   every step is idempotent: a writer that finds the active file ending in `segment_end`
//!   finishes the rename; one whose locked fd no longer is the file at the path starts over.
//!   `k` is one more than the number the active file's own `segment_start` names (1 for the first
//!   file), so numbers follow the chain and never reuse a pruned one. Segment records use stage
//!   `segment` with their own actions (`audit.segment_start`, `audit.segment_end`,
//!   `audit.checkpoint`); callers cannot write stage `segment`. Retention: `prune --keep N |
//!   --before T` verifies the whole log first, removes a prefix of the segments only, and
//!   checkpoints each removed file's `first_seq`, `last_seq`, `last_hash`, `bytes` and `sha256`;
//!   `verify` accepts a first file that continues a removed segment only when some checkpoint
//!   names that exact `last_seq` and hash. Reading: lines longer than 16 MiB are never records
//!   (the writer refuses them; readers skip them without holding them); `query` rules out a line
//!   in the writer's shape (`{"v":...,"hash":"..."}`) without parsing it when a `"team":"X"` /
//!   `"action":` / `"caller":` / `"stage":` / `"audit_id":` needle is missing or its `ts` is out of
//!   range: a hand-edited line in that shape with other spacing may be missed by a filter (it is
//!   what `verify` reports as `noncanonical`). `--since` and `--last` read backwards from the end
//!   and assume time order (the writer stamps records under the lock; a clock stepped back can
//!   hide records from `--since`). `verify` parses and hashes lines on two threads for files of
//!   4 MiB and more (each line's hash depends only on its own `prev` field), and walks the chain
//!   in order on the main thread; it parses into borrowed strings (`fast.rs`) rather than a
//!   `Record` with `serde_json::Value`s, which costs a third less CPU. `read_records` (used by the hook's PostToolUse pairing) reads
//!   the active file only.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// One segment file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub number: u64,
    pub path: PathBuf,
}

impl Segment {
    /// The file name.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The directory a log is in (`.` for a bare file name).
pub(crate) fn dir_of(log: &Path) -> &Path {
    match log.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The path of segment `n` of `log`.
pub fn segment_path(log: &Path, n: u64) -> PathBuf {
    let mut name: OsString = log.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{n:06}"));
    dir_of(log).join(name)
}

/// The segment files of `log` present, oldest first. Names that are not
/// `<log name>.<6 or more digits>` are ignored.
pub fn list(log: &Path) -> Result<Vec<Segment>> {
    let dir = dir_of(log);
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read directory", dir, e)),
    };
    let mut names = Vec::new();
    for e in rd {
        names.push(
            e.map_err(|e| Error::io("read directory", dir, e))?
                .file_name(),
        );
    }
    Ok(from_names(log, names))
}

/// [`list`] for a log directly in the state root `root`, read with no symlink on its way.
pub fn list_in(root: &Path, log: &Path) -> Result<Vec<Segment>> {
    match crate::fsutil::state_dir(root, root, false)? {
        Some(d) => Ok(from_names(log, d.names()?)),
        None => Ok(Vec::new()),
    }
}

/// The segments of `log` among `names`, the entries of its directory, in order.
fn from_names(log: &Path, names: Vec<std::ffi::OsString>) -> Vec<Segment> {
    let Some(base) = log.file_name() else {
        return Vec::new();
    };
    let mut prefix = base.to_os_string();
    prefix.push(".");
    let prefix = prefix.as_encoded_bytes().to_vec();
    let dir = dir_of(log);
    let mut out = Vec::new();
    for name in names {
        let Some(digits) = name.as_encoded_bytes().strip_prefix(&prefix[..]) else {
            continue;
        };
        if digits.len() < 6 || !digits.iter().all(u8::is_ascii_digit) {
            continue;
        }
        let Some(number) = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse::<u64>().ok())
        else {
            continue;
        };
        out.push(Segment {
            number,
            path: dir.join(&name),
        });
    }
    out.sort_by_key(|s| s.number);
    out
}

/// One opened file of a log: a segment (`number`) or the active file (`None`).
pub(crate) struct LogFile {
    pub number: Option<u64>,
    pub path: PathBuf,
    pub file: std::fs::File,
}

impl LogFile {
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Opens every file of `log`, oldest first: its segments, then the active file. A consistent
/// set even while writers rotate and `prune` removes: the active file is opened first, then
/// the segments are listed; an active file renamed into a segment meanwhile is read once, as
/// that segment; a segment removed meanwhile (always one of the oldest, after its checkpoint)
/// is left out. Never through a symlink, regular files only (`fsutil`). No file at all is
/// [`Error::NotFound`].
pub(crate) fn open_all(log: &Path) -> Result<Vec<LogFile>> {
    use crate::fsutil::Access;
    use std::os::unix::fs::MetadataExt;
    // A log whose directory is not there is no log either (not an I/O failure).
    if let Some(dir) = log.parent().filter(|d| !d.as_os_str().is_empty())
        && std::fs::symlink_metadata(dir).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        return Err(Error::NotFound {
            what: "audit log",
            path: log.to_path_buf(),
        });
    }
    let active = crate::fsutil::open(log, Access::Read)?;
    let id = |f: &std::fs::File| f.metadata().map(|m| (m.dev(), m.ino()));
    let active_id = match &active {
        Some(o) => Some(id(&o.file).map_err(|e| Error::io("stat", log, e))?),
        None => None,
    };
    let mut out = Vec::new();
    let mut active_rotated = false;
    for s in list(log)? {
        let Some(o) = crate::fsutil::open(&s.path, Access::Read)? else {
            continue;
        };
        if active_id.is_some() && active_id == id(&o.file).ok() {
            active_rotated = true;
        }
        out.push(LogFile {
            number: Some(s.number),
            path: s.path,
            file: o.file,
        });
    }
    if let Some(o) = active
        && !active_rotated
    {
        out.push(LogFile {
            number: None,
            path: log.to_path_buf(),
            file: o.file,
        });
    }
    if out.is_empty() {
        return Err(Error::NotFound {
            what: "audit log",
            path: log.to_path_buf(),
        });
    }
    Ok(out)
}

//! Retention: removing old segments only after a checkpoint records them.
//!
//! `prune` verifies the whole log first (it never blesses a broken chain), picks the oldest
//! segments the rule lets go (always a prefix: the log keeps a contiguous tail), and appends
//! one checkpoint record to the active file (stage `segment`, action `audit.checkpoint`, one
//! target per removed segment: `segment`, `number`, `first_seq`, `last_seq`, `last_hash`,
//! `bytes`, `sha256` of the whole file). Only once that record is durable are the files
//! removed. `verify` then starts at the first remaining segment, whose `segment_start` names
//! the last removed `seq` and hash, and requires a checkpoint naming exactly those (the
//! CloudTrail digest idea: the removed files can still be checked against their SHA-256).

use std::io::Read;
use std::time::SystemTime;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::lines::{Lines, quick_seq_ts};
use super::segments::{self, Segment};
use super::{AuditLog, CHECKPOINT_ACTION, Entry, Record, head};
use crate::error::{Error, Result};
use crate::fsutil::Access;

/// Which segments to remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// Keep the newest `n` segments (the active file is always kept).
    Keep(usize),
    /// Remove segments whose last record is older than this.
    Before(SystemTime),
}

/// One removed segment, as its checkpoint records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemovedSegment {
    pub segment: String,
    pub number: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    pub last_hash: String,
    pub bytes: u64,
    pub sha256: String,
}

/// What `prune` did.
#[derive(Debug, Clone, Serialize)]
pub struct PruneReport {
    pub removed: Vec<RemovedSegment>,
    /// `seq` of the checkpoint record (none when nothing was removed).
    pub checkpoint_seq: Option<u64>,
    /// The first `seq` the log holds now.
    pub first_seq: u64,
    /// Segments kept.
    pub kept: usize,
}

/// Removes old segments of `log` under `rule`, after a durable checkpoint. Refuses
/// ([`Error::Refused`]) when the log does not verify.
pub fn prune(log: &AuditLog, rule: Retention, caller: &str) -> Result<PruneReport> {
    let rep = super::verify(log.path())?;
    if let Some(p) = &rep.problem {
        return Err(Error::Refused(format!(
            "the audit log {} does not verify (seq {}: {}); nothing was removed",
            log.path().display(),
            p.seq,
            p.kind.as_str()
        )));
    }
    let segs = segments::list(log.path())?;
    let mut removed = Vec::new();
    let cut = match rule {
        Retention::Keep(n) => segs.len().saturating_sub(n),
        Retention::Before(_) => segs.len(),
    };
    for s in &segs[..cut] {
        let (info, last) = describe(s)?;
        if let Retention::Before(t) = rule {
            let old = last
                .as_ref()
                .and_then(|r| humantime::parse_rfc3339_weak(&r.ts).ok())
                .is_some_and(|ts| ts < t);
            if !old {
                break;
            }
        }
        removed.push(info);
    }
    let kept = segs.len() - removed.len();
    let Some(newest) = removed.last() else {
        return Ok(PruneReport {
            removed,
            checkpoint_seq: None,
            first_seq: rep.first_seq,
            kept,
        });
    };
    let first_seq = newest.last_seq + 1;
    let entry = Entry {
        caller: caller.to_string(),
        action: CHECKPOINT_ACTION.into(),
        targets: removed
            .iter()
            .map(|r| serde_json::to_value(r).map_err(|e| Error::Internal(e.to_string())))
            .collect::<Result<_>>()?,
        reason: Some(format!(
            "removed {} segment(s), seq {}..{}; the log now starts at seq {first_seq}",
            removed.len(),
            removed[0].first_seq,
            newest.last_seq
        )),
        ..Entry::default()
    };
    let cp = log.append_own(&entry)?;
    crate::failpoint::hit("audit.prune.after_checkpoint")
        .map_err(|e| Error::Internal(e.to_string()))?;
    for r in &removed {
        crate::fsutil::remove(&segments::segment_path(log.path(), r.number))?;
    }
    Ok(PruneReport {
        removed,
        checkpoint_seq: Some(cp.seq),
        first_seq,
        kept,
    })
}

/// A segment's checkpoint entry (streaming its SHA-256) and its last record.
fn describe(s: &Segment) -> Result<(RemovedSegment, Option<Record>)> {
    let io = |e| Error::io("read", &s.path, e);
    let open = || -> Result<std::fs::File> {
        Ok(crate::fsutil::open(&s.path, Access::Read)?
            .ok_or_else(|| Error::NotFound {
                what: "audit segment",
                path: s.path.clone(),
            })?
            .file)
    };
    let mut f = open()?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        h.update(&buf[..n]);
    }
    let f = open()?;
    let head = head::read_head(&f, bytes).map_err(io)?;
    let mut lines = Lines::new(&f, 0);
    let first_seq = match lines.next_line().map_err(io)? {
        Some(l) => quick_seq_ts(l.body).map_or(0, |(s, _)| s),
        None => 0,
    };
    Ok((
        RemovedSegment {
            segment: s.name(),
            number: s.number,
            first_seq,
            last_seq: head.seq,
            last_hash: head.hash,
            bytes,
            sha256: hex::encode(h.finalize()),
        },
        head.last,
    ))
}

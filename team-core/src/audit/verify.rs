//! Walking the chain: the first problem, with its `seq` and kind.

use std::path::Path;

use serde::Serialize;

use super::canonical::{ZERO_HASH, compute_hash, parse_line, render_line};
use super::{Record, Stage, VERSION};
use crate::error::{Error, Result};

/// What is wrong at a point of the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Bytes that are not a whole record (a torn write, or garbage), not acknowledged by a
    /// segment record. As a warning: damage a segment record acknowledges.
    TornLine,
    /// The record's `hash` does not match its content: a field was edited.
    EditedField,
    /// The record's `prev` is not the previous record's `hash`: a record was removed or forged.
    BadPrev,
    /// One or more `seq` numbers are missing: records were deleted.
    Gap,
    /// A record appears out of its place (its `seq` is found later, or repeats an earlier one).
    Reorder,
    /// A record format version this build does not know.
    BadVersion,
    /// The record hashes correctly but its line is not the canonical rendering.
    Noncanonical,
    /// A segment record that names no damage, or other damage than what precedes it.
    BadSegment,
}

impl ProblemKind {
    /// The kind's name as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::TornLine => "torn_line",
            ProblemKind::EditedField => "edited_field",
            ProblemKind::BadPrev => "bad_prev",
            ProblemKind::Gap => "gap",
            ProblemKind::Reorder => "reorder",
            ProblemKind::BadVersion => "bad_version",
            ProblemKind::Noncanonical => "noncanonical",
            ProblemKind::BadSegment => "bad_segment",
        }
    }
}

/// One problem (or acknowledged damage) found by [`verify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The `seq` the record at this place should have (for a gap: the first missing one).
    pub seq: u64,
    /// The `seq` actually found there, when a record was found.
    pub found_seq: Option<u64>,
    /// 1-based line number in the file.
    pub line: u64,
    /// Byte offset of that line.
    pub offset: u64,
    pub kind: ProblemKind,
    pub detail: String,
}

/// The result of walking a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Records that verified (segment records included).
    pub records: u64,
    /// `seq` of the last verified record (0 if none).
    pub last_seq: u64,
    /// `hash` of the last verified record (64 zeros if none).
    pub head: String,
    /// Acknowledged damage: reported, not failing.
    pub warnings: Vec<Problem>,
    /// The first problem; `None` means the chain is intact.
    pub problem: Option<Problem>,
}

impl VerifyReport {
    /// Whether the chain is intact (warnings allowed).
    pub fn ok(&self) -> bool {
        self.problem.is_none()
    }
}

struct Line<'a> {
    no: u64,
    offset: u64,
    body: &'a [u8],
    terminated: bool,
}

fn split_lines(bytes: &[u8]) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut no = 0u64;
    while start < bytes.len() {
        no += 1;
        let (body, next, terminated) = match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(i) => (&bytes[start..start + i], start + i + 1, true),
            None => (&bytes[start..], bytes.len(), false),
        };
        out.push(Line {
            no,
            offset: start as u64,
            body,
            terminated,
        });
        start = next;
    }
    out
}

/// Walks the chain of the log at `path` and reports the first problem. A missing file is
/// [`Error::NotFound`]; an empty file is an intact chain of no records. The file is read whole.
pub fn verify(path: &Path) -> Result<VerifyReport> {
    // Never through a symlink, regular files only, bounded (`fsutil`).
    let Some(bytes) = crate::fsutil::read(path, crate::fsutil::limits::AUDIT)? else {
        return Err(Error::NotFound {
            what: "audit log",
            path: path.to_path_buf(),
        });
    };
    Ok(verify_bytes(&bytes))
}

/// [`verify`] on the bytes of a log.
pub fn verify_bytes(bytes: &[u8]) -> VerifyReport {
    let lines = split_lines(bytes);
    let parsed: Vec<Option<Record>> = lines
        .iter()
        .map(|l| {
            if l.terminated {
                parse_line(l.body).ok()
            } else {
                None
            }
        })
        .collect();
    let mut rep = VerifyReport {
        records: 0,
        last_seq: 0,
        head: ZERO_HASH.to_string(),
        warnings: Vec::new(),
        problem: None,
    };
    let mut expected = 1u64;
    // (first line index, offset, end offset without the final '\n')
    let mut damage: Option<(usize, u64, u64)> = None;
    for (i, line) in lines.iter().enumerate() {
        let problem = |kind, found_seq, detail: String| Problem {
            seq: expected,
            found_seq,
            line: line.no,
            offset: line.offset,
            kind,
            detail,
        };
        let Some(rec) = &parsed[i] else {
            if !line.terminated {
                let (first, offset) = damage.map_or((i, line.offset), |(f, o, _)| (f, o));
                rep.problem = Some(Problem {
                    line: lines[first].no,
                    offset,
                    ..problem(
                        ProblemKind::TornLine,
                        None,
                        format!(
                            "the log ends in {} bytes without a newline at offset {offset}: \
                             a torn write, not yet acknowledged by a segment record",
                            line.offset + line.body.len() as u64 - offset
                        ),
                    )
                });
                return rep;
            }
            let end = line.offset + line.body.len() as u64;
            damage = Some(match damage {
                Some((f, o, _)) => (f, o, end),
                None => (i, line.offset, end),
            });
            continue;
        };
        if let Some((first, offset, end)) = damage.take() {
            let bytes_len = end - offset;
            if rec.segment_damage() == Some((offset, bytes_len)) {
                rep.warnings.push(Problem {
                    line: lines[first].no,
                    offset,
                    ..problem(
                        ProblemKind::TornLine,
                        None,
                        format!(
                            "{bytes_len} damaged bytes at offset {offset}, acknowledged by \
                             the segment record seq {}",
                            rec.seq
                        ),
                    )
                });
            } else {
                rep.problem = Some(Problem {
                    line: lines[first].no,
                    offset,
                    ..problem(
                        ProblemKind::TornLine,
                        None,
                        format!(
                            "{bytes_len} bytes at offset {offset} are not a record, and no \
                             segment record acknowledges them"
                        ),
                    )
                });
                return rep;
            }
        } else if rec.stage == Stage::Segment {
            rep.problem = Some(problem(
                ProblemKind::BadSegment,
                Some(rec.seq),
                "a segment record that follows no damaged bytes".into(),
            ));
            return rep;
        }
        if rec.seq != expected {
            let later = parsed[i + 1..].iter().flatten().any(|r| r.seq == expected);
            let (kind, detail) = if rec.seq < expected {
                (
                    ProblemKind::Reorder,
                    format!(
                        "found seq {} where seq {expected} belongs: a repeated or moved record",
                        rec.seq
                    ),
                )
            } else if later {
                (
                    ProblemKind::Reorder,
                    format!(
                        "found seq {} where seq {expected} belongs; seq {expected} appears later",
                        rec.seq
                    ),
                )
            } else {
                (
                    ProblemKind::Gap,
                    format!(
                        "seq {expected}..{} missing: found seq {} next",
                        rec.seq - 1,
                        rec.seq
                    ),
                )
            };
            rep.problem = Some(problem(kind, Some(rec.seq), detail));
            return rep;
        }
        if rec.v != VERSION {
            rep.problem = Some(problem(
                ProblemKind::BadVersion,
                Some(rec.seq),
                format!("record version {} (this build knows {VERSION})", rec.v),
            ));
            return rep;
        }
        if compute_hash(rec) != rec.hash {
            rep.problem = Some(problem(
                ProblemKind::EditedField,
                Some(rec.seq),
                "the record's content does not match its hash: it was edited".into(),
            ));
            return rep;
        }
        if rec.prev != rep.head {
            rep.problem = Some(problem(
                ProblemKind::BadPrev,
                Some(rec.seq),
                format!(
                    "prev {} is not the previous record's hash {}",
                    short(&rec.prev),
                    short(&rep.head)
                ),
            ));
            return rep;
        }
        if render_line(rec)[..] != bytes[line.offset as usize..][..line.body.len() + 1] {
            rep.problem = Some(problem(
                ProblemKind::Noncanonical,
                Some(rec.seq),
                "the line is not the canonical rendering of its record".into(),
            ));
            return rep;
        }
        rep.records += 1;
        rep.last_seq = rec.seq;
        rep.head = rec.hash.clone();
        expected += 1;
    }
    if let Some((first, offset, end)) = damage {
        rep.problem = Some(Problem {
            seq: expected,
            found_seq: None,
            line: lines[first].no,
            offset,
            kind: ProblemKind::TornLine,
            detail: format!(
                "the log ends in {} bytes at offset {offset} that are not a record, not yet \
                 acknowledged by a segment record",
                end - offset
            ),
        });
    }
    rep
}

fn short(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

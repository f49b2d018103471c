//! Walking the chain: the first problem, with its `seq` and kind.

use std::borrow::Cow;
use std::path::Path;

use serde::Serialize;

use std::fs::File;
use std::io::Read;

use super::canonical::{ZERO_HASH, chain_hash, parse_line};
use super::lines::{Line, Lines};
use super::{Record, SEGMENT_ACTION, Stage, VERSION};
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
    /// A segment record that names no damage, or other damage than what precedes it; a
    /// `segment_start` that is not first in its file, a record after a `segment_end`.
    BadSegment,
    /// A segment file is missing (a gap in the numbers, or pruned without a checkpoint).
    MissingSegment,
    /// A segment file does not end with its `segment_end` record.
    TruncatedSegment,
    /// An anchor given to `verify` (a `seq` and its `hash` saved earlier) does not hold: records
    /// were cut from the end, or the chain was rewritten.
    Anchor,
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
            ProblemKind::MissingSegment => "missing_segment",
            ProblemKind::TruncatedSegment => "truncated_segment",
            ProblemKind::Anchor => "anchor",
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
    /// The file it is in (a segment file, or the active file); empty for bytes.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// 1-based line number in the file (0: the file as a whole).
    pub line: u64,
    /// Byte offset of that line.
    pub offset: u64,
    pub kind: ProblemKind,
    pub detail: String,
}

impl Problem {
    /// An anchor that does not hold (see [`ProblemKind::Anchor`]).
    pub fn anchor(seq: u64, detail: String) -> Problem {
        Problem {
            seq,
            found_seq: None,
            file: String::new(),
            line: 0,
            offset: 0,
            kind: ProblemKind::Anchor,
            detail,
        }
    }
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
    /// Segment files walked before the active file.
    pub segments: u64,
    /// The first `seq` present (1, unless older segments were pruned).
    pub first_seq: u64,
    /// When older segments were pruned: the `seq` of the checkpoint that records it.
    pub checkpoint_seq: Option<u64>,
}

impl VerifyReport {
    /// Whether the chain is intact (warnings allowed).
    pub fn ok(&self) -> bool {
        self.problem.is_none()
    }
}

/// Walks every file of the log in order (the segments, then the active file), carrying the
/// chain from one to the next. Holds one line at a time.
struct Walker {
    rep: VerifyReport,
    expected: u64,
    /// Number of the previous segment file walked.
    prev_number: Option<u64>,
    /// Whether any file was walked before the current one.
    walked_any: bool,
    /// `(last_seq, last_hash)` named by the first file's `segment_start`: what was removed
    /// before it must be covered by a checkpoint.
    anchor: Option<(u64, String)>,
    /// `(last_seq, last_hash, checkpoint seq)` of every segment a checkpoint names.
    covered: Vec<(u64, String, u64)>,
}

/// One file being walked.
struct FileState {
    name: String,
    number: Option<u64>,
    first: bool,
    /// `seq` of this file's `segment_end`, once seen.
    ended: Option<u64>,
    /// (line number, offset, end offset without the final '\n') of pending damage.
    damage: Option<(u64, u64, u64)>,
}

enum Flow {
    Go,
    Stop,
    /// A record with a higher `seq` than expected: a gap, unless `seq` shows up later.
    Gap(u64),
}

impl Walker {
    fn new() -> Walker {
        Walker {
            rep: VerifyReport {
                records: 0,
                last_seq: 0,
                head: ZERO_HASH.to_string(),
                warnings: Vec::new(),
                problem: None,
                segments: 0,
                first_seq: 1,
                checkpoint_seq: None,
            },
            expected: 1,
            prev_number: None,
            walked_any: false,
            anchor: None,
            covered: Vec::new(),
        }
    }

    fn fail(
        &mut self,
        f: &FileState,
        line: u64,
        offset: u64,
        kind: ProblemKind,
        found: Option<u64>,
        detail: String,
    ) {
        self.rep.problem = Some(Problem {
            seq: self.expected,
            found_seq: found,
            file: f.name.clone(),
            line,
            offset,
            kind,
            detail,
        });
    }

    /// Walks one file. `number` is the segment number of a segment file, `None` for the active
    /// file (or bytes given directly).
    fn file(
        &mut self,
        name: String,
        number: Option<u64>,
        next: &mut dyn FnMut() -> std::io::Result<Option<(Meta, Checked)>>,
    ) -> std::io::Result<()> {
        if self.rep.problem.is_some() {
            return Ok(());
        }
        let mut f = FileState {
            name,
            number,
            first: true,
            ended: None,
            damage: None,
        };
        if let (Some(n), Some(p)) = (number, self.prev_number)
            && n != p + 1
        {
            let missing = if n > p + 1 {
                format!("segment {:06} is missing", p + 1)
            } else {
                format!("segment {n:06} repeats")
            };
            self.fail(
                &f,
                0,
                0,
                ProblemKind::MissingSegment,
                None,
                format!("{missing}: segment {n:06} follows segment {p:06}"),
            );
            return Ok(());
        }
        while let Some((line, c)) = next()? {
            let (no, offset) = (line.no, line.offset);
            match self.line(&mut f, &line, c) {
                Flow::Go => {}
                Flow::Stop => return Ok(()),
                Flow::Gap(found) => {
                    // Look further in this file for the expected record.
                    let want = self.expected;
                    let mut later = false;
                    while let Some((_, c)) = next()? {
                        if c.rec.is_some_and(|r| r.seq == want) {
                            later = true;
                            break;
                        }
                    }
                    let (kind, detail) = if later {
                        (
                            ProblemKind::Reorder,
                            format!(
                                "found seq {found} where seq {want} belongs; seq {want} appears later"
                            ),
                        )
                    } else {
                        (
                            ProblemKind::Gap,
                            format!("seq {want}..{} missing: found seq {found} next", found - 1),
                        )
                    };
                    self.fail(&f, no, offset, kind, Some(found), detail);
                    return Ok(());
                }
            }
        }
        if let Some((no, offset, end)) = f.damage {
            let detail = format!(
                "the file ends in {} bytes at offset {offset} that are not a record, not yet \
                 acknowledged by a segment record",
                end - offset
            );
            self.fail(&f, no, offset, ProblemKind::TornLine, None, detail);
            return Ok(());
        }
        if let Some(n) = number {
            if f.ended.is_none() {
                let detail = format!(
                    "segment {n:06} ends after seq {} without its segment_end record: it was \
                     truncated",
                    self.rep.last_seq
                );
                self.fail(&f, 0, 0, ProblemKind::TruncatedSegment, None, detail);
                return Ok(());
            }
            self.prev_number = Some(n);
            self.rep.segments += 1;
        } else if f.ended.is_some() {
            self.rep.warnings.push(Problem {
                seq: self.rep.last_seq,
                found_seq: None,
                file: f.name.clone(),
                line: 0,
                offset: 0,
                kind: ProblemKind::BadSegment,
                detail: "the active file ends with a segment_end record: a rotation was \
                         interrupted; the next writer completes it"
                    .into(),
            });
        }
        self.walked_any = true;
        Ok(())
    }

    fn line(&mut self, f: &mut FileState, line: &Meta, c: Checked) -> Flow {
        let Some(rec) = c.rec else {
            if !line.terminated {
                let (first, offset) = f.damage.map_or((line.no, line.offset), |(n, o, _)| (n, o));
                let detail = format!(
                    "the file ends in {} bytes without a newline at offset {offset}: a torn \
                     write, not yet acknowledged by a segment record",
                    line.offset + line.len - offset
                );
                self.fail(f, first, offset, ProblemKind::TornLine, None, detail);
                return Flow::Stop;
            }
            let end = line.offset + line.len;
            f.damage = Some(match f.damage {
                Some((n, o, _)) => (n, o, end),
                None => (line.no, line.offset, end),
            });
            return Flow::Go;
        };
        if let Some((first, offset, end)) = f.damage.take() {
            let bytes_len = end - offset;
            if rec.segment_damage() == Some((offset, bytes_len)) {
                self.rep.warnings.push(Problem {
                    seq: self.expected,
                    found_seq: None,
                    file: f.name.clone(),
                    line: first,
                    offset,
                    kind: ProblemKind::TornLine,
                    detail: format!(
                        "{bytes_len} damaged bytes at offset {offset}, acknowledged by the \
                         segment record seq {}",
                        rec.seq
                    ),
                });
            } else {
                let detail = format!(
                    "{bytes_len} bytes at offset {offset} are not a record, and no segment \
                     record acknowledges them"
                );
                self.fail(f, first, offset, ProblemKind::TornLine, None, detail);
                return Flow::Stop;
            }
        } else if rec.stage == Stage::Segment && rec.action == SEGMENT_ACTION {
            self.fail(
                f,
                line.no,
                line.offset,
                ProblemKind::BadSegment,
                Some(rec.seq),
                "a segment record that follows no damaged bytes".into(),
            );
            return Flow::Stop;
        }
        if let Some(end) = f.ended {
            let detail = format!("a record after the segment_end record seq {end}");
            self.fail(
                f,
                line.no,
                line.offset,
                ProblemKind::BadSegment,
                Some(rec.seq),
                detail,
            );
            return Flow::Stop;
        }
        let first = std::mem::replace(&mut f.first, false);
        match (rec.segment_start(), first) {
            (Some(_), false) => {
                self.fail(
                    f,
                    line.no,
                    line.offset,
                    ProblemKind::BadSegment,
                    Some(rec.seq),
                    "a segment_start record that is not the first record of its file".into(),
                );
                return Flow::Stop;
            }
            (Some((prev_no, last_seq, last_hash)), true) => {
                if !self.walked_any {
                    // The oldest file present: the segments before it were pruned, which a
                    // checkpoint must record (checked at the end).
                    self.expected = last_seq + 1;
                    self.rep.head = last_hash.to_string();
                    self.rep.first_seq = last_seq + 1;
                    self.anchor = Some((last_seq, last_hash.to_string()));
                } else if Some(prev_no) != self.prev_number {
                    let detail = format!(
                        "this file continues segment {prev_no:06}, but the file before it is \
                         segment {}",
                        self.prev_number
                            .map_or("-".to_string(), |p| format!("{p:06}"))
                    );
                    self.fail(
                        f,
                        line.no,
                        line.offset,
                        ProblemKind::Reorder,
                        Some(rec.seq),
                        detail,
                    );
                    return Flow::Stop;
                }
            }
            (None, true) if self.walked_any => {
                self.fail(
                    f,
                    line.no,
                    line.offset,
                    ProblemKind::BadSegment,
                    Some(rec.seq),
                    "a file after a segment does not start with a segment_start record".into(),
                );
                return Flow::Stop;
            }
            _ => {}
        }
        if let Some(n) = rec.segment_end() {
            if f.number.is_some_and(|k| k != n) {
                let detail = format!(
                    "segment file {} holds segment {n:06}",
                    f.number.map_or(String::new(), |k| format!("{k:06}"))
                );
                self.fail(
                    f,
                    line.no,
                    line.offset,
                    ProblemKind::Reorder,
                    Some(rec.seq),
                    detail,
                );
                return Flow::Stop;
            }
            f.ended = Some(rec.seq);
        }
        if rec.seq != self.expected {
            if rec.seq < self.expected {
                let detail = format!(
                    "found seq {} where seq {} belongs: a repeated or moved record",
                    rec.seq, self.expected
                );
                self.fail(
                    f,
                    line.no,
                    line.offset,
                    ProblemKind::Reorder,
                    Some(rec.seq),
                    detail,
                );
                return Flow::Stop;
            }
            return Flow::Gap(rec.seq);
        }
        if rec.v != VERSION {
            let detail = format!("record version {} (this build knows {VERSION})", rec.v);
            self.fail(
                f,
                line.no,
                line.offset,
                ProblemKind::BadVersion,
                Some(rec.seq),
                detail,
            );
            return Flow::Stop;
        }
        if !c.hash_ok {
            self.fail(
                f,
                line.no,
                line.offset,
                ProblemKind::EditedField,
                Some(rec.seq),
                "the record's content does not match its hash: it was edited".into(),
            );
            return Flow::Stop;
        }
        if rec.prev != self.rep.head {
            let detail = format!(
                "prev {} is not the previous record's hash {}",
                short(&rec.prev),
                short(&self.rep.head)
            );
            self.fail(
                f,
                line.no,
                line.offset,
                ProblemKind::BadPrev,
                Some(rec.seq),
                detail,
            );
            return Flow::Stop;
        }
        if !c.canonical_ok {
            self.fail(
                f,
                line.no,
                line.offset,
                ProblemKind::Noncanonical,
                Some(rec.seq),
                "the line is not the canonical rendering of its record".into(),
            );
            return Flow::Stop;
        }
        for (s, h) in rec.checkpoint_covers() {
            self.covered.push((s, h.to_string(), rec.seq));
        }
        self.rep.records += 1;
        self.rep.last_seq = rec.seq;
        self.rep.head = rec.hash;
        self.expected += 1;
        Flow::Go
    }

    fn finish(mut self) -> VerifyReport {
        if self.rep.problem.is_none()
            && let Some((seq, hash)) = &self.anchor
        {
            match self.covered.iter().find(|(s, h, _)| s == seq && h == hash) {
                Some((_, _, at)) => self.rep.checkpoint_seq = Some(*at),
                None => {
                    self.rep.problem = Some(Problem {
                        seq: 1,
                        found_seq: Some(seq + 1),
                        file: String::new(),
                        line: 0,
                        offset: 0,
                        kind: ProblemKind::MissingSegment,
                        detail: format!(
                            "the log starts at seq {} but no checkpoint records the removal of \
                             seq 1..{seq}: segments are missing",
                            seq + 1
                        ),
                    })
                }
            }
        }
        self.rep
    }
}

/// A line's place, without its bytes.
#[derive(Debug, Clone, Copy)]
struct Meta {
    no: u64,
    offset: u64,
    len: u64,
    terminated: bool,
    too_long: bool,
}

impl Meta {
    fn of(l: &Line<'_>) -> Meta {
        Meta {
            no: l.no,
            offset: l.offset,
            len: l.len,
            terminated: l.terminated,
            too_long: l.too_long,
        }
    }
}

/// What can be checked of one line on its own (and so in parallel): the record it holds,
/// whether its hash matches its content, whether the line is its canonical rendering.
struct Checked {
    rec: Option<Record>,
    hash_ok: bool,
    canonical_ok: bool,
}

fn check(meta: &Meta, body: &[u8]) -> Checked {
    let none = Checked {
        rec: None,
        hash_ok: false,
        canonical_ok: false,
    };
    if !meta.terminated || meta.too_long {
        return none;
    }
    let Some(r) = super::fast::parse_ref(body) else {
        return none;
    };
    let canonical = super::fast::canonical_bytes_ref(&r, body.len());
    let hash_ok = chain_hash(&r.prev, &canonical) == r.hash;
    let canonical_ok = hash_ok && is_rendering(body, &canonical, &r.hash);
    // The walk needs the chain fields, and all of the log's own records (stage `segment`).
    let rec = if r.stage == Stage::Segment {
        parse_line(body).ok()
    } else {
        Some(Record {
            v: r.v,
            seq: r.seq,
            ts: String::new(),
            audit_id: r.audit_id,
            stage: r.stage,
            caller: String::new(),
            caller_pid: r.caller_pid,
            action: r.action.into_owned(),
            op: r.op.map(Cow::into_owned),
            argv: Vec::new(),
            endpoint: None,
            targets: Vec::new(),
            workspace: None,
            team: None,
            generation: None,
            owner_evidence: None,
            reason: None,
            outcome: None,
            prev: r.prev.into_owned(),
            hash: r.hash.into_owned(),
        })
    };
    Checked {
        rec,
        hash_ok,
        canonical_ok,
    }
}

fn sequential_next<R: Read>(lines: &mut Lines<R>) -> std::io::Result<Option<(Meta, Checked)>> {
    Ok(lines.next_line()?.map(|l| {
        let m = Meta::of(&l);
        (m, check(&m, l.body))
    }))
}

/// Bytes of lines handed to a checking thread at once.
const CHUNK: usize = 256 << 10;
/// Files at least this large are checked by two threads.
const PARALLEL_MIN: u64 = 4 << 20;

type Checks = std::io::Result<Vec<(Meta, Checked)>>;

/// Walks one file; a large one with a reader thread and two checking threads (parsing and
/// hashing each line is independent; the chain is then walked in order here). Memory stays
/// bounded: at most a few chunks are in flight.
fn walk_file(w: &mut Walker, name: String, number: Option<u64>, file: File) -> std::io::Result<()> {
    let size = file.metadata()?.len();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if size < PARALLEL_MIN || cores < 2 || FORCE_SEQUENTIAL.with(|f| f.get()) {
        let mut lines = Lines::new(file, 0);
        return w.file(name, number, &mut || sequential_next(&mut lines));
    }
    walk_parallel(w, name, number, file)
}

thread_local! {
    /// Tests compare both ways of walking.
    static FORCE_SEQUENTIAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn walk_parallel(
    w: &mut Walker,
    name: String,
    number: Option<u64>,
    file: File,
) -> std::io::Result<()> {
    use std::collections::{BTreeMap, VecDeque};
    use std::sync::mpsc::sync_channel;
    use std::sync::{Arc, Mutex};
    std::thread::scope(|s| {
        let (work_tx, work_rx) = sync_channel::<(u64, Vec<u8>, Vec<(Meta, usize)>)>(2);
        let work_rx = Arc::new(Mutex::new(work_rx));
        let (res_tx, res_rx) = sync_channel::<(u64, Checks)>(4);
        let err_tx = res_tx.clone();
        s.spawn(move || {
            let mut lines = Lines::new(file, 0);
            let mut idx = 0u64;
            let mut buf = Vec::with_capacity(CHUNK + 4096);
            let mut metas = Vec::new();
            loop {
                match lines.next_line() {
                    Ok(Some(l)) => {
                        metas.push((Meta::of(&l), buf.len()));
                        buf.extend_from_slice(l.body);
                        if buf.len() < CHUNK {
                            continue;
                        }
                    }
                    Ok(None) => {
                        if !metas.is_empty() {
                            let _ = work_tx.send((idx, buf, metas));
                        }
                        return;
                    }
                    Err(e) => {
                        let _ = err_tx.send((idx, Err(e)));
                        return;
                    }
                }
                let chunk = (idx, std::mem::take(&mut buf), std::mem::take(&mut metas));
                if work_tx.send(chunk).is_err() {
                    return;
                }
                idx += 1;
            }
        });
        for _ in 0..2 {
            let rx = Arc::clone(&work_rx);
            let tx = res_tx.clone();
            s.spawn(move || {
                loop {
                    let job = rx
                        .lock()
                        .map_err(|_| ())
                        .and_then(|r| r.recv().map_err(|_| ()));
                    let Ok((idx, buf, metas)) = job else { return };
                    let mut out = Vec::with_capacity(metas.len());
                    for (i, (m, start)) in metas.iter().enumerate() {
                        let end = metas.get(i + 1).map_or(buf.len(), |n| n.1);
                        out.push((*m, check(m, &buf[*start..end])));
                    }
                    if tx.send((idx, Ok(out))).is_err() {
                        return;
                    }
                }
            });
        }
        // Only the threads hold the channels' other ends now, so each side sees the other go.
        drop(res_tx);
        drop(work_rx);
        let mut pending: BTreeMap<u64, Checks> = BTreeMap::new();
        let mut current: VecDeque<(Meta, Checked)> = VecDeque::new();
        let mut next_idx = 0u64;
        let mut next = move || -> std::io::Result<Option<(Meta, Checked)>> {
            loop {
                if let Some(x) = current.pop_front() {
                    return Ok(Some(x));
                }
                if let Some(r) = pending.remove(&next_idx) {
                    next_idx += 1;
                    current = r?.into();
                    continue;
                }
                match res_rx.recv() {
                    Ok((i, r)) => {
                        pending.insert(i, r);
                    }
                    Err(_) => return Ok(None),
                }
            }
        };
        let r = w.file(name, number, &mut next);
        // Dropping the receiver (with `next`) stops the threads if the walk ended early.
        drop(next);
        r
    })
}

/// Whether `line` is `canonical` without its `}`, then `,"hash":"<hash>"}`.
fn is_rendering(line: &[u8], canonical: &[u8], hash: &str) -> bool {
    let head = &canonical[..canonical.len() - 1];
    let Some(rest) = line.strip_prefix(head) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(b",\"hash\":\"") else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(hash.as_bytes()) else {
        return false;
    };
    // `hash` was parsed from this line, so it needs no escaping iff it is plain hex.
    rest == b"\"}" && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Walks the chain of the log at `path`: its segments (`<path>.NNNNNN`, in order), then the
/// file itself, carrying the chain across, and reports the first problem. Reads line by line
/// (memory does not grow with the log). No file at all is [`Error::NotFound`]; an empty file
/// is an intact chain of no records.
pub fn verify(path: &Path) -> Result<VerifyReport> {
    let files = super::segments::open_all(path)?;
    let mut w = Walker::new();
    for f in files {
        let name = f.name();
        walk_file(&mut w, name, f.number, f.file).map_err(|e| Error::io("read", &f.path, e))?;
    }
    Ok(w.finish())
}

/// [`verify`], walking every file in one thread (tests compare it with the parallel walk).
#[cfg(test)]
pub(crate) fn verify_sequential(path: &Path) -> Result<VerifyReport> {
    FORCE_SEQUENTIAL.with(|f| f.set(true));
    let r = verify(path);
    FORCE_SEQUENTIAL.with(|f| f.set(false));
    r
}

/// [`verify`] on the bytes of one log file.
pub fn verify_bytes(bytes: &[u8]) -> VerifyReport {
    let mut w = Walker::new();
    // Reading from memory cannot fail.
    let mut lines = Lines::new(bytes, 0);
    let _ = w.file(String::new(), None, &mut || sequential_next(&mut lines));
    w.finish()
}

fn short(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

//! Reading records back and filtering them.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;
use uuid::Uuid;

use super::canonical::parse_line;
use super::lines::{At, Line, Lines, RevLines, quick_seq_ts};
use super::{Record, Stage, segments};
use crate::error::{Error, Result};
use crate::fsutil::Access;

/// The records of a log, and how many lines were skipped because they are not records.
/// Reading does not verify the chain: that is [`super::verify`]'s job.
#[derive(Debug, Clone, Default)]
pub struct ReadOutcome {
    pub records: Vec<Record>,
    pub skipped_lines: u64,
}

/// Reads every parsable record of the file at `path` (the active file only, not its
/// segments), in file order. Reads line by line, but returns them all: for the recent records
/// of a log, prefer [`query`].
pub fn read_records(path: &Path) -> Result<ReadOutcome> {
    // Never through a symlink, regular files only (`fsutil`).
    let Some(o) = crate::fsutil::open(path, Access::Read)? else {
        return Err(Error::NotFound {
            what: "audit log",
            path: path.to_path_buf(),
        });
    };
    let mut out = ReadOutcome::default();
    let mut lines = Lines::new(o.file, 0);
    while let Some(l) = lines.next_line().map_err(|e| Error::io("read", path, e))? {
        match (!l.too_long).then(|| parse_line(l.body).ok()).flatten() {
            Some(r) => out.records.push(r),
            None => out.skipped_lines += 1,
        }
    }
    Ok(out)
}

/// What a [`query`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Records read (lines that are records; counted without parsing when a prefilter rules
    /// them out).
    pub records: u64,
    /// Lines read that are not records.
    pub skipped_lines: u64,
    /// Records that matched.
    pub matched: u64,
    /// Files (segments and the active file) read from.
    pub files: u64,
}

/// The files of a log in order: its segments, then the active file (when present).
fn log_files(path: &Path) -> Result<Vec<(PathBuf, std::fs::File)>> {
    Ok(segments::open_all(path)?
        .into_iter()
        .map(|f| (f.path, f.file))
        .collect())
}

/// Byte strings every matching record's canonical line contains: `"field":<JSON string>`
/// for each exact-match field of the filter.
fn needles(f: &Filter) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut add = |key: &str, v: &str| {
        let mut n = format!("\"{key}\":").into_bytes();
        n.extend_from_slice(
            serde_json::Value::String(v.to_string())
                .to_string()
                .as_bytes(),
        );
        out.push(n);
    };
    if let Some(t) = &f.team {
        add("team", t);
    }
    if let Some(a) = &f.action {
        add("action", a);
    }
    if let Some(c) = &f.caller {
        add("caller", c);
    }
    if let Some(s) = f.stage {
        add("stage", s.as_str());
    }
    if let Some(id) = f.audit_id {
        add("audit_id", &id.hyphenated().to_string());
    }
    out
}

/// What one line is, as cheaply as it can be told.
enum Seen {
    NotRecord,
    /// A record the filter rules out (possibly without parsing it).
    Other,
    Match(Box<Record>),
}

struct Matcher {
    filter: Filter,
    finders: Vec<memchr::memmem::Finder<'static>>,
}

impl Matcher {
    fn new(filter: &Filter) -> Matcher {
        Matcher {
            filter: filter.clone(),
            finders: needles(filter)
                .into_iter()
                .map(|n| memchr::memmem::Finder::new(&n).into_owned())
                .collect(),
        }
    }

    fn see(&self, l: &Line<'_>) -> Seen {
        if l.too_long {
            return Seen::NotRecord;
        }
        let body = l.body;
        // A line in the writer's shape is ruled out by a missing field value or its time
        // without being parsed. (A hand-edited line in another shape is parsed whole; one
        // in this shape but not canonical is what `verify` reports.)
        let shaped = body.starts_with(b"{\"v\":") && body.ends_with(b"\"}");
        if shaped {
            if self.finders.iter().any(|f| f.find(body).is_none()) {
                return Seen::Other;
            }
            if (self.filter.since.is_some() || self.filter.until.is_some())
                && let Some((_, ts)) = quick_seq_ts(body)
                && let Ok(t) = humantime::parse_rfc3339_weak(ts)
                && (self.filter.since.is_some_and(|s| t < s)
                    || self.filter.until.is_some_and(|u| t >= u))
            {
                return Seen::Other;
            }
        }
        match parse_line(body) {
            Ok(r) if self.filter.matches(&r) => Seen::Match(Box::new(r)),
            Ok(_) => Seen::Other,
            Err(_) => Seen::NotRecord,
        }
    }
}

/// The time of a line, cheaply when it has the writer's shape.
fn line_time(l: &Line<'_>) -> Option<SystemTime> {
    if l.too_long {
        return None;
    }
    match quick_seq_ts(l.body) {
        Some((_, ts)) => humantime::parse_rfc3339_weak(ts).ok(),
        None => parse_line(l.body)
            .ok()
            .and_then(|r| humantime::parse_rfc3339_weak(&r.ts).ok()),
    }
}

/// Streams the records of the log at `path` (its segments, then the active file) that match
/// `filter` to `each`, in log order, with memory that does not grow with the log.
///
/// With `last = Some(n)`, only the last `n` matching records, found by reading backwards
/// from the end. With `filter.since`, reading starts from the tail too: backwards to the
/// last record older than `since`, then forwards. Both rely on the log being ordered by
/// time, which the writer guarantees (it stamps records under the lock) unless the clock
/// is stepped back.
pub fn query(
    path: &Path,
    filter: &Filter,
    last: Option<usize>,
    mut each: impl FnMut(&Record) -> Result<()>,
) -> Result<QueryStats> {
    let files = log_files(path)?;
    let m = Matcher::new(filter);
    let mut st = QueryStats::default();
    let io = |p: &Path, e| Error::io("read", p, e);
    if let Some(n) = last {
        let mut got: Vec<Record> = Vec::new();
        'files: for (p, f) in files.iter().rev() {
            if got.len() >= n {
                break;
            }
            st.files += 1;
            let size = f.metadata().map_err(|e| io(p, e))?.len();
            let mut rev = RevLines::new(f, size);
            while let Some(l) = rev.prev_line().map_err(|e| io(p, e))? {
                if got.len() >= n {
                    break 'files;
                }
                if let Some(s) = filter.since
                    && line_time(&l).is_some_and(|t| t < s)
                {
                    st.records += 1;
                    break 'files;
                }
                match m.see(&l) {
                    Seen::NotRecord => st.skipped_lines += 1,
                    Seen::Other => st.records += 1,
                    Seen::Match(r) => {
                        st.records += 1;
                        got.push(*r);
                    }
                }
            }
        }
        for r in got.iter().rev() {
            st.matched += 1;
            each(r)?;
        }
        return Ok(st);
    }
    // Where to start: (file index, offset).
    let mut start = (0usize, 0u64);
    if let Some(s) = filter.since {
        'back: for (i, (p, f)) in files.iter().enumerate().rev() {
            let size = f.metadata().map_err(|e| io(p, e))?.len();
            let mut rev = RevLines::new(f, size);
            while let Some(l) = rev.prev_line().map_err(|e| io(p, e))? {
                if line_time(&l).is_some_and(|t| t < s) {
                    start = (i, l.offset + l.len + u64::from(l.terminated));
                    break 'back;
                }
            }
        }
    }
    for (i, (p, f)) in files.iter().enumerate().skip(start.0) {
        let off = if i == start.0 { start.1 } else { 0 };
        st.files += 1;
        let mut lines = Lines::new(At::new(f, off), off);
        while let Some(l) = lines.next_line().map_err(|e| io(p, e))? {
            match m.see(&l) {
                Seen::NotRecord => st.skipped_lines += 1,
                Seen::Other => st.records += 1,
                Seen::Match(r) => {
                    st.records += 1;
                    st.matched += 1;
                    each(&r)?;
                }
            }
        }
    }
    Ok(st)
}

/// A query: every set field must match (`None` matches anything).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Records at or after this time.
    pub since: Option<SystemTime>,
    /// Records before this time.
    pub until: Option<SystemTime>,
    pub team: Option<String>,
    pub action: Option<String>,
    pub op: Option<String>,
    /// Matches a string target equal to it, or an object target with a top-level string or
    /// number field equal to it (so `%3` matches `{"pane_id": "%3", ...}`).
    pub target: Option<String>,
    pub caller: Option<String>,
    pub stage: Option<Stage>,
    pub audit_id: Option<Uuid>,
}

fn target_matches(t: &Value, want: &str) -> bool {
    match t {
        Value::String(s) => s == want,
        Value::Object(m) => m.values().any(|v| match v {
            Value::String(s) => s == want,
            Value::Number(n) => n.to_string() == want,
            _ => false,
        }),
        other => other.to_string().as_str() == want,
    }
}

impl Filter {
    /// Whether `r` passes the filter. A record whose `ts` does not parse fails a time bound.
    pub fn matches(&self, r: &Record) -> bool {
        if self.since.is_some() || self.until.is_some() {
            let Ok(ts) = humantime::parse_rfc3339_weak(&r.ts) else {
                return false;
            };
            if self.since.is_some_and(|s| ts < s) || self.until.is_some_and(|u| ts >= u) {
                return false;
            }
        }
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.action, &r.action)
            && self
                .op
                .as_deref()
                .is_none_or(|o| r.op.as_deref() == Some(o))
            && eq(&self.caller, &r.caller)
            && self
                .team
                .as_deref()
                .is_none_or(|t| r.team.as_deref() == Some(t))
            && self.stage.is_none_or(|s| s == r.stage)
            && self.audit_id.is_none_or(|id| id == r.audit_id)
            && self
                .target
                .as_deref()
                .is_none_or(|t| r.targets.iter().any(|v| target_matches(v, t)))
    }
}

//! Reading records back and filtering them.

use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;
use uuid::Uuid;

use super::canonical::parse_line;
use super::{Record, Stage};
use crate::error::{Error, Result};

/// The records of a log, and how many lines were skipped because they are not records.
/// Reading does not verify the chain: that is [`super::verify`]'s job.
#[derive(Debug, Clone, Default)]
pub struct ReadOutcome {
    pub records: Vec<Record>,
    pub skipped_lines: u64,
}

/// Reads every parsable record of the log at `path`, in file order.
pub fn read_records(path: &Path) -> Result<ReadOutcome> {
    // Never through a symlink, regular files only, bounded (`fsutil`).
    let Some(bytes) = crate::fsutil::read(path, crate::fsutil::limits::AUDIT)? else {
        return Err(Error::NotFound {
            what: "audit log",
            path: path.to_path_buf(),
        });
    };
    let mut out = ReadOutcome::default();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        match parse_line(line) {
            Ok(r) => out.records.push(r),
            Err(_) => out.skipped_lines += 1,
        }
        rest = next;
    }
    Ok(out)
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

//! `team-audit query`: filtered records, as a compact table or JSON lines.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **`team-audit query --follow`** polls the log's size every 250 ms and prints new matching
//!   records; it writes no summary (the stream has no end). `--limit N` shows the last N matches.

use std::time::{Duration, SystemTime};

use clap::Args;
use serde_json::{Value, json};
use team_core::ExitClass;
use team_core::audit::{self, Filter, Record, Stage};
use uuid::Uuid;

use crate::cli::Global;
use crate::error::AppError;
use crate::logpath;
use crate::out::{Out, clean};

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// Records at or after T: RFC 3339 (2025-01-31T12:00:00Z) or a duration ago (90m, 2h, 1day)
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Records before T (same forms as --since)
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    #[arg(long)]
    pub team: Option<String>,
    /// kill-pane, kill-session, signal, operation, ... (tmux verbs for tmux actions)
    #[arg(long)]
    pub action: Option<String>,
    /// A target string, or a value of a target object's field (e.g. a pane id %3)
    #[arg(long)]
    pub target: Option<String>,
    #[arg(long)]
    pub caller: Option<String>,
    /// intent, complete, failed or segment
    #[arg(long)]
    pub stage: Option<String>,
    #[arg(long, value_name = "ID")]
    pub audit_id: Option<Uuid>,
    /// The operation (scale_down, shutdown, reconcile, rollback, reap)
    #[arg(long)]
    pub op: Option<String>,
    /// Show only the last N matching records (read from the end of the log, so this is fast
    /// on a log of any size)
    #[arg(long, visible_alias = "last", value_name = "N")]
    pub limit: Option<usize>,
    /// Keep running and show matching records as they are appended (no summary line)
    #[arg(long, short = 'f')]
    pub follow: bool,
}

pub(crate) fn time_arg(flag: &str, s: &str) -> Result<SystemTime, AppError> {
    if let Ok(t) = humantime::parse_rfc3339_weak(s) {
        return Ok(t);
    }
    let d: Duration = humantime::parse_duration(s).map_err(|_| {
        AppError::usage(format!(
            "{flag} {s:?} is neither an RFC 3339 time nor a duration"
        ))
    })?;
    SystemTime::now()
        .checked_sub(d)
        .ok_or_else(|| AppError::usage(format!("{flag} {s:?} reaches before the epoch")))
}

/// A target as a person reads it: `%3 (worker-2)` for a pane, `pid 812` for a process, the
/// string itself for a string; other objects as compact JSON.
fn target_text(t: &Value) -> String {
    let field = |m: &serde_json::Map<String, Value>, k: &str| {
        m.get(k).and_then(|v| match v {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    match t {
        Value::String(s) => s.clone(),
        Value::Object(m) => {
            let who = field(m, "worker")
                .or_else(|| field(m, "@team_worker"))
                .or_else(|| field(m, "role"));
            let what = if let Some(p) = field(m, "pane_id") {
                p
            } else if let Some(p) = field(m, "pid") {
                format!("pid {p}")
            } else if let Some(p) = field(m, "all_except") {
                format!("all but {p}")
            } else if let (Some(o), Some(b)) = (field(m, "damage_offset"), field(m, "damage_bytes"))
            {
                format!("bytes {o}+{b}")
            } else {
                return t.to_string();
            };
            match who {
                Some(w) => format!("{what} ({w})"),
                None => what,
            }
        }
        other => other.to_string(),
    }
}

fn row(r: &Record) -> String {
    let targets: Vec<String> = r.targets.iter().map(target_text).collect();
    let targets = if targets.is_empty() {
        "-".to_string()
    } else {
        targets.join(", ")
    };
    let action = match &r.op {
        Some(op) => format!("{}/{op}", r.action),
        None => r.action.clone(),
    };
    format!(
        "{:<24} {:>6} {:<16} {:<20} {:<26} {:<8} {:<22} {}",
        clean(&r.ts),
        r.seq,
        clean(r.team.as_deref().unwrap_or("-")),
        clean(&r.caller),
        clean(&action),
        r.stage.as_str(),
        clean(&targets),
        clean(r.outcome.as_deref().unwrap_or("-"))
    )
}

fn header() -> String {
    format!(
        "{:<24} {:>6} {:<16} {:<20} {:<26} {:<8} {:<22} OUTCOME",
        "TIME", "SEQ", "TEAM", "CALLER", "ACTION/OP", "STAGE", "TARGETS"
    )
}

fn print(out: &mut Out, json_mode: bool, r: &Record) -> Result<(), AppError> {
    if json_mode {
        let mut v = serde_json::to_value(r)
            .map_err(|e| AppError::fail(ExitClass::Software, e.to_string()))?;
        if let Value::Object(m) = &mut v {
            m.insert("type".into(), json!("record"));
        }
        out.json(&v)
    } else {
        out.line(&row(r))
    }
}

pub fn run(g: &Global, a: QueryArgs) -> Result<i32, AppError> {
    if a.limit == Some(0) {
        return Err(AppError::usage("--limit must be at least 1"));
    }
    let filter = Filter {
        since: a
            .since
            .as_deref()
            .map(|s| time_arg("--since", s))
            .transpose()?,
        until: a
            .until
            .as_deref()
            .map(|s| time_arg("--until", s))
            .transpose()?,
        team: a.team,
        action: a.action,
        op: a.op,
        target: a.target,
        caller: a.caller,
        stage: a.stage.as_deref().map(str::parse::<Stage>).transpose()?,
        audit_id: a.audit_id,
    };
    let path = logpath::resolve(g, None, false)?;
    let mut out = Out::new(g.common.json);
    // The header goes out with the first record (or once the log is read): a log that is not
    // there is an error alone.
    let mut headed = false;
    let json_mode = g.common.json;
    // Streams with bounded memory; `--limit N` reads from the end of the log.
    let mut failed: Option<AppError> = None;
    let mut shown = 0u64;
    let mut last_seq: Option<u64> = None;
    let st = audit::query(&path, &filter, a.limit, |r| {
        shown += 1;
        last_seq = Some(last_seq.map_or(r.seq, |l| l.max(r.seq)));
        // Stop reading at the first output error (a closed pipe, say).
        let was_headed = std::mem::replace(&mut headed, true);
        (if was_headed {
            Ok(())
        } else {
            out.line(&header())
        })
        .and_then(|()| print(&mut out, json_mode, r))
        .map_err(|e| {
            failed = Some(e);
            team_core::Error::Internal("output failed".into())
        })
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let st = st?;
    if !headed {
        out.line(&header())?;
    }
    out.flush()?;
    if st.skipped_lines > 0 {
        crate::error::warn(
            false,
            &format!(
                "{} lines of {} are not records; run `team-audit verify`",
                st.skipped_lines,
                path.display()
            ),
        );
    }
    if a.follow {
        // Poll for records appended after the last one seen (by seq); ends when stdout closes
        // (a closed pipe is a quiet exit) or the process is interrupted. No summary line.
        let all = Filter::default();
        let mut last = None;
        audit::query(&path, &all, Some(1), |r| {
            last = Some(r.seq);
            Ok(())
        })?;
        let mut size = std::fs::metadata(&path).map(|m| m.len()).ok();
        loop {
            std::thread::sleep(FOLLOW_POLL);
            let now = std::fs::metadata(&path).map(|m| m.len()).ok();
            if now == size {
                continue;
            }
            size = now;
            let after = last;
            let mut failed: Option<AppError> = None;
            audit::query(&path, &all, None, |r| {
                if after.is_some_and(|l| r.seq <= l) {
                    return Ok(());
                }
                last = Some(r.seq);
                if filter.matches(r) {
                    print(&mut out, json_mode, r).map_err(|e| {
                        failed = Some(e);
                        team_core::Error::Internal("output failed".into())
                    })?;
                }
                Ok(())
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            out.flush()?;
        }
    }
    out.record(&json!({
        "type": "summary",
        "matched": st.matched,
        "shown": shown,
        "records": st.records,
        "skipped_lines": st.skipped_lines,
    }))?;
    out.flush()?;
    Ok(0)
}

/// How often `--follow` looks at the log's size.
const FOLLOW_POLL: Duration = Duration::from_millis(250);

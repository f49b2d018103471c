//! `team-audit query`: filtered records, as a compact table or JSON lines.

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
    /// Only the last N matching records (read from the end of the log)
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// JSON lines: each record with "type":"record", then {"type":"summary",...}
    #[arg(long)]
    pub json: bool,
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

fn target_text(t: &Value) -> String {
    match t {
        Value::String(s) => s.clone(),
        Value::Object(m) => match m.get("pane_id").and_then(Value::as_str) {
            Some(p) => p.to_string(),
            None => t.to_string(),
        },
        other => other.to_string(),
    }
}

fn row(r: &Record) -> String {
    let targets: Vec<String> = r.targets.iter().map(target_text).collect();
    let targets = if targets.is_empty() {
        "-".to_string()
    } else {
        targets.join(",")
    };
    format!(
        "{:<24} {:>6} {:<20} {:<16} {:<20} {:<8} {}",
        clean(&r.ts),
        r.seq,
        clean(&r.caller),
        clean(&r.action),
        clean(&targets),
        r.stage.as_str(),
        clean(r.outcome.as_deref().unwrap_or("-"))
    )
}

pub fn run(g: &Global, a: QueryArgs) -> Result<i32, AppError> {
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
        target: a.target,
        caller: a.caller,
        stage: a.stage.as_deref().map(str::parse::<Stage>).transpose()?,
        audit_id: a.audit_id,
    };
    let path = logpath::resolve(g, None, false)?;
    let mut out = Out::new();
    if !a.json {
        out.line(&format!(
            "{:<24} {:>6} {:<20} {:<16} {:<20} {:<8} OUTCOME",
            "TIME", "SEQ", "CALLER", "ACTION", "TARGETS", "STAGE"
        ))?;
    }
    let mut failed: Option<AppError> = None;
    let st = audit::query(&path, &filter, a.last, |r| {
        let res = if a.json {
            serde_json::to_value(r)
                .map_err(|e| AppError::fail(ExitClass::Software, e.to_string()))
                .and_then(|mut v| {
                    if let Value::Object(m) = &mut v {
                        m.insert("type".into(), json!("record"));
                    }
                    out.json(&v)
                })
        } else {
            out.line(&row(r))
        };
        // Stop reading at the first output error (a closed pipe, say).
        res.map_err(|e| {
            failed = Some(e);
            team_core::Error::Internal("output failed".into())
        })
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let st = st?;
    if a.json {
        out.json(&json!({
            "type": "summary",
            "matched": st.matched,
            "records": st.records,
            "skipped_lines": st.skipped_lines,
        }))?;
    }
    out.flush()?;
    if st.skipped_lines > 0 {
        eprintln!(
            "team-audit: warning: {} lines of {} are not records; run `team-audit verify`",
            st.skipped_lines,
            path.display()
        );
    }
    Ok(0)
}

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
}

fn time_arg(flag: &str, s: &str) -> Result<SystemTime, AppError> {
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
    let read = audit::read_records(&path)?;
    let mut out = Out::new(g.json);
    let mut matched = 0u64;
    if !g.json {
        out.line(&format!(
            "{:<24} {:>6} {:<20} {:<16} {:<20} {:<8} OUTCOME",
            "TIME", "SEQ", "CALLER", "ACTION", "TARGETS", "STAGE"
        ))?;
    }
    for r in read.records.iter().filter(|r| filter.matches(r)) {
        matched += 1;
        if g.json {
            let mut v = serde_json::to_value(r)
                .map_err(|e| AppError::fail(ExitClass::Software, e.to_string()))?;
            if let Value::Object(m) = &mut v {
                m.insert("type".into(), json!("record"));
            }
            out.json(&v)?;
        } else {
            out.line(&row(r))?;
        }
    }
    if g.json {
        out.json(&json!({
            "type": "summary",
            "matched": matched,
            "records": read.records.len(),
            "skipped_lines": read.skipped_lines,
        }))?;
    }
    out.flush()?;
    if read.skipped_lines > 0 {
        eprintln!(
            "team-audit: warning: {} lines of {} are not records; run `team-audit verify`",
            read.skipped_lines,
            path.display()
        );
    }
    Ok(0)
}

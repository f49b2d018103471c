//! `team-audit record`: append one record, exit 0 only once it is durable.

use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use team_core::audit::{Entry, Stage};
use uuid::Uuid;

use crate::cli::Global;
use crate::error::AppError;
use crate::logpath;
use crate::out::Out;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StageArg {
    Intent,
    Complete,
    Failed,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Who acts (a tool name, `hook:<session>`, a user)
    #[arg(long)]
    pub caller: String,
    /// What is done: a tmux verb (kill-pane, kill-session, ...), or signal for a process
    #[arg(long)]
    pub action: String,
    /// The operation it is part of (scale_down, shutdown, reconcile, rollback, reap, ...)
    #[arg(long)]
    pub op: Option<String>,
    /// A target: a string such as %3, or a JSON object such as a pane incarnation
    #[arg(long = "target", value_name = "T", num_args = 1..)]
    pub targets: Vec<String>,
    /// The record's stage; complete and failed need --audit-id
    #[arg(long, value_enum, default_value = "intent")]
    pub stage: StageArg,
    /// The audit_id of the intent this record belongs to
    #[arg(long, value_name = "ID")]
    pub audit_id: Option<Uuid>,
    #[arg(long)]
    pub reason: Option<String>,
    #[arg(long)]
    pub team: Option<String>,
    /// The tmux server socket
    #[arg(long)]
    pub endpoint: Option<String>,
    #[arg(long)]
    pub generation: Option<u64>,
    /// Evidence of ownership: JSON, or a string
    #[arg(long, value_name = "E")]
    pub owner_evidence: Option<String>,
    #[arg(long)]
    pub outcome: Option<String>,
    /// The command being audited (after `--`)
    #[arg(last = true, value_name = "ARGV")]
    pub argv: Vec<String>,
}

fn target(s: &str) -> Result<Value, AppError> {
    if s.trim_start().starts_with('{') {
        let v: Value = serde_json::from_str(s)
            .map_err(|e| AppError::usage(format!("--target {s:?} is not a JSON object: {e}")))?;
        Ok(v)
    } else {
        Ok(Value::String(s.to_string()))
    }
}

pub fn run(g: &Global, a: RecordArgs) -> Result<i32, AppError> {
    let stage = match a.stage {
        StageArg::Intent => Stage::Intent,
        StageArg::Complete => Stage::Complete,
        StageArg::Failed => Stage::Failed,
    };
    if stage != Stage::Intent && a.audit_id.is_none() {
        return Err(AppError::usage(format!(
            "--stage {} needs --audit-id of its intent",
            stage.as_str()
        ))
        .with_hint("the intent's audit_id is what `team-audit record` printed for it"));
    }
    let workspace = match &g.workspace {
        Some(_) => Some(logpath::workspace(g, None)?.display().to_string()),
        None => None,
    };
    let entry = Entry {
        caller: a.caller,
        action: a.action,
        op: a.op,
        argv: a.argv,
        endpoint: a.endpoint,
        targets: a
            .targets
            .iter()
            .map(|t| target(t))
            .collect::<Result<_, _>>()?,
        workspace,
        team: a.team,
        generation: a.generation,
        owner_evidence: a
            .owner_evidence
            .map(|e| serde_json::from_str(&e).unwrap_or(Value::String(e))),
        reason: a.reason,
        outcome: a.outcome,
    };
    let log = logpath::log_at(g, logpath::resolve(g, None, true)?);
    let r = log.append(stage, a.audit_id, &entry)?;
    let mut out = Out::new(g.common.json);
    if g.common.json {
        out.json(&json!({"type": "record", "audit_id": r.audit_id, "seq": r.seq, "stage": r.stage, "hash": r.hash}))?;
        out.json(&json!({"type": "summary", "ok": true, "records": 1}))?;
    } else {
        out.line(&r.audit_id.to_string())?;
    }
    out.flush()?;
    Ok(0)
}

//! `team-scale task claim|done|fail <id>`: a worker's side of the task lifecycle.

use serde_json::json;
use team_core::ops::tasks::{TaskAction, update};

use super::worker_status::identity;
use crate::cli::TaskArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

pub fn run(ctx: &Ctx, a: TaskArgs) -> CliResult<i32> {
    let (team, worker, incarnation) = identity(&a.who)?;
    let action = match a.action.as_str() {
        "claim" => TaskAction::Claim,
        "done" => TaskAction::Done,
        _ => TaskAction::Fail,
    };
    let task = update(&ctx.store(&team), &worker, incarnation, a.id, action)?;
    let status = serde_json::to_value(task.status).unwrap_or_default();
    let mut out = Out::new(ctx.json);
    out.record(&json!({
        "type": "task", "id": task.id, "subject": task.subject, "status": status,
        "owner": task.owner, "version": task.version,
    }))?;
    out.record(&json!({"type": "summary", "team": team, "action": "task", "ok": true}))?;
    out.line(&format!(
        "task {}: {} ({})",
        task.id,
        status.as_str().unwrap_or(""),
        worker
    ))?;
    out.flush()?;
    Ok(0)
}

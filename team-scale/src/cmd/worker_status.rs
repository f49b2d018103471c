//! `team-scale worker-status`: a worker reports idle, busy or done.

use serde_json::json;
use team_core::model::{Lifecycle, SCHEMA_VERSION, WorkState, WorkerStatus};
use team_core::paths::{TeamName, WorkerName};
use team_core::{Error, fsutil};
use uuid::Uuid;

use crate::cli::WorkerStatusArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

pub fn run(ctx: &Ctx, a: WorkerStatusArgs) -> CliResult<i32> {
    let team = TeamName::new(a.team.as_deref().ok_or_else(|| {
        Error::Usage("no team: give it, or run inside a worker pane (TEAM_NAME)".into())
    })?)?;
    let worker = WorkerName::new(a.worker.as_deref().ok_or_else(|| {
        Error::Usage("no worker: give --worker, or run inside a worker pane (TEAM_WORKER)".into())
    })?)?;
    let incarnation = match a.incarnation.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(
            Uuid::parse_str(s).map_err(|e| Error::Usage(format!("--incarnation {s:?}: {e}")))?,
        ),
        None => None,
    };
    let state = match a.state.as_str() {
        "idle" => WorkState::Idle,
        "busy" => WorkState::Busy,
        "done" => WorkState::Done,
        s => {
            return Err(Error::Usage(format!("--state {s:?}: expected idle, busy or done")).into());
        }
    };
    if let Some(n) = &a.note
        && (n.len() > 500 || n.chars().any(|c| c.is_control()))
    {
        return Err(
            Error::Usage("--note: at most 500 characters, no control characters".into()).into(),
        );
    }
    let store = ctx.store(&team);
    store.transact("worker-status", |t, changes| {
        let w = t
            .worker(&worker)
            .ok_or_else(|| Error::Refused(format!("{worker} is not a member of team {team}")))?;
        if !matches!(w.lifecycle, Lifecycle::Active | Lifecycle::Pending) {
            return Err(Error::Refused(format!(
                "{worker} is being removed; its report is refused"
            )));
        }
        if let Some(i) = incarnation
            && i != w.incarnation
        {
            return Err(Error::Refused(format!(
                "incarnation {i} is not {worker}'s current one: a late report of a removed worker is refused"
            )));
        }
        changes.put_status(&WorkerStatus {
            schema_version: SCHEMA_VERSION,
            worker: worker.clone(),
            incarnation: w.incarnation,
            state,
            note: a.note.clone(),
            updated_at: fsutil::now_rfc3339(),
            before_drain: None,
        });
        Ok(())
    })?;
    let mut out = Out::new(ctx.json);
    out.record(&json!({"type": "summary", "team": team, "action": "worker-status", "ok": true, "worker": worker, "state": a.state}))?;
    out.line(&format!("{worker}: {}", a.state))?;
    out.flush()?;
    Ok(0)
}

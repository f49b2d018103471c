//! `team-scale worker-status`: a worker reports idle, busy or done.

use serde_json::json;
use team_core::model::{SCHEMA_VERSION, WorkState, WorkerStatus};
use team_core::paths::{TeamName, WorkerName};
use team_core::{Error, fsutil};
use uuid::Uuid;

use crate::cli::{WorkerArgs, WorkerStatusArgs};
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

/// The reporting worker: from the flags, or from `TEAM_NAME`/`TEAM_WORKER`/`TEAM_INCARNATION`
/// in a worker pane (clap reads them).
pub fn identity(w: &WorkerArgs) -> Result<(TeamName, WorkerName, Option<Uuid>), Error> {
    let team = TeamName::new(w.team.as_deref().ok_or_else(|| {
        Error::Usage("no team: give it, or run inside a worker pane (TEAM_NAME)".into())
    })?)?;
    let worker = WorkerName::new(w.worker.as_deref().ok_or_else(|| {
        Error::Usage("no worker: give --worker, or run inside a worker pane (TEAM_WORKER)".into())
    })?)?;
    let incarnation = match w.incarnation.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(
            Uuid::parse_str(s).map_err(|e| Error::Usage(format!("--incarnation {s:?}: {e}")))?,
        ),
        None => None,
    };
    Ok((team, worker, incarnation))
}

pub fn run(ctx: &Ctx, a: WorkerStatusArgs) -> CliResult<i32> {
    let (team, worker, incarnation) = identity(&a.who)?;
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
        team_core::ops::tasks::check_reporter(t, &worker, incarnation)?;
        let w = t.worker(&worker).expect("checked");
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

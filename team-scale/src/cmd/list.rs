//! `team-scale list`: the teams of a workspace.

use serde_json::json;
use team_core::model::{Lifecycle, TeamState};
use team_core::store::list_teams;

use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

pub fn run(ctx: &Ctx) -> CliResult<i32> {
    let mut out = Out::new(ctx.json);
    let mut unreadable = 0;
    let teams = list_teams(&ctx.root)?;
    for name in &teams {
        match ctx.store(name).snapshot() {
            Ok(snap) => {
                let t = snap.team;
                let count = |l| t.workers.iter().filter(|w| w.lifecycle == l).count();
                let state = match t.state {
                    TeamState::Active => "active",
                    TeamState::Stopped => "stopped",
                };
                out.record(&json!({
                    "type": "team", "team": t.name, "state": state, "owner_id": t.owner_id,
                    "endpoint": t.endpoint, "session": t.session.name,
                    "workers": count(Lifecycle::Active), "pending": count(Lifecycle::Pending),
                    "removing": count(Lifecycle::Removing), "max_workers": t.settings.max_workers,
                    "generation": t.generation, "operation_in_flight": snap.in_flight,
                }))?;
                out.line(&format!(
                    "{:<20} {:<8} {} workers (max {}), {} pending, {} removing  {}",
                    t.name.as_str(),
                    state,
                    count(Lifecycle::Active),
                    t.settings.max_workers,
                    count(Lifecycle::Pending),
                    count(Lifecycle::Removing),
                    t.endpoint.display()
                ))?;
            }
            Err(e) => {
                unreadable += 1;
                out.record(&json!({"type": "team", "team": name, "state": "unreadable", "error": e.to_string()}))?;
                out.line(&format!("{:<20} unreadable: {e}", name.as_str()))?;
            }
        }
    }
    out.record(&json!({"type": "summary", "action": "list", "state_root": ctx.root.path(), "teams": teams.len(), "unreadable": unreadable}))?;
    out.flush()?;
    Ok(if unreadable > 0 {
        team_core::ExitClass::DataErr.code()
    } else {
        0
    })
}

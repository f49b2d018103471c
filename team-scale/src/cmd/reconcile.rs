//! `team-scale reconcile`: converge a team after a crash; a second run does nothing.

use serde_json::json;
use team_core::ops::reconcile;
use team_core::paths::TeamName;

use super::down::{print_settle, with_teardown};
use crate::cli::ReconcileArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

pub fn run(ctx: &Ctx, a: ReconcileArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let rep = with_teardown(
        ctx,
        &team,
        "team-scale reconcile",
        "reconcile",
        a.grace,
        reconcile::reconcile,
    )?;
    let mut out = Out::new(ctx.json);
    if rep.replayed {
        out.line("replayed a leftover journal")?;
    }
    for n in &rep.drains_restored {
        out.line(&format!("{n}: drain of an uncommitted scale-down undone"))?;
    }
    for n in &rep.abandoned {
        out.line(&format!(
            "{n}: pending reservation of an abandoned operation, removing"
        ))?;
    }
    for n in &rep.dead {
        out.line(&format!(
            "{n}: its process exited or its pane is gone, removing"
        ))?;
    }
    print_settle(&mut out, &rep.settle)?;
    let blocked = rep.settle.blocked();
    if rep.temp_files_removed > 0 {
        out.line(&format!(
            "removed {} temp file(s) of writers killed mid-write",
            rep.temp_files_removed
        ))?;
    }
    if !rep.did_something() {
        out.line(&format!("team {team}: nothing to reconcile"))?;
    }
    out.record(&json!({
        "type": "summary", "tmux_invocations": team_core::tmux::invocations(), "team": team, "action": "reconcile", "ok": !blocked,
        "changed": rep.did_something(), "replayed": rep.replayed, "temp_files_removed": rep.temp_files_removed,
        "drains_restored": rep.drains_restored, "abandoned": rep.abandoned, "dead": rep.dead,
        "remaining": rep.settle.workers.iter().filter(|w| !w.dropped).map(|w| &w.worker).collect::<Vec<_>>(),
    }))?;
    out.flush()?;
    Ok(if blocked { 3 } else { 0 })
}

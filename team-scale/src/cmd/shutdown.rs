//! `team-scale shutdown`: every worker, then the leader pane and session only if the tools
//! created them; the team is marked stopped. Idempotent.

use serde_json::json;
use team_core::ops::down;
use team_core::paths::TeamName;

use super::down::{print_settle, with_teardown};
use crate::cli::ShutdownArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

pub fn run(ctx: &Ctx, a: ShutdownArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let rep = with_teardown(
        ctx,
        &team,
        "team-scale shutdown",
        "shutdown",
        a.grace,
        down::shutdown,
    )?;
    let mut out = Out::new(ctx.json);
    print_settle(&mut out, &rep.settle)?;
    let partial = rep.settle.blocked()
        || !rep.stopped
        || rep.leader == team_core::ops::teardown::LeaderOutcome::Kept;
    if rep.already_stopped {
        out.line(&format!("team {team} is already stopped"))?;
    } else {
        let why = rep
            .leader_reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        out.line(&format!("leader pane: {}{why}", rep.leader))?;
        if let Some(team_core::tmux::socket::SocketRemoval::Kept(why)) = &rep.socket {
            out.line(&format!("private socket kept ({why})"))?;
        }
        out.line(&if rep.stopped {
            format!("team {team} stopped")
        } else {
            format!("team {team} not stopped: workers remain as removing")
        })?;
    }
    out.record(&json!({
        "type": "summary", "tmux_invocations": team_core::tmux::invocations(), "team": team, "action": "shutdown", "ok": !partial,
        "stopped": rep.stopped, "already_stopped": rep.already_stopped,
        "leader": rep.leader, "leader_reason": rep.leader_reason,
        "tasks_returned": rep.tasks_returned,
        "socket": rep.socket.as_ref().map(|s| s.word()),
    }))?;
    out.flush()?;
    Ok(if partial { 3 } else { 0 })
}

//! `team-scale peek TEAM WORKER [--lines N]`: a worker's last screen lines, from a pane
//! proven ours (`team_core::ops::peek`).

use serde_json::json;
use team_core::ops::peek::peek;
use team_core::paths::{TeamName, WorkerName};

use crate::cli::PeekArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::{Out, clean};

pub fn run(ctx: &Ctx, a: PeekArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let worker = WorkerName::new(&a.worker)?;
    let store = ctx.store(&team);
    let audit = ctx.audit();
    let env = ctx.env(&store, &audit, "team-scale peek")?;
    let p = peek(&env, &worker, usize::from(a.lines))?;
    let mut out = Out::new(ctx.json);
    for l in &p.lines {
        // Screen text is untrusted: control characters are escaped.
        out.line(&clean(l))?;
    }
    out.record(&json!({
        "type": "summary", "team": team, "action": "peek", "ok": true, "worker": worker,
        "pane_id": p.pane_id, "liveness": p.liveness, "lines": p.lines,
    }))?;
    out.flush()?;
    Ok(0)
}

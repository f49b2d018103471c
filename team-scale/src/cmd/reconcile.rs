//! `team-scale reconcile`: converge a team after a crash; a second run does nothing.

use serde_json::json;
use team_core::ops::reconcile;
use team_core::ops::teardown::Teardown;
use team_core::paths::TeamName;

use super::down::{argv, audit_log, fail, print_settle};
use crate::cli::ReconcileArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

pub fn run(ctx: &Ctx, a: ReconcileArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let store = ctx.store(&team);
    let t0 = store.load()?;
    let tmux = ctx.tmux(&t0.endpoint);
    let audit = audit_log(ctx, &a.audit);
    let td = Teardown {
        store: &store,
        tmux: &tmux,
        audit: &audit,
        caller: "team-scale reconcile".into(),
        argv: argv(),
        grace: a.grace,
        fail: &fail,
    };
    let rep = reconcile::reconcile(&td)?;
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
    print_settle(&mut out, &rep.settle)?;
    let blocked = rep.settle.blocked();
    if !rep.did_something() {
        out.line(&format!("team {team}: nothing to reconcile"))?;
    }
    out.record(&json!({
        "type": "summary", "team": team, "action": "reconcile", "ok": !blocked,
        "changed": rep.did_something(), "replayed": rep.replayed,
        "drains_restored": rep.drains_restored, "abandoned": rep.abandoned,
        "remaining": rep.settle.workers.iter().filter(|w| !w.dropped).map(|w| &w.worker).collect::<Vec<_>>(),
    }))?;
    out.flush()?;
    Ok(if blocked { 3 } else { 0 })
}

//! `team-scale reconcile` (minimal): replay a journal and tear down the `pending` reservations
//! of abandoned operations through `team_core::ops::pending::settle_pending`. The full
//! reconcile (finishing `removing` workers) extends this.

use serde_json::json;
use team_core::ops::Env;
use team_core::ops::pending::{leftovers_error, settle_pending};
use team_core::paths::TeamName;

use crate::cli::ReconcileArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

pub fn run(ctx: &Ctx, a: ReconcileArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let store = ctx.store(&team);
    let audit = ctx.audit();
    let _scale = store.lock_scale("reconcile")?;
    // Loading replays a leftover journal.
    store.load()?;
    let env = Env {
        store: &store,
        audit: &audit,
        tmux_bin: ctx.tmux_bin.clone(),
        tmux_config: ctx.tmux_config.clone(),
        caller: "team-scale reconcile".into(),
    };
    let report = settle_pending(&env, None, &[])?;
    let mut out = Out::new(ctx.json);
    for w in &report.workers {
        out.record(&json!({
            "type": "pending",
            "worker": w.worker,
            "op_id": w.op_id,
            "cleaned": w.cleaned(),
            "panes": w.panes.iter().map(|(p, r)| json!({"pane_id": p, "result": r.word(), "reason": r.reason()})).collect::<Vec<_>>(),
            "reasons": w.reasons,
            "notes": w.notes,
        }))?;
        out.line(&format!(
            "{} (op {}): {}",
            w.worker,
            w.op_id,
            if w.cleaned() {
                "torn down".to_string()
            } else {
                format!("kept as removing: {}", w.reasons.join("; "))
            }
        ))?;
        for n in &w.notes {
            out.line(&format!("  note: {n}"))?;
        }
    }
    let left = report.leftovers().count();
    out.record(&json!({
        "type": "summary", "team": team, "action": "reconcile",
        "ok": left == 0, "settled": report.workers.len(), "remaining": left,
    }))?;
    out.line(&format!(
        "team {team}: {} pending reservations settled, {left} remaining",
        report.workers.len() - left
    ))?;
    out.flush()?;
    leftovers_error("reconcile finished", &report)?;
    Ok(0)
}

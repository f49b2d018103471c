//! `team-scale forget TEAM --worker W [--yes]`: let go of a `removing` worker whose pane is no
//! longer ours (`team_core::ops::forget`); the pane and every process are left alone.

use std::io::{BufRead, IsTerminal, Write};

use serde_json::json;
use team_core::ExitClass;
use team_core::ops::forget::forget;
use team_core::paths::{TeamName, WorkerName};

use crate::cli::ForgetArgs;
use crate::ctx::Ctx;
use crate::error::{CliError, CliResult};
use crate::out::Out;

pub fn run(ctx: &Ctx, a: ForgetArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let worker = WorkerName::new(&a.worker)?;
    if !a.yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() || !std::io::stderr().is_terminal() {
            return Err(CliError::fail(
                ExitClass::Refused,
                format!("forgetting {worker} drops its record for good; nothing was changed"),
            )
            .with_hint(format!(
                "check `team-scale status {team}`, then run `team-scale forget {team} --worker {worker} --yes`"
            )));
        }
        team_cli::say!(
            "Forget {worker} of team {team}? Its record is dropped; its pane and processes are left alone and never touched again. [y/N] "
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = stdin.lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            return Err(CliError::fail(
                ExitClass::Refused,
                "not confirmed; nothing was changed",
            ));
        }
    }
    let store = ctx.store(&team);
    let audit = ctx.audit();
    let env = ctx.env(&store, &audit, "team-scale forget")?;
    let argv: Vec<String> = std::env::args().collect();
    let f = forget(&env, &worker, &argv)?;
    let mut out = Out::new(ctx.json);
    out.record(&json!({
        "type": "summary", "team": team, "action": "forget", "ok": true, "worker": worker,
        "pane_id": f.pane_id, "why": f.why, "tasks_returned": f.tasks_returned, "left": f.left,
    }))?;
    out.line(&format!(
        "forgot {worker}: its pane {} is not ours ({}); it was not touched",
        f.pane_id.as_deref().unwrap_or("-"),
        f.why
    ))?;
    if !f.tasks_returned.is_empty() {
        out.line(&format!(
            "tasks returned to pending: {}",
            f.tasks_returned
                .iter()
                .map(|t| format!("#{t}"))
                .collect::<Vec<_>>()
                .join(" ")
        ))?;
    }
    for p in &f.left {
        out.line(&format!("left in place: {}", p.display()))?;
    }
    out.flush()?;
    Ok(0)
}

//! Ctrl-C and SIGTERM during `up`, `down`, `shutdown` and `reconcile`. The first signal sets
//! `team_core::interrupt`'s flag: the operation rolls back what it has not committed, finishes
//! a step it has committed, and closes every audit intent it opened; then this prints what was
//! left and the command that finishes it, and the exit status is 130. A second signal exits at
//! once (130), leaving what a crash leaves, which `reconcile` settles.

use serde_json::json;
use signal_hook::consts::signal::{SIGINT, SIGTERM};
use team_core::Error;
use team_core::model::{Lifecycle, WorkState};
use team_core::paths::TeamName;

use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

/// Installs the handlers: the second signal ends the process (the check runs before the flag
/// is set, so it fires only when the flag already was).
pub fn install() -> Result<(), Error> {
    let f = team_core::interrupt::flag();
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, f.clone())
            .and_then(|_| signal_hook::flag::register(sig, f.clone()))
            .map_err(|e| Error::io("install a handler for", "SIGINT/SIGTERM", e))?;
    }
    Ok(())
}

/// After the command: when it was interrupted, reports its result, what was left, and exits
/// 130; otherwise returns its result unchanged.
pub fn finish(ctx: &Ctx, team: &str, res: CliResult<i32>) -> CliResult<i32> {
    if !team_core::interrupt::requested() {
        return res;
    }
    if let Err(e) = res {
        team_cli::error::report(e);
    }
    team_cli::say_line!("team-scale: interrupted");
    let Ok(name) = TeamName::new(team) else {
        return Ok(130);
    };
    let store = ctx.store(&name);
    let mut left = Vec::new();
    match store.snapshot() {
        Ok(snap) => {
            for w in &snap.team.workers {
                match w.lifecycle {
                    Lifecycle::Pending => {
                        left.push(format!("{} is pending (op {})", w.name, w.op_id))
                    }
                    Lifecycle::Removing => left.push(format!("{} is being removed", w.name)),
                    Lifecycle::Active => {
                        if store
                            .status(&w.name)
                            .ok()
                            .flatten()
                            .is_some_and(|s| s.state == WorkState::Draining)
                        {
                            left.push(format!("{} is marked draining", w.name));
                        }
                    }
                }
            }
            if snap.in_flight {
                left.push("a journal is not applied yet".into());
            }
        }
        Err(e) => left.push(format!("the team's state could not be read: {e}")),
    }
    if left.is_empty() {
        team_cli::say_line!(
            "nothing was left half-done; `team-scale status {name}` shows the team"
        );
    } else {
        team_cli::say_line!("left: {}", left.join("; "));
        team_cli::say_line!("finish it with: team-scale reconcile {name}");
    }
    let mut out = Out::new(ctx.json);
    out.record(&json!({
        "type": "summary", "team": name, "ok": false, "interrupted": true, "left": left,
        "next": if left.is_empty() { None } else { Some(format!("team-scale reconcile {name}")) },
    }))?;
    out.flush()?;
    Ok(130)
}

//! `team-scale policy`: switch scaling on or off for one team.

use serde_json::json;
use team_core::Error;
use team_core::paths::TeamName;

use crate::cli::PolicyArgs;
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::Out;

pub fn run(ctx: &Ctx, a: PolicyArgs) -> CliResult<i32> {
    let team = TeamName::new(&a.team)?;
    let store = ctx.store(&team);
    let want = match a.scaling.as_deref() {
        Some("on") => Some(true),
        Some("off") => Some(false),
        None => None,
        Some(other) => return Err(Error::Usage(format!("--scaling {other:?}: on or off")).into()),
    };
    let (t, changed) = match want {
        Some(v) => store.transact("policy", |t, _| {
            let changed = t.settings.scaling != v;
            t.settings.scaling = v;
            Ok(changed)
        })?,
        None => (store.load()?, false),
    };
    if changed {
        store.append_event(&t, "policy_changed", json!({"scaling": t.settings.scaling}))?;
    }
    let mut out = Out::new(ctx.json);
    out.record(&json!({
        "type": "summary", "team": team, "action": "policy", "ok": true,
        "scaling": t.settings.scaling, "changed": changed,
        "scaling_env_off": ctx.scaling_env_off,
    }))?;
    out.line(&format!(
        "team {team}: scaling {}{}{}",
        if t.settings.scaling { "on" } else { "off" },
        if changed { " (changed)" } else { "" },
        if ctx.scaling_env_off {
            "; note: TEAM_SCALING=0 in this environment switches it off for every team"
        } else {
            ""
        }
    ))?;
    out.flush()?;
    Ok(0)
}

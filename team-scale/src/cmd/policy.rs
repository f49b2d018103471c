//! `team-scale policy`: a team's policy: scaling on or off, what happens to detached residue.

use serde_json::json;
use team_core::Error;
use team_core::model::ResiduePolicy;
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
    let residue = match a.residue.as_deref() {
        Some("kill") => Some(ResiduePolicy::Kill),
        Some("report") => Some(ResiduePolicy::Report),
        None => None,
        Some(other) => {
            return Err(Error::Usage(format!("--residue {other:?}: kill or report")).into());
        }
    };
    let (t, changed) = if want.is_some() || residue.is_some() {
        store.transact("policy", |t, _| {
            let before = (t.settings.scaling, t.settings.residue);
            if let Some(v) = want {
                t.settings.scaling = v;
            }
            if let Some(r) = residue {
                t.settings.residue = r;
            }
            Ok(before != (t.settings.scaling, t.settings.residue))
        })?
    } else {
        (store.load()?, false)
    };
    if changed {
        store.append_event(
            &t,
            "policy_changed",
            json!({"scaling": t.settings.scaling, "residue": t.settings.residue}),
        )?;
    }
    let mut out = Out::new(ctx.json);
    out.record(&json!({
        "type": "summary", "team": team, "action": "policy", "ok": true,
        "scaling": t.settings.scaling, "residue": t.settings.residue, "changed": changed,
        "scaling_env_off": ctx.scaling_env_off,
    }))?;
    out.line(&format!(
        "team {team}: scaling {}, residue {}{}{}",
        if t.settings.scaling { "on" } else { "off" },
        t.settings.residue.word(),
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

//! `team-scale policy`: a team's policy: scaling on or off, what happens to detached residue,
//! to tasks `down` returns, and how many workers the team may have.

use serde_json::json;
use team_core::Error;
use team_core::model::{ReassignPolicy, ResiduePolicy};
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
    let reassign = match a.reassign.as_deref() {
        Some("auto") => Some(ReassignPolicy::Auto),
        Some("manual") => Some(ReassignPolicy::Manual),
        None => None,
        Some(other) => {
            return Err(Error::Usage(format!("--reassign {other:?}: auto or manual")).into());
        }
    };
    let max = a.max_workers;
    let (t, changed) = if want.is_some() || residue.is_some() || reassign.is_some() || max.is_some()
    {
        store.transact("policy", |t, _| {
            let before = (
                t.settings.scaling,
                t.settings.residue,
                t.settings.reassign,
                t.settings.max_workers,
            );
            if let Some(m) = max {
                // Members and reservations both count: `up` reserves before it spawns.
                let members = t
                    .workers
                    .iter()
                    .filter(|w| w.lifecycle != team_core::model::Lifecycle::Removing)
                    .count();
                if (m as usize) < members {
                    return Err(Error::Refused(format!(
                        "--max-workers {m} is below team {}'s {members} current members; remove workers first (`team-scale down`)",
                        t.name
                    )));
                }
                t.settings.max_workers = m;
            }
            if let Some(r) = reassign {
                t.settings.reassign = r;
            }
            if let Some(v) = want {
                t.settings.scaling = v;
            }
            if let Some(r) = residue {
                t.settings.residue = r;
            }
            Ok(before
                != (
                    t.settings.scaling,
                    t.settings.residue,
                    t.settings.reassign,
                    t.settings.max_workers,
                ))
        })?
    } else {
        (store.load()?, false)
    };
    if changed {
        store.append_event(
            &t,
            "policy_changed",
            json!({"scaling": t.settings.scaling, "residue": t.settings.residue, "reassign": t.settings.reassign, "max_workers": t.settings.max_workers}),
        )?;
    }
    let mut out = Out::new(ctx.json);
    out.record(&json!({
        "type": "summary", "team": team, "action": "policy", "ok": true,
        "scaling": t.settings.scaling, "residue": t.settings.residue, "changed": changed,
        "reassign": t.settings.reassign, "max_workers": t.settings.max_workers,
        "scaling_env_off": ctx.scaling_env_off,
    }))?;
    out.line(&format!(
        "team {team}: scaling {}, residue {}, reassign {}, max {} workers{}{}",
        if t.settings.scaling { "on" } else { "off" },
        t.settings.residue.word(),
        t.settings.reassign.word(),
        t.settings.max_workers,
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

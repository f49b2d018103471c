//! `forget`: letting go of a `removing` worker whose pane is provably no longer ours (the user
//! respawned it, or tmux reused it): its record is dropped and its unfinished tasks go back to
//! `pending`, **without any effect on the pane or on a process**. Only a `Mismatch` proof
//! qualifies (for a reservation that never had a pane recorded: a pane that carries its tags
//! but is not provably the one its scale-up made): a pane still proven ours is removed by
//! `reconcile`, a gone one is finished by `reconcile` too, and one that cannot be read is
//! never judged. Framed by an audit intent and
//! its outcome; under the scale lock, so no teardown runs meanwhile.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **`forget` only for `Mismatch`.** A pane still proven ours, or provably gone, is finished
//!   by `reconcile`; one that cannot be read is never judged. Its files (worker dir, worktree,
//!   script) are left and named; without `--yes` and off a terminal it exits 1.

use serde_json::json;

use super::Env;
use crate::audit::Entry;
use crate::error::{Error, Result};
use crate::model::{Lifecycle, WorkerStatus};
use crate::paths::WorkerName;
use crate::proof::PaneProof;
use crate::view::{self, pane_json};

/// What `forget` did.
#[derive(Debug, Clone)]
pub struct Forgotten {
    pub worker: WorkerName,
    pub pane_id: Option<String>,
    /// Why the pane is not ours.
    pub why: String,
    pub tasks_returned: Vec<u64>,
    /// Files of the worker left in place (its directory, a worktree): nothing is removed.
    pub left: Vec<std::path::PathBuf>,
}

/// Why the `removing` worker `w`, which has no pane recorded, may be forgotten: panes carry
/// its tags on the team's server, and none is provably the one its scale-up made (see
/// `teardown::tagged_pane`). Refused when there is no such pane (`reconcile` finishes the
/// worker) or when one is proven (`reconcile` removes it).
fn unadoptable(
    team: &crate::model::Team,
    w: &crate::model::Worker,
    env: &Env,
    tmux: &crate::tmux::Tmux,
) -> Result<String> {
    let finish = || {
        Error::Refused(format!(
            "{} has no pane, and no pane carries its tags; `team-scale reconcile {}` finishes its removal",
            w.name, team.name
        ))
    };
    match tmux.list() {
        crate::tmux::Listing::Panes(snap) => {
            let exes = std::slice::from_ref(&env.supervisor);
            match super::teardown::tagged_pane(team, w, env.store.root().path(), exes, &snap) {
                Err(why) => Ok(why),
                Ok(Some(p)) => Err(Error::Refused(format!(
                    "{}'s pane {} is proven the one its scale-up made; `team-scale reconcile {}` removes it properly",
                    w.name, p.pane_id, team.name
                ))),
                Ok(None) => Err(finish()),
            }
        }
        crate::tmux::Listing::NoServer => Err(finish()),
        crate::tmux::Listing::Failed(e) => Err(Error::TmuxUnavailable {
            endpoint: team.endpoint.clone(),
            msg: format!(
                "{}'s panes cannot be listed ({e}); nothing was forgotten",
                w.name
            ),
        }),
    }
}

/// Drops `worker`'s record. See the module docs for when it is allowed.
pub fn forget(env: &Env, worker: &WorkerName, argv: &[String]) -> Result<Forgotten> {
    let _scale = env.store.lock_scale("forget")?;
    let team = env.store.load()?;
    let w = team
        .worker(worker)
        .ok_or_else(|| Error::Refused(format!("{worker} is not a member of team {}", team.name)))?
        .clone();
    if w.lifecycle != Lifecycle::Removing {
        return Err(Error::Refused(format!(
            "{worker} is {}, not removing: `forget` is only for a removing worker whose pane is no longer ours (`team-scale down {} --worker {worker}` first)",
            match w.lifecycle {
                Lifecycle::Active => "active",
                Lifecycle::Pending => "pending",
                Lifecycle::Removing => "removing",
            },
            team.name
        )));
    }
    let tmux = env.tmux(&team);
    let (pane, why) = match w.pane.clone() {
        Some(pane) => {
            let why = match view::prove_worker(&team, &w, &tmux.list()) {
                Some(PaneProof::Mismatch(why)) => why,
                Some(PaneProof::Live(_) | PaneProof::Dead(_)) => {
                    return Err(Error::Refused(format!(
                        "{worker}'s pane {} is still proven ours; `team-scale reconcile {}` removes it properly",
                        pane.pane_id, team.name
                    )));
                }
                Some(PaneProof::Gone(_)) | None => {
                    return Err(Error::Refused(format!(
                        "{worker}'s pane {} is gone; `team-scale reconcile {}` finishes its removal",
                        pane.pane_id, team.name
                    )));
                }
                Some(PaneProof::Unverifiable(why)) => {
                    return Err(Error::TmuxUnavailable {
                        endpoint: team.endpoint.clone(),
                        msg: format!(
                            "{worker}'s pane cannot be judged ({why}); nothing was forgotten"
                        ),
                    });
                }
            };
            (Some(pane), why)
        }
        // No pane was recorded (a reservation of a crashed scale-up): the equivalent of a
        // mismatch is a pane that carries its tags but is not provably the one its scale-up
        // made, which keeps `reconcile` from finishing it.
        None => (None, unadoptable(&team, &w, env, &tmux)?),
    };
    let entry = Entry {
        caller: env.caller.clone(),
        action: "operation".into(),
        op: Some("forget".into()),
        argv: argv.to_vec(),
        endpoint: Some(team.endpoint.to_string_lossy().into_owned()),
        targets: vec![json!({"worker": worker, "pane": pane.as_ref().map(pane_json)})],
        workspace: Some(team.workspace.to_string_lossy().into_owned()),
        team: Some(team.name.to_string()),
        generation: Some(team.generation),
        owner_evidence: Some(json!({"owner_id": team.owner_id, "incarnation": w.incarnation})),
        reason: Some(format!(
            "drop the record of {worker} without touching {}: {why}",
            pane.as_ref()
                .map_or("the panes carrying its tags".to_string(), |p| format!(
                    "its pane {}",
                    p.pane_id
                ))
        )),
        outcome: None,
    };
    let id = env.audit.intent(&entry)?;
    let res = env.store.transact("forget", |t, changes| {
        let cur = t
            .worker(worker)
            .ok_or_else(|| Error::Refused(format!("{worker} left team.json while forget ran")))?;
        if cur.incarnation != w.incarnation || cur.lifecycle != Lifecycle::Removing {
            return Err(Error::Refused(format!(
                "{worker} changed while forget ran; nothing was forgotten"
            )));
        }
        let tasks = env.store.tasks()?;
        let returned = super::teardown::return_tasks(&tasks, worker, changes);
        t.workers.retain(|x| &x.name != worker);
        // Its status report belongs to the record.
        if env
            .store
            .status(worker)
            .ok()
            .flatten()
            .is_some_and(|s: WorkerStatus| s.incarnation == w.incarnation)
        {
            changes.delete_status(worker);
        }
        Ok(returned)
    });
    let mut done = entry.clone();
    done.outcome = Some(match &res {
        Ok(_) => "forgotten; pane untouched".into(),
        Err(e) => format!("not forgotten: {e}"),
    });
    env.audit.outcome(id, res.is_ok(), &done)?;
    let (t, tasks_returned) = res?;
    let _ = env.store.append_event(
        &t,
        "worker_forgotten",
        json!({"worker": worker, "pane_id": pane.as_ref().map(|p| &p.pane_id), "why": why, "tasks_returned": tasks_returned}),
    );
    let mut left: Vec<std::path::PathBuf> = Vec::new();
    left.extend(w.resources.worker_dir.clone());
    left.extend(w.resources.script.clone());
    left.extend(w.resources.worktree.as_ref().map(|x| x.path.clone()));
    Ok(Forgotten {
        worker: worker.clone(),
        pane_id: pane.map(|p| p.pane_id),
        why,
        tasks_returned,
        left,
    })
}

//! Tearing down `pending` reservations: the rollback of a failed scale-up, and the leftovers of
//! an operation that crashed (found by `reconcile` and by the next `up`).
//!
//! The caller holds the team's scale lock. Every operation that creates `pending` workers holds
//! that lock for its whole run, so under it every `pending` worker belongs to an operation that
//! is either the caller's own (a rollback) or abandoned.
//!
//! For each pending worker: its panes are the recorded one, the ones the caller knows about
//! (made but not yet recorded), and those a fresh listing shows carrying the worker's op id,
//! owner, name and incarnation tags (a crash between the split and the record leaves only
//! those). They are killed with proof through [`super::kill::kill_panes`]. Only when every pane
//! of a worker is provably gone are its files removed (worktree without `--force`, a branch the
//! tools created with `git branch -d`, its startup script and worker dir) and its record
//! dropped. Whatever cannot be proven or removed stays recorded as `removing` with the reasons.

use std::path::Path;

use serde_json::json;
use uuid::Uuid;

use super::Env;
use super::kill::{KillResult, KillTarget, kill_panes};
use crate::error::{Error, Result};
use crate::model::{Lifecycle, PaneIncarnation, Team, Worker, WorktreeRecord};
use crate::paths::WorkerName;
use crate::tmux::{Listing, PaneRow};

/// What happened to one worker.
#[derive(Debug, Clone)]
pub struct SettledWorker {
    pub worker: WorkerName,
    pub op_id: Uuid,
    /// `(pane_id, result)` for every pane found for it.
    pub panes: Vec<(String, KillResult)>,
    /// Empty when everything of the worker is gone and its record was dropped; otherwise it
    /// stays recorded as `removing` with these reasons.
    pub reasons: Vec<String>,
    /// Things left in place on purpose that do not block removal (a branch with commits).
    pub notes: Vec<String>,
}

impl SettledWorker {
    /// Whether the worker is fully gone.
    pub fn cleaned(&self) -> bool {
        self.reasons.is_empty()
    }
}

/// The result of [`settle_pending`].
#[derive(Debug, Clone, Default)]
pub struct SettleReport {
    pub workers: Vec<SettledWorker>,
}

impl SettleReport {
    /// Workers that stay recorded as `removing`.
    pub fn leftovers(&self) -> impl Iterator<Item = &SettledWorker> {
        self.workers.iter().filter(|w| !w.cleaned())
    }
}

/// The tags every pane made for `w` carries.
pub fn pending_tags(team: &Team, w: &Worker) -> Vec<(&'static str, String)> {
    vec![
        ("@team_owner", team.owner_id.to_string()),
        ("@team_worker", w.name.to_string()),
        ("@team_incarnation", w.incarnation.to_string()),
        ("@team_op", w.op_id.to_string()),
    ]
}

/// Whether a listed pane carries every tag of `w`'s op (on whatever server).
fn row_tagged_for(team: &Team, w: &Worker, r: &PaneRow) -> bool {
    r.tags.pane_tagged()
        && r.tags.owner == team.owner_id.to_string()
        && r.tags.op == w.op_id.to_string()
        && r.tags.worker == w.name.as_str()
        && r.tags.incarnation == w.incarnation.to_string()
}

/// Whether a listed pane is on the team's recorded server (the leader's, where every pane of a
/// scale-up is split): a pane on another one (a restarted server that recycled the ids) is
/// never ours, whatever its tags say.
fn on_team_server(team: &Team, r: &PaneRow) -> bool {
    (r.server_pid, r.server_start) == (team.leader.pane.server_pid, team.leader.pane.server_start)
}

/// Tears down the `pending` workers of `only_op` (or of every op when `None`). `known` names
/// panes the caller made and may not have recorded yet. The caller holds the scale lock.
pub fn settle_pending(
    env: &Env,
    only_op: Option<Uuid>,
    known: &[(WorkerName, PaneIncarnation)],
) -> Result<SettleReport> {
    let team = env.store.load()?;
    let pending: Vec<Worker> = team
        .in_state(Lifecycle::Pending)
        .filter(|w| only_op.is_none_or(|op| w.op_id == op))
        .cloned()
        .collect();
    if pending.is_empty() {
        return Ok(SettleReport::default());
    }
    let tmux = env.tmux(&team);
    let listing = tmux.list();

    // 1. Find every pane of every pending worker.
    let mut found: Vec<(usize, PaneIncarnation)> = Vec::new();
    let mut reasons: Vec<Vec<String>> = vec![Vec::new(); pending.len()];
    for (i, w) in pending.iter().enumerate() {
        let mut panes: Vec<PaneIncarnation> = Vec::new();
        panes.extend(w.pane.clone());
        panes.extend(
            known
                .iter()
                .filter(|(n, _)| n == &w.name)
                .map(|(_, p)| p.clone()),
        );
        match &listing {
            Listing::Panes(s) => {
                for r in s.rows.iter().filter(|r| row_tagged_for(&team, w, r)) {
                    if on_team_server(&team, r) {
                        panes.push(r.incarnation());
                    } else {
                        reasons[i].push(format!(
                            "server_changed: pane {} carries the tags of {} but is on the server pid {} started {}, not the team's recorded pid {} started {}; never touched",
                            r.pane_id,
                            w.name,
                            r.server_pid,
                            r.server_start,
                            team.leader.pane.server_pid,
                            team.leader.pane.server_start
                        ));
                    }
                }
                if !s.malformed.is_empty() && panes.is_empty() {
                    reasons[i].push(format!(
                        "unverifiable: the listing of {} had unreadable lines, so a pane of op {} may exist unseen",
                        team.endpoint.display(),
                        w.op_id
                    ));
                }
            }
            Listing::NoServer => {}
            Listing::Failed(e) => reasons[i].push(format!(
                "unverifiable: cannot list the panes of {} ({e}), so a pane of op {} may exist unseen",
                team.endpoint.display(),
                w.op_id
            )),
        }
        let mut seen = std::collections::HashSet::new();
        for p in panes {
            if team.is_protected_pane(&p.pane_id) {
                reasons[i].push(format!(
                    "pane {} is the leader's or a protected pane; never touched",
                    p.pane_id
                ));
                continue;
            }
            if seen.insert(p.pane_id.clone()) {
                found.push((i, p));
            }
        }
    }

    // 2. Kill them with proof, in one batch.
    let targets: Vec<KillTarget> = found
        .iter()
        .map(|(i, p)| KillTarget {
            inc: p.clone(),
            tags: pending_tags(&team, &pending[*i]),
            reason: format!(
                "tear down pending worker {} of op {}",
                pending[*i].name, pending[*i].op_id
            ),
            team: Some(team.name.to_string()),
            workspace: Some(team.workspace.display().to_string()),
        })
        .collect();
    let results = kill_panes(&tmux, env.audit, &env.caller, &targets)?;
    let mut panes_of: Vec<Vec<(String, KillResult)>> = vec![Vec::new(); pending.len()];
    let mut stuck_pane: Vec<Option<PaneIncarnation>> = vec![None; pending.len()];
    for ((i, p), r) in found.iter().zip(results) {
        if !r.is_gone() {
            reasons[*i].push(format!(
                "pane {} {}: {}",
                p.pane_id,
                r.word(),
                r.reason().unwrap_or("")
            ));
            stuck_pane[*i].get_or_insert_with(|| p.clone());
        }
        panes_of[*i].push((p.pane_id.clone(), r));
    }

    // 3. Files, only for workers whose panes are all gone.
    let mut notes: Vec<Vec<String>> = vec![Vec::new(); pending.len()];
    for (i, w) in pending.iter().enumerate() {
        if reasons[i].is_empty() {
            remove_resources(env, &team, w, &mut reasons[i], &mut notes[i]);
        }
    }

    // 4. One commit: drop the clean ones, mark the rest `removing`.
    let (t, ()) = env.store.transact("settle-pending", |t, _| {
        for (i, w) in pending.iter().enumerate() {
            let Some(pos) = t.workers.iter().position(|x| {
                x.name == w.name
                    && x.lifecycle == Lifecycle::Pending
                    && x.op_id == w.op_id
                    && x.incarnation == w.incarnation
            }) else {
                continue;
            };
            if reasons[i].is_empty() {
                t.workers.remove(pos);
            } else {
                let x = &mut t.workers[pos];
                x.lifecycle = Lifecycle::Removing;
                x.removal_reasons = reasons[i].clone();
                if x.pane.is_none() {
                    x.pane = stuck_pane[i].clone();
                }
            }
        }
        Ok(())
    })?;

    let report = SettleReport {
        workers: pending
            .iter()
            .enumerate()
            .map(|(i, w)| SettledWorker {
                worker: w.name.clone(),
                op_id: w.op_id,
                panes: std::mem::take(&mut panes_of[i]),
                reasons: reasons[i].clone(),
                notes: notes[i].clone(),
            })
            .collect(),
    };
    let _ = env.store.append_event(
        &t,
        "pending_settled",
        json!({
            "workers": report.workers.iter().map(|w| json!({
                "worker": w.worker, "op_id": w.op_id, "cleaned": w.cleaned(),
                "reasons": w.reasons, "notes": w.notes,
                "panes": w.panes.iter().map(|(p, r)| json!({"pane_id": p, "result": r.word()})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        }),
    );
    Ok(report)
}

/// Removes a pending worker's worktree (never with `--force`), the branch the tools made for it
/// (`git branch -d`: only when merged), its startup script and its worker dir. Problems become
/// reasons (the worker stays `removing`) or notes (left in place, not blocking).
fn remove_resources(
    env: &Env,
    team: &Team,
    w: &Worker,
    reasons: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let root = env.store.root();
    if let Some(wt) = &w.resources.worktree
        && let Err(e) = remove_worktree(env, team, wt, notes)
    {
        reasons.push(e);
        return;
    }
    if let Some(s) = &w.resources.script {
        let base = root.team_dir(&team.name).join("runtime");
        match root.contained_in(&base, s) {
            Ok(p) => {
                if let Err(e) = crate::fsutil::remove_durable(&p) {
                    reasons.push(format!("startup script kept: {e}"));
                }
            }
            Err(e) => reasons.push(format!("startup script path refused: {e}")),
        }
    }
    if let Some(d) = &w.resources.worker_dir {
        let base = root.team_dir(&team.name).join("workers");
        match root.contained_in(&base, d) {
            Ok(p) => match std::fs::remove_dir_all(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => reasons.push(format!("worker dir {} kept: {e}", p.display())),
            },
            Err(e) => reasons.push(format!("worker dir path refused: {e}")),
        }
    }
}

fn remove_worktree(
    env: &Env,
    team: &Team,
    wt: &WorktreeRecord,
    notes: &mut Vec<String>,
) -> std::result::Result<(), String> {
    let root = env.store.root();
    let base = root.path().join("worktrees").join(team.name.as_str());
    let path = root
        .contained_in(&base, &wt.path)
        .map_err(|e| format!("worktree path refused: {e}"))?;
    let ws = &team.workspace;
    if path.exists() {
        let p = path.to_string_lossy();
        let out = super::git(ws, &["worktree", "remove", &p]).map_err(|e| e.to_string())?;
        if !out.ok {
            return Err(format!(
                "worktree {} kept (it may hold work; not forced): {}",
                path.display(),
                out.stderr
            ));
        }
    } else {
        // Never made, or already removed: forget a stale registration, if any.
        let _ = super::git(ws, &["worktree", "prune"]);
    }
    if let (Some(b), true) = (&wt.branch, wt.branch_created)
        && branch_exists(ws, b)
    {
        let out = super::git(ws, &["branch", "-d", b]).map_err(|e| e.to_string())?;
        if !out.ok {
            notes.push(format!(
                "branch {b} kept: it has commits not merged elsewhere ({})",
                out.stderr
            ));
        }
    }
    Ok(())
}

/// Whether `refs/heads/<branch>` exists in the workspace's repository.
pub(crate) fn branch_exists(ws: &Path, branch: &str) -> bool {
    super::git(
        ws,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .is_ok_and(|o| o.ok)
}

/// Turns leftovers into the partial-cleanup error of a command, or `Ok` when there are none.
pub fn leftovers_error(what: &str, report: &SettleReport) -> Result<()> {
    let left: Vec<String> = report
        .leftovers()
        .map(|w| format!("{} ({})", w.worker, w.reasons.join("; ")))
        .collect();
    if left.is_empty() {
        Ok(())
    } else {
        Err(Error::CleanupDebt(format!(
            "{what}; these workers could not be cleaned and stay recorded as removing: {}",
            left.join(", ")
        )))
    }
}

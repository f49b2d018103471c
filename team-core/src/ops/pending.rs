//! Tearing down `pending` reservations: the rollback of a failed scale-up, and the leftovers of
//! an operation that crashed (found by the next `up`; `reconcile` does the same for all).
//!
//! The caller holds the team's scale lock. Every operation that creates `pending` workers holds
//! that lock for its whole run, so under it every `pending` worker belongs to an operation that
//! is either the caller's own (a rollback) or abandoned.
//!
//! There is one teardown, [`super::teardown::settle_removing`]: this module records the panes
//! the caller made but has not recorded yet, moves the reservations to `removing` in one
//! commit, and hands them to it. A reservation whose pane was never recorded has it found there
//! by its tags (only on the team's recorded server). Whatever cannot be proven or removed stays
//! recorded as `removing` with the reasons.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use super::Env;
use super::teardown::{self, PaneOutcome, Teardown};
use crate::error::{Error, Result};
use crate::model::{Lifecycle, PaneIncarnation};
use crate::paths::WorkerName;

/// How long a rolled-back worker's processes get between SIGTERM and SIGKILL.
pub const ROLLBACK_GRACE: Duration = Duration::from_secs(2);

/// What happened to one worker.
#[derive(Debug, Clone)]
pub struct SettledWorker {
    pub worker: WorkerName,
    pub op_id: Uuid,
    /// The pane recorded for it, and what became of it.
    pub pane: Option<(String, PaneOutcome)>,
    /// Empty when everything of the worker is gone and its record was dropped; otherwise it
    /// stays recorded as `removing` with these reasons.
    pub reasons: Vec<String>,
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

/// Tears down the `pending` workers of `only_op` (or of every op when `None`). `known` names
/// panes the caller made and may not have recorded yet. The caller holds the scale lock.
pub fn settle_pending(
    env: &Env,
    only_op: Option<Uuid>,
    known: &[(WorkerName, PaneIncarnation)],
) -> Result<SettleReport> {
    let team = env.store.load()?;
    let pending: Vec<(WorkerName, Uuid)> = team
        .in_state(Lifecycle::Pending)
        .filter(|w| only_op.is_none_or(|op| w.op_id == op))
        .map(|w| (w.name.clone(), w.op_id))
        .collect();
    if pending.is_empty() {
        return Ok(SettleReport::default());
    }
    let names: Vec<WorkerName> = pending.iter().map(|(n, _)| n.clone()).collect();
    let why = match only_op {
        Some(op) => format!("rolled back: operation {op} failed"),
        None => "reservation of an abandoned operation".to_string(),
    };
    // One commit: record the panes the caller knows about, and hand the workers to teardown.
    env.store.transact("settle-pending", |t, _| {
        for w in t.workers.iter_mut() {
            if w.lifecycle != Lifecycle::Pending || !names.contains(&w.name) {
                continue;
            }
            if w.pane.is_none()
                && let Some((_, p)) = known.iter().find(|(n, _)| n == &w.name)
            {
                w.pane = Some(p.clone());
            }
            w.lifecycle = Lifecycle::Removing;
            w.removal_reasons = vec![why.clone()];
        }
        Ok(())
    })?;
    let tmux = env.tmux(&team);
    let fail = |n: &str| crate::failpoint::hit(n);
    let td = Teardown {
        store: env.store,
        tmux: &tmux,
        audit: env.audit,
        caller: env.caller.clone(),
        op: "rollback",
        argv: Vec::new(),
        grace: ROLLBACK_GRACE,
        supervisor_exes: std::slice::from_ref(&env.supervisor),
        fail: &fail,
        progress: env.progress,
        outcomes: None,
    };
    let settled = teardown::settle_removing(&td, &names)?;
    let report = SettleReport {
        workers: pending
            .iter()
            .map(|(n, op)| {
                let r = settled.workers.iter().find(|r| &r.worker == n);
                SettledWorker {
                    worker: n.clone(),
                    op_id: *op,
                    pane: r.and_then(|r| r.pane_id.clone().map(|p| (p, r.pane))),
                    reasons: match r {
                        Some(r) if r.dropped => Vec::new(),
                        Some(r) => r.blocked.clone(),
                        None => vec!["not settled: its record changed during the teardown".into()],
                    },
                }
            })
            .collect(),
    };
    if let Ok(t) = env.store.load() {
        let _ = env.store.append_event(
            &t,
            "pending_settled",
            json!({
                "workers": report.workers.iter().map(|w| json!({
                    "worker": w.worker, "op_id": w.op_id, "cleaned": w.cleaned(),
                    "reasons": w.reasons, "pane": w.pane,
                })).collect::<Vec<_>>(),
            }),
        );
    }
    Ok(report)
}

/// Whether `branch` exists in the repository at `ws`.
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

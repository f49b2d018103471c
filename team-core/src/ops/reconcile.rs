//! `reconcile`: converge a team after a crash. Replays a journal, undoes drains that never
//! committed, moves `pending` reservations of abandoned operations to `removing` (their panes
//! found by record or by incarnation tag), and finishes every `removing` worker with fresh
//! proofs. Idempotent: a second run finds nothing to do.

use crate::error::Result;
use crate::model::Lifecycle;
use crate::paths::WorkerName;
use crate::proof::PaneProof;
use crate::view;

use super::down::{commit_removing, restore_drains};
use super::teardown::{self, SettleReport, Teardown};

/// What `reconcile` did.
#[derive(Debug, Clone, Default)]
pub struct ReconcileReport {
    /// A leftover journal was replayed.
    pub replayed: bool,
    pub drains_restored: Vec<WorkerName>,
    /// `pending` reservations of abandoned operations moved to `removing`.
    pub abandoned: Vec<WorkerName>,
    /// `active` workers whose process exited (dead pane) or whose pane is provably gone,
    /// moved to `removing`.
    pub dead: Vec<WorkerName>,
    pub tasks_returned: Vec<u64>,
    pub settle: SettleReport,
    /// Temp files of writers killed mid-write, removed.
    pub temp_files_removed: usize,
}

impl ReconcileReport {
    /// Whether anything changed.
    pub fn did_something(&self) -> bool {
        self.replayed
            || self.temp_files_removed > 0
            || !self.drains_restored.is_empty()
            || !self.abandoned.is_empty()
            || !self.dead.is_empty()
            || !self.settle.workers.is_empty()
    }
}

/// `team-scale reconcile`. Takes the scale lock: every `pending` worker found is abandoned.
pub fn reconcile(t: &Teardown) -> Result<ReconcileReport> {
    let store = t.store;
    let _g = store.lock_scale("reconcile")?;
    let mut rep = ReconcileReport {
        replayed: store.root().journal(store.team()).exists(),
        ..Default::default()
    };
    let team = store.load()?;
    teardown::validate_team(store, &team)?;
    (t.fail)("reconcile.started")?;
    rep.temp_files_removed = store.sweep_temp_files()?;
    rep.drains_restored = restore_drains(store, None)?;
    rep.abandoned = team
        .in_state(Lifecycle::Pending)
        .map(|w| w.name.clone())
        .collect();
    if !rep.abandoned.is_empty() {
        rep.tasks_returned = commit_removing(store, &rep.abandoned, "reconcile")?;
    }
    // Members whose process exited or whose pane is provably gone (never on a mismatch or an
    // unverifiable listing: unknown is not absent). The teardown proves them again.
    let team = store.load()?;
    let listing = t.tmux.list();
    rep.dead = team
        .in_state(Lifecycle::Active)
        .filter(|w| {
            view::prove_worker(&team, w, &listing)
                .is_some_and(|p| matches!(p, PaneProof::Dead(_) | PaneProof::Gone(_)))
        })
        .map(|w| w.name.clone())
        .collect();
    if !rep.dead.is_empty() {
        rep.tasks_returned
            .extend(commit_removing(store, &rep.dead, "reconcile.dead")?);
    }
    (t.fail)("reconcile.committed")?;
    rep.settle = teardown::settle_removing(t, &[])?;
    if rep.did_something() {
        let team = store.load()?;
        store.append_event(
            &team,
            "recovered",
            serde_json::json!({
                "replayed": rep.replayed,
                "drains_restored": rep.drains_restored,
                "abandoned": rep.abandoned,
                "dead": rep.dead,
                "removed": rep.settle.workers.iter().filter(|w| w.dropped).map(|w| &w.worker).collect::<Vec<_>>(),
                "remaining": rep.settle.workers.iter().filter(|w| !w.dropped).map(|w| &w.worker).collect::<Vec<_>>(),
            }),
        )?;
    }
    Ok(rep)
}

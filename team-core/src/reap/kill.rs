//! Batched, proven, audited pane kills: all kills on one server in one tmux invocation.
//!
//! For each target: a guard on the incarnation the snapshot saw (pane id, pane pid, session,
//! window, server pid and start time) and on its pane tags. Intents are appended per audit
//! log in one group commit before the tmux invocation; a target whose intent could not be
//! made durable is not killed (fail closed). Outcomes (`complete` for a receipt, `failed`
//! for a refusal or an unknown) follow with the same `audit_id`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::json;
use uuid::Uuid;

use crate::audit::{AuditLog, Entry, Stage};
use crate::model::PaneIncarnation;
use crate::tmux::{Guard, PaneRow, Tmux, Txn, TxnOutcome};

/// One pane to kill.
#[derive(Debug, Clone)]
pub struct KillTarget {
    pub row: PaneRow,
    pub audit_log: PathBuf,
    /// The audit entry (caller, action, team, reason...); targets and endpoint are filled in.
    pub entry: Entry,
}

/// What happened to one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillResult {
    /// The receipt came back: the pane was killed.
    Killed { audit_id: Uuid },
    /// The guard did not hold: the pane changed since the snapshot; nothing was done.
    Refused { audit_id: Uuid },
    /// No receipt: the effect may or may not have happened.
    Unknown { audit_id: Uuid, msg: String },
    /// The intent could not be made durable: nothing was done.
    AuditFailed { msg: String },
    /// No guard could be built (a tag value that cannot be embedded): nothing was done.
    NoGuard { msg: String },
}

/// The incarnation of a listed pane.
pub fn incarnation(row: &PaneRow) -> PaneIncarnation {
    PaneIncarnation {
        server_pid: row.server_pid,
        server_start: row.server_start,
        pane_id: row.pane_id.clone(),
        pane_pid: row.pane_pid,
        session_id: row.session_id.clone(),
        window_id: row.window_id.clone(),
        process_start: None,
    }
}

/// The guard for killing `row`: its incarnation and every non-empty pane tag that can be
/// embedded (the workspace path cannot, and is covered by the owner id).
pub fn guard_for(row: &PaneRow) -> crate::Result<Guard> {
    let t = &row.tags;
    let mut tags: Vec<(&str, &str)> = vec![("@team_owner", t.owner.as_str())];
    for (k, v) in [
        ("@team_incarnation", t.incarnation.as_str()),
        ("@team_worker", t.worker.as_str()),
        ("@team_role", t.role.as_str()),
        ("@team_name", t.name.as_str()),
        ("@team_op", t.op.as_str()),
    ] {
        if !v.is_empty() {
            tags.push((k, v));
        }
    }
    Guard::pane(&incarnation(row), &tags, false)
}

fn target_json(row: &PaneRow) -> serde_json::Value {
    json!({
        "pane_id": row.pane_id, "pane_pid": row.pane_pid, "session_id": row.session_id,
        "window_id": row.window_id, "server_pid": row.server_pid,
        "server_start": row.server_start, "owner": row.tags.owner,
    })
}

/// Kills `targets` (all on `tmux`'s server) with proof, in one tmux invocation.
pub fn kill_batch(tmux: &Tmux, targets: &[KillTarget]) -> Vec<KillResult> {
    let mut results: Vec<Option<KillResult>> = vec![None; targets.len()];
    let mut entries: Vec<Entry> = Vec::with_capacity(targets.len());
    let mut txns: Vec<Option<Txn>> = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        let mut e = t.entry.clone();
        e.endpoint = Some(tmux.endpoint().display().to_string());
        e.targets = vec![target_json(&t.row)];
        if e.argv.is_empty() {
            e.argv = vec!["kill-pane".into(), "-t".into(), t.row.pane_id.clone()];
        }
        entries.push(e);
        match guard_for(&t.row) {
            Ok(g) => txns.push(Some(Txn::kill_pane(g))),
            Err(e) => {
                results[i] = Some(KillResult::NoGuard { msg: e.to_string() });
                txns.push(None);
            }
        }
    }
    // Intents, one group commit per audit log.
    let mut by_log: BTreeMap<&PathBuf, Vec<usize>> = BTreeMap::new();
    for (i, t) in targets.iter().enumerate() {
        if results[i].is_none() {
            by_log.entry(&t.audit_log).or_default().push(i);
        }
    }
    let mut ids: Vec<Option<Uuid>> = vec![None; targets.len()];
    for (path, idx) in &by_log {
        let log = AuditLog::new((*path).clone());
        let items: Vec<_> = idx
            .iter()
            .map(|&i| (Stage::Intent, None, entries[i].clone()))
            .collect();
        match log.append_batch(&items) {
            Ok(recs) => {
                for (&i, r) in idx.iter().zip(recs) {
                    ids[i] = Some(r.audit_id);
                }
            }
            Err(e) => {
                for &i in idx {
                    results[i] = Some(KillResult::AuditFailed { msg: e.to_string() });
                }
            }
        }
    }
    // The effect: only targets with a durable intent.
    let go: Vec<usize> = (0..targets.len()).filter(|&i| ids[i].is_some()).collect();
    let batch: Vec<Txn> = go
        .iter()
        .map(|&i| txns[i].clone().expect("a guard for each intent"))
        .collect();
    let outcomes = match tmux.run_txns(&batch) {
        Ok(o) => o,
        Err(e) => vec![TxnOutcome::Unknown(e.to_string()); batch.len()],
    };
    for (&i, o) in go.iter().zip(outcomes) {
        let audit_id = ids[i].expect("intent written");
        results[i] = Some(match o {
            TxnOutcome::Done(_) => KillResult::Killed { audit_id },
            TxnOutcome::Refused => KillResult::Refused { audit_id },
            TxnOutcome::Unknown(msg) => KillResult::Unknown { audit_id, msg },
        });
    }
    // Outcomes, one group commit per audit log.
    for (path, idx) in &by_log {
        let items: Vec<_> = idx
            .iter()
            .filter_map(|&i| {
                let id = ids[i]?;
                let mut e = entries[i].clone();
                let (stage, outcome) = match results[i].as_ref()? {
                    KillResult::Killed { .. } => (Stage::Complete, "killed".to_string()),
                    KillResult::Refused { .. } => (
                        Stage::Failed,
                        "refused: the pane no longer matches the snapshot".to_string(),
                    ),
                    KillResult::Unknown { msg, .. } => (Stage::Failed, format!("unknown: {msg}")),
                    _ => return None,
                };
                e.outcome = Some(outcome);
                Some((stage, Some(id), e))
            })
            .collect();
        if let Err(e) = AuditLog::new((*path).clone()).append_batch(&items) {
            tracing::warn!(log = %path.display(), error = %e, "could not record kill outcomes");
        }
    }
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or(KillResult::NoGuard {
                msg: "internal: no result".into(),
            })
        })
        .collect()
}

//! Killing panes with proof and audit, in batches.
//!
//! [`kill_panes`] is the one way the tools kill panes they recorded:
//!
//! 1. every target's guard is built first (a target whose record cannot even form a guard is
//!    refused, untouched, and gets no intent);
//! 2. one durable batch of audit intents (one `fdatasync`); if it cannot be written, nothing is
//!    killed and [`Error::Audit`] is returned;
//! 3. one tmux invocation with one guarded `kill-pane` transaction per target (the guard is the
//!    pane's full incarnation plus its expected tags, checked inside the server);
//! 4. targets whose outcome is unknown (a failing command may abort the rest of a batch) are
//!    retried one by one;
//! 5. when any guard refused, one listing tells `Gone` (the pane no longer exists) from
//!    `Refused` (something else answers to the record: never touched);
//! 6. one batch of outcome records with the same audit ids.

use serde_json::Value;
use uuid::Uuid;

use crate::audit::{AuditLog, Entry, Stage};
use crate::error::{Error, Result};
use crate::model::PaneIncarnation;
use crate::proof::{self, PaneProof};
use crate::tmux::{Guard, Tmux, Txn, TxnOutcome};

/// The audit action of a pane kill: the tmux verb, as the hook records it too.
pub const ACTION: &str = "kill-pane";

/// One pane to kill.
#[derive(Debug, Clone)]
pub struct KillTarget {
    /// The pane's recorded incarnation.
    pub inc: PaneIncarnation,
    /// The tags the pane must carry (`("@team_owner", ..)`, `("@team_incarnation", ..)`...).
    pub tags: Vec<(&'static str, String)>,
    /// Why it is killed (goes into the audit record).
    pub reason: String,
    pub team: Option<String>,
    pub workspace: Option<String>,
}

/// What happened to one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillResult {
    /// The guard held inside the server and the pane was killed (receipt seen).
    Killed,
    /// The guard did not hold and the pane no longer exists on the recorded server (killed
    /// earlier, exited, or killed by an attempt whose answer was lost).
    Gone(String),
    /// The guard did not hold and something still answers to the record (pane pid, server,
    /// window or tags differ): not proven, untouched.
    Refused(String),
    /// No answer: the pane may or may not have been killed. Never counts as gone.
    Unknown(String),
}

impl KillResult {
    /// Whether the pane provably no longer exists.
    pub fn is_gone(&self) -> bool {
        matches!(self, KillResult::Killed | KillResult::Gone(_))
    }

    /// A short word for outputs and audit outcomes.
    pub fn word(&self) -> &'static str {
        match self {
            KillResult::Killed => "killed",
            KillResult::Gone(_) => "gone",
            KillResult::Refused(_) => "refused",
            KillResult::Unknown(_) => "unknown",
        }
    }

    /// The reason, for anything but `Killed`.
    pub fn reason(&self) -> Option<&str> {
        match self {
            KillResult::Killed => None,
            KillResult::Gone(r) | KillResult::Refused(r) | KillResult::Unknown(r) => Some(r),
        }
    }
}

fn target_json(t: &KillTarget) -> Value {
    crate::view::pane_json(&t.inc)
}

fn entry(tmux: &Tmux, caller: &str, op: &str, t: &KillTarget) -> Entry {
    let evidence: serde_json::Map<String, Value> = t
        .tags
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.clone())))
        .collect();
    Entry {
        caller: caller.to_string(),
        action: ACTION.to_string(),
        op: Some(op.to_string()),
        argv: vec!["kill-pane".into(), "-t".into(), t.inc.pane_id.clone()],
        endpoint: Some(tmux.endpoint().display().to_string()),
        targets: vec![target_json(t)],
        workspace: t.workspace.clone(),
        team: t.team.clone(),
        generation: None,
        owner_evidence: Some(Value::Object(evidence)),
        reason: Some(t.reason.clone()),
        outcome: None,
    }
}

fn guard_of(t: &KillTarget) -> Result<Guard> {
    let tags: Vec<(&str, &str)> = t.tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Guard::pane(&t.inc, &tags, false)
}

fn outcome_of(o: TxnOutcome) -> KillResult {
    match o {
        TxnOutcome::Done(_) => KillResult::Killed,
        TxnOutcome::Refused => KillResult::Refused("the guard did not hold".into()),
        TxnOutcome::Unknown(e) => KillResult::Unknown(if e.is_empty() {
            "no receipt came back from tmux".into()
        } else {
            format!("no receipt came back from tmux: {e}")
        }),
    }
}

/// Kills `targets`, each only if its recorded incarnation and tags still hold inside the
/// server. Returns one result per target, in order. Fails (killing nothing) only when the
/// intents cannot be made durable ([`Error::Audit`]).
pub fn kill_panes(
    tmux: &Tmux,
    audit: &AuditLog,
    caller: &str,
    op: &str,
    targets: &[KillTarget],
) -> Result<Vec<KillResult>> {
    let mut results: Vec<Option<KillResult>> = vec![None; targets.len()];
    let mut live: Vec<(usize, Guard)> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        match guard_of(t) {
            Ok(g) => live.push((i, g)),
            Err(e) => results[i] = Some(KillResult::Refused(format!("unusable record: {e}"))),
        }
    }
    if live.is_empty() {
        return Ok(results.into_iter().map(|r| r.expect("set")).collect());
    }

    // 1. Durable intents, one fsync.
    let intents: Vec<(Stage, Option<Uuid>, Entry)> = live
        .iter()
        .map(|(i, _)| (Stage::Intent, None, entry(tmux, caller, op, &targets[*i])))
        .collect();
    let written = audit.append_batch(&intents).map_err(|e| match e {
        Error::Audit { .. } => e,
        other => Error::Audit {
            path: audit.path().to_path_buf(),
            msg: other.to_string(),
        },
    })?;
    let ids: Vec<Uuid> = written.iter().map(|r| r.audit_id).collect();

    // 2. One invocation, one transaction per target.
    let txns: Vec<Txn> = live
        .iter()
        .map(|(_, g)| Txn::kill_pane(g.clone()))
        .collect();
    let mut outs: Vec<KillResult> = match tmux.run_txns(&txns) {
        Ok(o) => o.into_iter().map(outcome_of).collect(),
        Err(e) => vec![KillResult::Unknown(e.to_string()); txns.len()],
    };

    // 3. Retry unknowns one by one: a failing transaction may have aborted the rest.
    for (k, txn) in txns.iter().enumerate() {
        if matches!(outs[k], KillResult::Unknown(_)) {
            outs[k] = match tmux.run_txns(std::slice::from_ref(txn)) {
                Ok(mut o) => outcome_of(o.pop().unwrap_or(TxnOutcome::Unknown(String::new()))),
                Err(e) => KillResult::Unknown(e.to_string()),
            };
        }
    }

    // 4. Explain refusals from one listing.
    if outs.iter().any(|o| matches!(o, KillResult::Refused(_))) {
        let listing = tmux.list();
        for (k, (i, _)) in live.iter().enumerate() {
            if matches!(outs[k], KillResult::Refused(_)) {
                let t = &targets[*i];
                let tags: Vec<(&str, &str)> =
                    t.tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
                outs[k] = match proof::prove(&listing, &t.inc, &tags, crate::view::pid_alive) {
                    PaneProof::Gone(r) => KillResult::Gone(r),
                    PaneProof::Mismatch(r) | PaneProof::Unverifiable(r) => KillResult::Refused(r),
                    // It matches now but the guard refused a moment ago: still not killed.
                    PaneProof::Live(_) | PaneProof::Dead(_) => KillResult::Refused(
                        "the guard did not hold inside the server when the kill ran".into(),
                    ),
                };
            }
        }
    }

    // 5. Outcomes, one write (recorded after the effect, not waited on: see
    // `AuditLog::append_outcomes`).
    let records: Vec<(Stage, Option<Uuid>, Entry)> = live
        .iter()
        .enumerate()
        .map(|(k, (i, _))| {
            let mut e = entry(tmux, caller, op, &targets[*i]);
            let r = &outs[k];
            e.outcome = Some(match r.reason() {
                None => r.word().to_string(),
                Some(why) => format!("{}: {why}", r.word()),
            });
            let stage = if *r == KillResult::Killed {
                Stage::Complete
            } else {
                Stage::Failed
            };
            (stage, Some(ids[k]), e)
        })
        .collect();
    if let Err(e) = audit.append_outcomes(&records) {
        tracing::warn!(error = %e, "could not record the outcomes of pane kills");
    }

    for (k, (i, _)) in live.iter().enumerate() {
        results[*i] = Some(outs[k].clone());
    }
    Ok(results.into_iter().map(|r| r.expect("set")).collect())
}

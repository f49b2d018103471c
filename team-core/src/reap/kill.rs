//! Reaping panes through the shared proven, audited batch kill ([`crate::ops::kill`]).
//!
//! All kills of one server that share an audit log go in one `kill_panes` call: one group
//! commit of intents, one tmux invocation, one group commit of outcomes. A server whose
//! orphans belong to teams with different audit logs takes one invocation per log.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::audit::AuditLog;
use crate::model::PaneIncarnation;
use crate::ops::kill::{self as ops_kill, KillResult};
use crate::tmux::{PaneRow, Tmux};

/// One pane to reap.
#[derive(Debug, Clone)]
pub struct ReapTarget {
    pub row: PaneRow,
    pub audit_log: PathBuf,
    /// The state root `audit_log` is the default log of, if it is (`AuditLog::within`).
    pub audit_root: Option<PathBuf>,
    pub reason: String,
    pub team: Option<String>,
    pub workspace: Option<String>,
}

/// The incarnation the snapshot saw.
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

/// The tags the kill's guard checks: every non-empty pane tag the verdict rested on that can
/// be embedded in a condition (the workspace path cannot; the owner id stands for it).
pub fn guard_tags(row: &PaneRow) -> Vec<(&'static str, String)> {
    let t = &row.tags;
    let mut tags = vec![("@team_owner", t.owner.clone())];
    for (k, v) in [
        ("@team_incarnation", &t.incarnation),
        ("@team_worker", &t.worker),
        ("@team_role", &t.role),
        ("@team_name", &t.name),
        ("@team_op", &t.op),
    ] {
        if !v.is_empty() {
            tags.push((k, v.clone()));
        }
    }
    // The tools make a leader only on its workspace's private server: the kill checks that
    // the server it runs on is bound at that socket (not reached through an alias of it).
    if !t.role.is_empty() {
        tags.push((
            crate::tmux::SOCKET_NAME_VAR,
            crate::paths::private_socket_name(std::path::Path::new(&t.workspace)),
        ));
    }
    tags
}

/// Kills `targets` (all on `tmux`'s server) with proof. One result per target, in order;
/// `Err` for the targets whose audit intents could not be written (nothing done to them).
pub fn reap_batch(
    tmux: &Tmux,
    caller: &str,
    targets: &[ReapTarget],
    audit_max_size: u64,
) -> Vec<Result<KillResult, String>> {
    let mut results: Vec<Option<Result<KillResult, String>>> = vec![None; targets.len()];
    let mut by_log: BTreeMap<(&PathBuf, &Option<PathBuf>), Vec<usize>> = BTreeMap::new();
    for (i, t) in targets.iter().enumerate() {
        by_log
            .entry((&t.audit_log, &t.audit_root))
            .or_default()
            .push(i);
    }
    for ((path, root), idx) in by_log {
        let batch: Vec<ops_kill::KillTarget> = idx
            .iter()
            .map(|&i| {
                let t = &targets[i];
                ops_kill::KillTarget {
                    inc: incarnation(&t.row),
                    tags: guard_tags(&t.row),
                    reason: t.reason.clone(),
                    team: t.team.clone(),
                    workspace: t.workspace.clone(),
                }
            })
            .collect();
        let mut log = AuditLog::new(path.clone()).with_max_size(audit_max_size);
        if let Some(root) = root {
            log = log.within(root);
        }
        match ops_kill::kill_panes(tmux, &log, caller, "reap", &batch) {
            Ok(rs) => {
                for (&i, r) in idx.iter().zip(rs) {
                    results[i] = Some(Ok(r));
                }
            }
            Err(e) => {
                for &i in &idx {
                    results[i] = Some(Err(e.to_string()));
                }
            }
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("internal: no result".into())))
        .collect()
}

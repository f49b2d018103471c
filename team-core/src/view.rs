//! A team as seen through one snapshot: every recorded pane with its proof.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Following a session**: when the recorded session is gone and exactly one other session on
//!   the endpoint carries `@team_session_owner = <owner id>`, `status` rebinds the team to it and
//!   logs `session_rebound`. Zero or several candidates: `session_missing`, state untouched.

use crate::model::{PaneIncarnation, Team, Worker};
use crate::proof::{self, PaneProof};
use crate::tmux::Listing;

/// Whether a pid runs (for the "no server answers" case of a proof).
pub fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The tags a worker's pane must carry.
pub fn worker_tags(team: &Team, w: &Worker) -> Vec<(&'static str, String)> {
    vec![
        ("@team_owner", team.owner_id.to_string()),
        ("@team_incarnation", w.incarnation.to_string()),
        ("@team_worker", w.name.to_string()),
    ]
}

/// The tags the leader pane must carry.
pub fn leader_tags(team: &Team) -> Vec<(&'static str, String)> {
    vec![
        ("@team_owner", team.owner_id.to_string()),
        ("@team_role", "leader".to_string()),
        // Two teams of one workspace share its private server: a record of one that copies
        // the other's owner id and leader names a pane tagged with the other's name.
        ("@team_name", team.name.to_string()),
    ]
}

fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Proves a worker's recorded pane.
pub fn prove_worker(team: &Team, w: &Worker, listing: &Listing) -> Option<PaneProof> {
    let p = w.pane.as_ref()?;
    Some(proof::prove(
        listing,
        p,
        &as_refs(&worker_tags(team, w)),
        pid_alive,
    ))
}

/// Proves the leader pane.
pub fn prove_leader(team: &Team, listing: &Listing) -> PaneProof {
    match proof::prove(
        listing,
        &team.leader.pane,
        &as_refs(&leader_tags(team)),
        pid_alive,
    ) {
        // No supervisor proves a leader (it runs your shell): its process's recorded start
        // time is what tells it from a process that got its pid after a server restart.
        PaneProof::Live(row) => {
            match crate::process::recorded_start_matches(
                row.pane_pid,
                team.leader.pane.process_start,
            ) {
                Ok(()) => PaneProof::Live(row),
                Err(why) => PaneProof::Mismatch(why),
            }
        }
        other => other,
    }
}

/// Whether the team's recorded session exists in the listing: `Some(true/false)`, or `None`
/// when the listing cannot say.
pub fn session_present(team: &Team, listing: &Listing) -> Option<bool> {
    match listing {
        Listing::Panes(s) => Some(s.rows.iter().any(|r| {
            r.session_id == team.session.id
                && (r.server_pid, r.server_start)
                    == (team.leader.pane.server_pid, team.leader.pane.server_start)
        })),
        Listing::NoServer => Some(false),
        Listing::Failed(_) => None,
    }
}

/// When the recorded session is gone but exactly one other session on the endpoint carries
/// this team's session owner tag (re-created or renamed by the tools), that session's id and
/// name.
pub fn rebound_session(team: &Team, listing: &Listing) -> Option<(String, String)> {
    let Listing::Panes(s) = listing else {
        return None;
    };
    let owner = team.owner_id.to_string();
    let mut found: Vec<(String, String)> = s
        .rows
        .iter()
        .filter(|r| r.tags.session_owner == owner && r.session_id != team.session.id)
        .map(|r| (r.session_id.clone(), r.session_name.clone()))
        .collect();
    found.sort();
    found.dedup();
    if found.len() == 1 { found.pop() } else { None }
}

/// A pane's recorded incarnation as JSON fields.
pub fn pane_json(p: &PaneIncarnation) -> serde_json::Value {
    serde_json::json!({
        "pane_id": p.pane_id,
        "pane_pid": p.pane_pid,
        "session_id": p.session_id,
        "window_id": p.window_id,
        "server_pid": p.server_pid,
        "server_start": p.server_start,
        "process_start": p.process_start,
    })
}

/// Whether `pane_id` on the server at `tmux` is proven (from one fresh listing) to be the pane
/// of an `active` worker of a live (not stopped) team in the state root `root`. The leader and
/// protected panes are not members. Unreadable state or listing is an error, never "no".
pub fn is_proven_member(
    root: &crate::paths::StateRoot,
    tmux: &crate::tmux::Tmux,
    pane_id: &str,
    wait: std::time::Duration,
) -> crate::Result<bool> {
    if !crate::model::is_tmux_id(pane_id, '%') {
        return Ok(false);
    }
    let mut listing = None;
    for name in crate::store::list_teams(root)? {
        let store = crate::store::Store::new(root.clone(), name, wait);
        let team = store.load()?;
        if team.state != crate::model::TeamState::Active || team.endpoint != tmux.endpoint() {
            continue;
        }
        let Some(w) = team.workers.iter().find(|w| {
            w.lifecycle == crate::model::Lifecycle::Active
                && w.pane.as_ref().is_some_and(|p| p.pane_id == pane_id)
        }) else {
            continue;
        };
        let listing = listing.get_or_insert_with(|| tmux.list());
        return match prove_worker(&team, w, listing) {
            Some(PaneProof::Live(_)) | Some(PaneProof::Dead(_)) => Ok(true),
            Some(PaneProof::Unverifiable(why)) => Err(crate::Error::TmuxUnavailable {
                endpoint: tmux.endpoint().to_path_buf(),
                msg: why,
            }),
            _ => Ok(false),
        };
    }
    Ok(false)
}

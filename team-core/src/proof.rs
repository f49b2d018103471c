//! Pane proofs: is the pane a record names still that very pane?
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Server identity is part of every proof.** After a server restart the recorded panes are
//!   `Mismatch` (`server_changed`), not `Gone`: the old server may still run with its socket
//!   unlinked. With no server on the socket at all, a recorded pane is `Gone` only if the recorded
//!   server pid no longer runs.

use crate::model::PaneIncarnation;
use crate::tmux::{Listing, PaneRow};

/// The answer for one recorded pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaneProof {
    /// The pane exists with the recorded incarnation and tags; its process runs.
    Live(PaneRow),
    /// As `Live`, but its process has exited (the pane remains, `remain-on-exit`).
    Dead(PaneRow),
    /// The pane is gone from the recorded server.
    Gone(String),
    /// Something answers to the record, but it is provably not the recorded pane (the server
    /// changed, the pane pid changed, a tag was removed or changed). Never touched.
    Mismatch(String),
    /// The listing could not be read or trusted. Unknown is never gone.
    Unverifiable(String),
}

impl PaneProof {
    /// The liveness word for `status`.
    pub fn liveness(&self) -> &'static str {
        match self {
            PaneProof::Live(_) => "live",
            PaneProof::Dead(_) => "dead",
            PaneProof::Gone(_) => "missing",
            PaneProof::Mismatch(_) | PaneProof::Unverifiable(_) => "unverifiable",
        }
    }
    /// Why, for anything not live.
    pub fn reason(&self) -> Option<String> {
        match self {
            PaneProof::Live(_) => None,
            PaneProof::Dead(_) => Some("pane process exited".into()),
            PaneProof::Gone(r) | PaneProof::Mismatch(r) | PaneProof::Unverifiable(r) => {
                Some(r.clone())
            }
        }
    }
    /// Whether the pane is provably ours to act on (live or dead, matching).
    pub fn is_ours(&self) -> bool {
        matches!(self, PaneProof::Live(_) | PaneProof::Dead(_))
    }
}

/// Proves `rec` against one listing. `tags` are the tag values the pane must carry
/// (`("@team_owner", ..)`, `("@team_incarnation", ..)` ...). `server_pid_alive` answers
/// whether a pid still runs (the recorded server's, when no server answers on the socket).
pub fn prove(
    listing: &Listing,
    rec: &PaneIncarnation,
    tags: &[(&str, &str)],
    server_pid_alive: impl Fn(u32) -> bool,
) -> PaneProof {
    let snap = match listing {
        Listing::Failed(e) => return PaneProof::Unverifiable(format!("listing failed: {e}")),
        Listing::NoServer => {
            return if server_pid_alive(rec.server_pid) {
                PaneProof::Unverifiable(format!(
                    "no server answers on the socket, but the recorded server pid {} still runs",
                    rec.server_pid
                ))
            } else {
                PaneProof::Gone("the tmux server is gone".into())
            };
        }
        Listing::Panes(s) => s,
    };
    if snap.is_malformed(&rec.pane_id) {
        return PaneProof::Unverifiable(format!(
            "the listing line of {} is malformed",
            rec.pane_id
        ));
    }
    if let Some((pid, start)) = snap.server()
        && (pid, start) != (rec.server_pid, rec.server_start)
    {
        return PaneProof::Mismatch(format!(
            "server_changed: the server on this socket is pid {pid} started {start}, not the recorded pid {} started {}; pane {} is not the one recorded",
            rec.server_pid, rec.server_start, rec.pane_id
        ));
    }
    let Some(row) = snap.pane(&rec.pane_id) else {
        return PaneProof::Gone(format!("pane {} is gone", rec.pane_id));
    };
    if (row.server_pid, row.server_start) != (rec.server_pid, rec.server_start) {
        return PaneProof::Mismatch(format!(
            "server_changed: pane {} is on another server",
            rec.pane_id
        ));
    }
    if row.pane_pid != rec.pane_pid {
        return PaneProof::Mismatch(format!(
            "pane_pid_changed: pane {} runs pid {}, not the recorded {}",
            rec.pane_id, row.pane_pid, rec.pane_pid
        ));
    }
    if row.session_id != rec.session_id || row.window_id != rec.window_id {
        return PaneProof::Mismatch(format!(
            "moved: pane {} is in {}/{}, not the recorded {}/{}",
            rec.pane_id, row.session_id, row.window_id, rec.session_id, rec.window_id
        ));
    }
    let have = |k: &str| -> &str { tag_value(row, k).unwrap_or("") };
    if !row.tags.pane_tagged() {
        return PaneProof::Mismatch(format!(
            "tag_missing: pane {} carries no team tags of its own",
            rec.pane_id
        ));
    }
    for (k, v) in tags {
        if have(k) != *v {
            return PaneProof::Mismatch(format!(
                "tag_mismatch: pane {} has {k}={:?}, expected {v:?}",
                rec.pane_id,
                have(k)
            ));
        }
    }
    if row.dead {
        PaneProof::Dead(row.clone())
    } else {
        PaneProof::Live(row.clone())
    }
}

/// The value a listing shows for the tag `k` on `row` (`None` for a name the listing does not
/// carry).
pub fn tag_value<'r>(row: &'r PaneRow, k: &str) -> Option<&'r str> {
    Some(match k {
        "@team_owner" => &row.tags.owner,
        "@team_worker" => &row.tags.worker,
        "@team_incarnation" => &row.tags.incarnation,
        "@team_workspace" => &row.tags.workspace,
        "@team_name" => &row.tags.name,
        "@team_role" => &row.tags.role,
        "@team_op" => &row.tags.op,
        "@team_session_owner" => &row.tags.session_owner,
        _ => return None,
    })
}
